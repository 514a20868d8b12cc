"""Keep one MPS control daemon per MPS resource running, on a thread of its own.

The daemon is asked every CHECK_SECONDS whether it answers; one that does not is restarted,
and while it is down its resource's devices are advertised Unhealthy (a client started then
would run without MPS, outside the limits).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping

from gpuconf.node import log
from gpuconf.node.metrics import Metrics
from gpuconf.node.mps import MpsDaemon, MpsDaemonSpec, MpsFailed

CHECK_SECONDS = 0.5
RETRY_SECONDS = 2.0

_log = log.get("mps")


class MpsSupervisor:
    def __init__(self, metrics: Metrics, changed: threading.Event) -> None:
        self._metrics = metrics
        self._changed = changed
        self._lock = threading.Lock()
        self._wanted: dict[str, MpsDaemonSpec] = {}
        self._running: dict[str, MpsDaemon] = {}
        self._up: set[str] = set()
        self._retry_at: dict[str, float] = {}
        self._stop = threading.Event()
        self._nudge = threading.Event()
        self._thread = threading.Thread(target=self._run, name="mps", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def want(self, specs: Mapping[str, MpsDaemonSpec]) -> None:
        with self._lock:
            if specs == self._wanted:
                return
            # A resource whose daemon must change is down from now, not from when the MPS
            # thread gets to it: its new GPUs are not MPS-served before then.
            self._up -= {name for name in self._up if specs.get(name) != self._wanted.get(name)}
            self._wanted = dict(specs)
        self._nudge.set()

    def is_up(self, resource: str) -> bool:
        with self._lock:
            return resource in self._up

    def stop(self) -> None:
        self._stop.set()
        self._nudge.set()
        self._thread.join(timeout=30)
        for name in sorted(self._running):
            self._stop_daemon(name)

    def _run(self) -> None:
        while not self._stop.is_set():
            self._reconcile()
            self._nudge.wait(CHECK_SECONDS)
            self._nudge.clear()

    def _reconcile(self) -> None:
        with self._lock:
            wanted = dict(self._wanted)
        for name in sorted(self._running):
            if wanted.get(name) != self._running[name].spec:
                self._stop_daemon(name)
        now = time.monotonic()
        for name, spec in sorted(wanted.items()):
            if self._stop.is_set():
                return
            daemon = self._running.get(name)
            if daemon is not None:
                if daemon.answers():
                    self._set_up(name, True)
                    continue
                _log.error(
                    "MPS control daemon stopped answering; restarting", extra=log.kv(resource=name)
                )
                self._set_up(name, False)
                del self._running[name]
            if now >= self._retry_at.get(name, 0.0):
                self._start_daemon(spec)

    def _start_daemon(self, spec: MpsDaemonSpec) -> None:
        daemon = MpsDaemon(spec)
        try:
            daemon.start()
        except MpsFailed as failed:
            self._metrics.mps_daemon_starts.labels(spec.resource, "failed").inc()
            self._retry_at[spec.resource] = time.monotonic() + RETRY_SECONDS
            _log.error(
                "cannot start the MPS control daemon",
                extra=log.kv(resource=spec.resource, error=str(failed)),
            )
            return
        self._metrics.mps_daemon_starts.labels(spec.resource, "ok").inc()
        self._running[spec.resource] = daemon
        _log.info(
            "MPS control daemon started",
            extra=log.kv(
                resource=spec.resource,
                gpus=",".join(str(i) for i, _ in spec.gpus),
                pipe=spec.pipe_directory,
            ),
        )
        self._set_up(spec.resource, True)

    def _stop_daemon(self, name: str) -> None:
        daemon = self._running.pop(name)
        self._set_up(name, False)
        try:
            daemon.stop()
        except MpsFailed as failed:
            _log.warning(
                "MPS control daemon did not stop cleanly",
                extra=log.kv(resource=name, error=str(failed)),
            )
            return
        _log.info("MPS control daemon stopped", extra=log.kv(resource=name))

    def _set_up(self, name: str, up: bool) -> None:
        with self._lock:
            running = self._running.get(name)
            # A daemon started for a spec `want` has since replaced is not up for the new one.
            up = up and running is not None and running.spec == self._wanted.get(name)
            changed = (name in self._up) != up
            if up:
                self._up.add(name)
            else:
                self._up.discard(name)
        self._metrics.mps_daemon_up.labels(name).set(int(up))
        if changed:
            self._changed.set()
