"""Poll the kubelet's PodResources API on a thread of its own (a hung kubelet stalls only it)."""

from __future__ import annotations

import threading
from pathlib import Path

from gpuconf.node import log
from gpuconf.node.kubelet.pod_resources import (
    HeldDevices,
    PodResourcesUnavailable,
    held_devices,
)
from gpuconf.node.metrics import Metrics

POLL_SECONDS = 1.0

_log = log.get("pod-resources")


class PodResourcesWatch:
    def __init__(self, socket: Path, metrics: Metrics, changed: threading.Event) -> None:
        self._socket = socket
        self._metrics = metrics
        self._changed = changed
        self._lock = threading.Lock()
        self._held: HeldDevices | None = None
        self._down = False
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="pod-resources", daemon=True)

    def start(self) -> None:
        self.poll_once()
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=POLL_SECONDS + 3)

    def held(self) -> HeldDevices | None:
        """Device IDs held by running containers; None while the kubelet cannot say."""
        with self._lock:
            return self._held

    def poll_once(self) -> None:
        try:
            held: HeldDevices | None = held_devices(self._socket)
        except PodResourcesUnavailable as error:
            held = None
            if not self._down:
                _log.warning(
                    "cannot list held devices; GPU moves wait",
                    extra=log.kv(socket=self._socket, error=str(error)),
                )
        if self._down and held is not None:
            _log.info("the kubelet lists held devices again")
        self._down = held is None
        self._metrics.pod_resources_up.set(int(held is not None))
        with self._lock:
            changed = held != self._held
            self._held = held
        if changed:
            self._changed.set()

    def _run(self) -> None:
        while not self._stop.wait(POLL_SECONDS):
            self.poll_once()
