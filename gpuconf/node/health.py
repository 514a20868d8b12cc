"""Device health as a state machine over time: XIDs by class, vanished GPUs, NVML failures.

Application XIDs change nothing. After a workload XID the GPU (or MIG device) is withheld
until ``recover_after_seconds`` pass without another. After a reset XID the whole GPU is
withheld until NVML shows it was reset: it vanished and came back (re-enumerated), or a reset
it was waiting for (pending row remapping or page retirement) is no longer pending.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from dataclasses import dataclass

from gpuconf.gpus.xid import XidClass, classify
from gpuconf.node.nvml.api import GpuInfo, XidEvent


@dataclass(frozen=True)
class HealthPolicy:
    ignored_xids: frozenset[int]
    recover_after_seconds: float
    """0: a workload XID is never forgiven."""
    reset_xids: frozenset[int] = frozenset()


@dataclass(frozen=True)
class Verdict:
    xid_class: XidClass
    unit: str | None
    """The UUID withheld (a GPU or a MIG device); None for an application XID."""


class HealthTracker:
    """Thread-safe: the event thread records, the supervisor asks. Times are monotonic."""

    def __init__(self, policy: HealthPolicy) -> None:
        self._lock = threading.Lock()
        self._policy = policy
        self._last_fault: dict[str, float] = {}
        self._awaiting_reset: set[str] = set()
        self._reset_pending: set[str] = set()
        self._present: set[str] = set()
        self._observed = False
        self._mig_parent: dict[str, str] = {}
        self._mig_by_instance: dict[tuple[str, int], str] = {}
        self._failing_sources: set[str] = set()

    def set_policy(self, policy: HealthPolicy) -> None:
        with self._lock:
            self._policy = policy

    def observe_inventory(self, gpus: Iterable[GpuInfo]) -> None:
        """The GPUs NVML sees now; one seen again after vanishing starts healthy."""
        gpus = list(gpus)
        with self._lock:
            present = {gpu.uuid for gpu in gpus}
            mig_parent: dict[str, str] = {}
            by_instance: dict[tuple[str, int], str] = {}
            for gpu in gpus:
                for mig in gpu.mig_devices:
                    mig_parent[mig.uuid] = gpu.uuid
                    by_instance[(gpu.uuid, mig.gpu_instance_id)] = mig.uuid
            pending = {gpu.uuid for gpu in gpus if gpu.reset_pending}
            # The first look is no news: a GPU "appearing" then was there all along.
            appeared = present - self._present if self._observed else set()
            reset = appeared | (self._reset_pending - pending)
            for uuid in reset & present:
                self._forget(uuid, mig_parent)
            self._present = present
            self._observed = True
            self._reset_pending = pending
            self._mig_parent.update(mig_parent)
            self._mig_by_instance = by_instance

    def _forget(self, gpu_uuid: str, mig_parent: dict[str, str]) -> None:
        self._awaiting_reset.discard(gpu_uuid)
        self._last_fault.pop(gpu_uuid, None)
        for mig_uuid, parent in mig_parent.items():
            if parent == gpu_uuid:
                self._last_fault.pop(mig_uuid, None)

    def record(self, event: XidEvent, now: float) -> Verdict:
        """Withhold what the event concerns, as its class says."""
        with self._lock:
            policy = self._policy
            xid_class = classify(event.xid, policy.ignored_xids, policy.reset_xids)
            if xid_class is XidClass.APPLICATION:
                return Verdict(xid_class, None)
            gpu = self._mig_parent.get(event.uuid, event.uuid)
            if xid_class is XidClass.RESET:
                self._awaiting_reset.add(gpu)  # a reset is of the whole GPU
                return Verdict(xid_class, gpu)
            unit = event.uuid
            if event.uuid not in self._mig_parent and event.gpu_instance_id is not None:
                unit = self._mig_by_instance.get((event.uuid, event.gpu_instance_id), event.uuid)
            self._last_fault[unit] = now
            return Verdict(xid_class, unit)

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
            if gpu_uuid in self._awaiting_reset:
                return False
            units = (gpu_uuid,) if mig_uuid is None else (gpu_uuid, mig_uuid)
            return not any(self._in_quarantine(unit, now) for unit in units)

    def restore_awaiting_reset(self, uuids: frozenset[str]) -> None:
        """GPUs a previous run saw a reset XID on and never saw reset."""
        with self._lock:
            self._awaiting_reset |= uuids

    def awaiting_reset(self) -> frozenset[str]:
        """GPUs withheld until NVML shows them reset."""
        with self._lock:
            return frozenset(self._awaiting_reset)

    def _in_quarantine(self, unit: str, now: float) -> bool:
        since = self._last_fault.get(unit)
        if since is None:
            return False
        recover_after = self._policy.recover_after_seconds
        return recover_after <= 0 or now - since < recover_after
