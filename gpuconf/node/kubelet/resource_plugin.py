"""One resource's life: its server, its published device list, its registration.

Registration runs on a thread of its own: a kubelet that accepts the call and never answers
holds up only the next registration attempt, never health, serving or the main loop.
"""

from __future__ import annotations

import threading
import time
from dataclasses import replace
from pathlib import Path

from gpuconf.node import log
from gpuconf.node.kubelet.handed_out import HandedOut
from gpuconf.node.kubelet.plugin_server import PluginServer, PluginSocketUnavailable
from gpuconf.node.kubelet.registration import RegistrationFailed, register
from gpuconf.node.latest import Latest
from gpuconf.node.metrics import Metrics
from gpuconf.node.resource_view import ResourceView

REGISTER_RETRY_SECONDS = 0.5

_log = log.get("resource")


class ResourcePlugin:
    def __init__(
        self, plugin_dir: Path, view: ResourceView, metrics: Metrics, handed_out: HandedOut
    ) -> None:
        self.name = view.resource.name
        self.endpoint = view.resource.socket_name()
        self._plugin_dir = plugin_dir
        self._metrics = metrics
        self._views = Latest(view)
        self._server = PluginServer(plugin_dir / self.endpoint, self._views, metrics, handed_out)
        self._lock = threading.Lock()
        self._generation = 0
        """Bumped on every (re)start: a registration begun before belongs to an old server."""
        self._registered = False
        self._in_flight = False
        self._next_attempt = 0.0
        self._failures_logged = 0
        self._unavailable: str | None = None
        """Why the socket could not be made at the last try; None while serving."""
        self._count(view)
        metrics.registered.labels(self.name).set(0)

    def start(self) -> None:
        """Serve the socket anew. Raises PluginSocketUnavailable when it cannot be made there:
        at start-up that stops the process; later, start_when_possible keeps it running."""
        self._server.start()
        with self._lock:
            self._generation += 1
            self._registered = False
            self._in_flight = False
            self._next_attempt = 0.0
        self._metrics.registered.labels(self.name).set(0)
        _log.info("serving", extra=log.kv(resource=self.name, socket=self._server.socket_path))

    def stop(self) -> None:
        self._server.stop()
        self._metrics.forget_resource(self.name)
        _log.info("stopped", extra=log.kv(resource=self.name))

    def start_when_possible(self) -> None:
        """Start; if the socket cannot be made, say why once and leave the resource unoffered
        (not served, not registered) until a later tick's try succeeds."""
        try:
            self.start()
        except PluginSocketUnavailable as unavailable:
            with self._lock:
                self._registered = False
            self._metrics.registered.labels(self.name).set(0)
            self._metrics.plugin_socket_unavailable.labels(self.name).set(1)
            if str(unavailable) != self._unavailable:
                _log.warning(
                    "not offered: retrying every tick",
                    extra=log.kv(resource=self.name, problem=str(unavailable)),
                )
            self._unavailable = str(unavailable)
            return
        if self._unavailable is not None:
            self._unavailable = None
            self._metrics.plugin_socket_unavailable.labels(self.name).set(0)

    def restart(self, reason: str) -> None:
        if self._unavailable is None:
            _log.warning("restarting", extra=log.kv(resource=self.name, reason=reason))
        self.start_when_possible()

    def publish(self, view: ResourceView) -> None:
        """Send the list to ListAndWatch clients when anything about it changed."""
        if self.swap(view):
            self.report(view)

    def swap(self, view: ResourceView) -> bool:
        """Make ``view`` the one Allocate checks and ListAndWatch sends, if it differs; no I/O,
        so the supervisor calls it under the decision lock, then ``report`` for a swapped one."""
        _, current = self._views.current()
        if view == current:
            return False
        self._views.publish(view)
        return True

    def withdraw_all(self) -> None:
        """Hand out nothing more (every device Unhealthy) until stopped: a resource on its way
        out. No I/O either."""
        _, current = self._views.current()
        self.swap(replace(current, healthy_ids=frozenset()))

    def report(self, view: ResourceView) -> None:
        self._count(view)
        _log.info(
            "device list",
            extra=log.kv(
                resource=self.name,
                devices=len(view.devices),
                unhealthy=",".join(d.id for d in view.devices if d.id not in view.healthy_ids)
                or "none",
            ),
        )

    def resend(self) -> None:
        """Send the current list again, unchanged: the kubelet writes its device checkpoint on
        every list it receives (manager.go genericDeviceUpdateCallback)."""
        _, current = self._views.current()
        self._views.publish(current)

    @property
    def registered(self) -> bool:
        with self._lock:
            return self._registered

    def tick(self, now: float) -> None:
        if not self._server.serving:
            self.restart("our socket was deleted (kubelet restart?)")
            if not self._server.serving:
                return
        with self._lock:
            if self._registered or self._in_flight or now < self._next_attempt:
                return
            self._in_flight = True
            generation = self._generation
        threading.Thread(
            target=self._register, args=(generation,), name=f"register-{self.name}", daemon=True
        ).start()

    def _register(self, generation: int) -> None:
        started = time.monotonic()
        try:
            register(self._plugin_dir, self.endpoint, self.name)
        except RegistrationFailed as failed:
            self._metrics.registrations.labels(self.name, "failed").inc()
            with self._lock:
                if generation != self._generation:
                    return
                self._in_flight = False
                self._next_attempt = time.monotonic() + REGISTER_RETRY_SECONDS
                self._failures_logged += 1
                quiet = self._failures_logged > 3  # the kubelet may be down long
            if not quiet:
                _log.warning(
                    "registration failed", extra=log.kv(resource=self.name, error=str(failed))
                )
            return
        with self._lock:
            if generation != self._generation:
                return
            self._in_flight = False
            self._registered = True
            self._failures_logged = 0
        self._metrics.registrations.labels(self.name, "ok").inc()
        self._metrics.registered.labels(self.name).set(1)
        _log.info(
            "registered with the kubelet",
            extra=log.kv(
                resource=self.name,
                endpoint=self.endpoint,
                ms=round((time.monotonic() - started) * 1000),
            ),
        )

    def _count(self, view: ResourceView) -> None:
        healthy = sum(1 for d in view.devices if d.id in view.healthy_ids)
        self._metrics.set_devices(self.name, healthy, len(view.devices) - healthy)
