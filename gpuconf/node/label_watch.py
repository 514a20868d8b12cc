"""Keep the Node's labels in step with the config and the GPUs found: publish when they change,
retry after a failure."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from pathlib import Path

from gpuconf.api.node_config import NodeConfig
from gpuconf.node import log
from gpuconf.node.labels import MACHINE_TYPE_FILE, NodeFacts, machine_type, node_labels
from gpuconf.node.nvml.api import GpuInfo, Nvml, NvmlError

RETRY_SECONDS = 60.0

_log = log.get("labels")


class LabelWatch:
    def __init__(self, node_name: str, nvml: Nvml, machine_file: Path = MACHINE_TYPE_FILE) -> None:
        self._node_name = node_name
        self._nvml = nvml
        self._machine_file = machine_file
        self._host: tuple[str, tuple[int, int] | None, str] | None = None
        self._wanted: dict[str, str] | None = None
        self._published: dict[str, str] | None = None
        self._failed_at: float | None = None
        self._busy = threading.Lock()

    def update(self, config: NodeConfig, present: Sequence[GpuInfo]) -> None:
        host = self._host_facts()
        if host is None:
            return
        driver, cuda, machine = host
        self._wanted = node_labels(
            config, self._node_name, NodeFacts(tuple(present), driver, cuda, machine)
        )
        self.tick(time.monotonic(), force=True)

    def tick(self, now: float, force: bool = False) -> None:
        """Publish what is wanted if it is not published yet; after a failure, only once
        RETRY_SECONDS have passed (or when `force`d by a change)."""
        wanted = self._wanted
        if wanted is None or wanted == self._published:
            return
        failed_at = self._failed_at
        if not force and failed_at is not None and now < failed_at + RETRY_SECONDS:
            return
        if not self._busy.acquire(blocking=False):
            return  # a publish is under way; a later tick sees whether it is still needed
        threading.Thread(
            target=self._publish, args=(wanted, now), name="labels", daemon=True
        ).start()

    def _publish(self, wanted: dict[str, str], now: float) -> None:
        try:
            from gpuconf.node import node_labels

            outcome = node_labels.publish_labels(self._node_name, wanted)
            if outcome is node_labels.Published.FAILED:
                self._failed_at = now
                return
            self._published, self._failed_at = wanted, None
            if outcome is node_labels.Published.YES:
                _log.info("node labels published", extra=log.kv(labels=len(wanted)))
            else:
                _log.info(
                    "node labels not published: not in a pod (`gpuconf node labels` prints them)",
                    extra=log.kv(labels=len(wanted)),
                )
        finally:
            self._busy.release()

    def _host_facts(self) -> tuple[str, tuple[int, int] | None, str] | None:
        """Driver, CUDA version and machine type: they change only with a restart."""
        if self._host is None:
            try:
                driver = self._nvml.driver_version()
                cuda = self._nvml.cuda_driver_version()
            except NvmlError as error:
                _log.warning(
                    "cannot read the driver version for labels", extra=log.kv(error=str(error))
                )
                return None
            self._host = (driver, cuda, machine_type(self._machine_file))
        return self._host
