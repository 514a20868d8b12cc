"""Device health as a state machine over time: XIDs, vanished GPUs and NVML failures.

Unlike NVIDIA's plugin, a GPU recovers: after ``recover_after_seconds`` without a new
critical XID, or at once when a GPU that fell off the bus is seen again.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from dataclasses import dataclass

from gpuconf.node.nvml.api import GpuInfo, XidEvent


@dataclass(frozen=True)
class HealthPolicy:
    ignored_xids: frozenset[int]
    recover_after_seconds: float
    """0: a critical XID is never forgiven."""


class HealthTracker:
    """Thread-safe: the event thread records, the supervisor asks. Times are monotonic."""

    def __init__(self, policy: HealthPolicy) -> None:
        self._lock = threading.Lock()
        self._policy = policy
        self._last_critical: dict[str, float] = {}
        self._present: set[str] = set()
        self._mig_parent: dict[str, str] = {}
        self._mig_by_instance: dict[tuple[str, int], str] = {}
        self._failing_sources: set[str] = set()

    def set_policy(self, policy: HealthPolicy) -> None:
        with self._lock:
            self._policy = policy

    def observe_inventory(self, gpus: Iterable[GpuInfo]) -> None:
        """The GPUs NVML sees now; one seen again after vanishing starts healthy."""
        with self._lock:
            present = {gpu.uuid for gpu in gpus}
            mig_parent: dict[str, str] = {}
            by_instance: dict[tuple[str, int], str] = {}
            for gpu in gpus:
                for mig in gpu.mig_devices:
                    mig_parent[mig.uuid] = gpu.uuid
                    by_instance[(gpu.uuid, mig.gpu_instance_id)] = mig.uuid
            for uuid in present - self._present:
                self._last_critical.pop(uuid, None)
                for mig_uuid, parent in mig_parent.items():
                    if parent == uuid:
                        self._last_critical.pop(mig_uuid, None)
            self._present = present
            self._mig_parent.update(mig_parent)
            self._mig_by_instance = by_instance

    def record(self, event: XidEvent, now: float) -> str | None:
        """Mark what the event concerns unhealthy: the UUID marked, or None for a benign XID."""
        with self._lock:
            if event.xid in self._policy.ignored_xids:
                return None
            unit = event.uuid
            if event.uuid not in self._mig_parent and event.gpu_instance_id is not None:
                unit = self._mig_by_instance.get((event.uuid, event.gpu_instance_id), event.uuid)
            self._last_critical[unit] = now
            return unit

    def set_source_failing(self, source: str, failing: bool) -> None:
        """While NVML cannot answer through ``source``, no device is known to be healthy."""
        with self._lock:
            if failing:
                self._failing_sources.add(source)
            else:
                self._failing_sources.discard(source)

    def is_healthy(self, gpu_uuid: str, mig_uuid: str | None, now: float) -> bool:
        with self._lock:
            if self._failing_sources or gpu_uuid not in self._present:
                return False
            units = (gpu_uuid,) if mig_uuid is None else (gpu_uuid, mig_uuid)
            return not any(self._in_quarantine(unit, now) for unit in units)

    def _in_quarantine(self, unit: str, now: float) -> bool:
        since = self._last_critical.get(unit)
        if since is None:
            return False
        recover_after = self._policy.recover_after_seconds
        return recover_after <= 0 or now - since < recover_after
