"""The thread that turns NVML's XID events into health state."""

from __future__ import annotations

import threading
import time

from gpuconf.node import log
from gpuconf.node.health import HealthTracker
from gpuconf.node.metrics import Metrics
from gpuconf.node.nvml.api import Nvml

EVENT_WAIT_SECONDS = 0.5
RETRY_AFTER_ERROR_SECONDS = 1.0
EVENTS_SOURCE = "events"

_log = log.get("health")


class HealthMonitor:
    def __init__(
        self, nvml: Nvml, tracker: HealthTracker, metrics: Metrics, changed: threading.Event
    ) -> None:
        self._nvml = nvml
        self._tracker = tracker
        self._metrics = metrics
        self._changed = changed
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="health", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=EVENT_WAIT_SECONDS + 2)

    def _run(self) -> None:
        failing = False
        while not self._stop.is_set():
            try:
                events = self._nvml.wait_for_events(EVENT_WAIT_SECONDS)
            except Exception as error:  # any NVML failure means unknown health, never a crash
                self._metrics.nvml_errors.labels("wait_for_events").inc()
                if not failing:
                    _log.error(
                        "NVML events failed; devices unhealthy", extra=log.kv(error=str(error))
                    )
                    self._tracker.set_source_failing(EVENTS_SOURCE, True)
                    self._changed.set()
                failing = True
                self._stop.wait(RETRY_AFTER_ERROR_SECONDS)
                continue
            if failing:
                _log.info("NVML events work again")
                self._tracker.set_source_failing(EVENTS_SOURCE, False)
                self._changed.set()
                failing = False
            for event in events:
                verdict = self._tracker.record(event, time.monotonic())
                self._metrics.xid_events.labels(verdict.xid_class.value).inc()
                if verdict.unit is None:
                    _log.info(
                        "application XID ignored", extra=log.kv(uuid=event.uuid, xid=event.xid)
                    )
                    continue
                self._changed.set()
                _log.warning(
                    "XID; device unhealthy",
                    extra=log.kv(
                        uuid=verdict.unit,
                        xid=event.xid,
                        xid_class=verdict.xid_class.value,
                        gpu_instance=event.gpu_instance_id,
                    ),
                )
