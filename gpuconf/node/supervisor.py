"""The main loop: keep every resource's server, registration and device list current.

It polls (config file, inventory, kubelet socket) rather than reacting to callbacks, so all
state changes happen on one thread; only XID events arrive from the health thread.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from pathlib import Path

from gpuconf.api.node_config import NodeConfig
from gpuconf.node import log
from gpuconf.node.config_watch import ConfigInvalid, ConfigVersion, ConfigWatch
from gpuconf.node.devices import BuiltDevices, build_devices
from gpuconf.node.discovered import DiscoveredInventory
from gpuconf.node.drift_watch import DriftWatch
from gpuconf.node.health import HealthPolicy, HealthTracker
from gpuconf.node.health_monitor import HealthMonitor
from gpuconf.node.kubelet.kubelet_watch import KubeletWatch
from gpuconf.node.kubelet.resource_plugin import ResourcePlugin
from gpuconf.node.metrics import Metrics
from gpuconf.node.nvml.api import GpuInfo, Nvml
from gpuconf.node.resource_view import ResourceView
from gpuconf.node.topology import Topology, topology_of

TICK_SECONDS = 0.2
"""Kubelet socket checks and health recovery happen at this pace."""
CONFIG_POLL_SECONDS = 1.0
INVENTORY_POLL_SECONDS = 1.0
STALL_SECONDS = 10.0
"""/healthz fails when the loop has not turned for this long."""
INVENTORY_SOURCE = "inventory"

_log = log.get("supervisor")


@dataclass(frozen=True)
class RunSettings:
    node_name: str
    plugin_dir: Path
    config_path: Path


def health_policy(config: NodeConfig) -> HealthPolicy:
    return HealthPolicy(frozenset(config.health.ignored_xids), config.health.recover_after_seconds)


class Supervisor:
    def __init__(
        self, settings: RunSettings, config: ConfigVersion, nvml: Nvml, metrics: Metrics
    ) -> None:
        self._settings = settings
        self._config = config.config
        self._config_watch = ConfigWatch(settings.config_path, config)
        self._nvml = nvml
        self._metrics = metrics
        self._tracker = HealthTracker(health_policy(config.config))
        self._wake = threading.Event()
        self._health = HealthMonitor(nvml, self._tracker, metrics, self._wake)
        self._kubelet = KubeletWatch(settings.plugin_dir)
        self._drift = DriftWatch(settings.node_name, metrics)
        self._inventory = DiscoveredInventory()
        self._discovered: tuple[GpuInfo, ...] | None = None
        self._inventory_failing = False
        self._topology = Topology()
        self._allowed: frozenset[int] | None = None
        self._built: dict[str, BuiltDevices] = {}
        self._plugins: dict[str, ResourcePlugin] = {}
        self._stop_requested = False
        self._reload_requested = False
        self._last_turn = time.monotonic()

    # Signal handlers call these: plain assignments, no locks (a handler may interrupt a holder).
    def request_stop(self) -> None:
        self._stop_requested = True

    def request_reload(self) -> None:
        self._reload_requested = True

    def alive(self) -> bool:
        return time.monotonic() - self._last_turn < STALL_SECONDS

    def run(self) -> None:
        self._poll_inventory(force=True)
        self._sync_plugins()
        self._health.start()
        next_config = next_inventory = time.monotonic()
        try:
            while not self._stop_requested:
                now = self._last_turn = time.monotonic()
                if self._reload_requested:
                    self._reload_requested = False
                    _log.info("SIGHUP: reloading the node config")
                    self._check_config(force=True)
                elif now >= next_config:
                    next_config = now + CONFIG_POLL_SECONDS
                    self._check_config()
                if now >= next_inventory:
                    next_inventory = now + INVENTORY_POLL_SECONDS
                    self._poll_inventory()
                if self._kubelet.restarted():
                    for plugin in self._plugins.values():
                        plugin.restart("a new kubelet.sock appeared (kubelet restart)")
                for plugin in self._plugins.values():
                    plugin.tick(now)
                self._publish(now)
                self._wake.wait(TICK_SECONDS)
                self._wake.clear()
        finally:
            self._shut_down()

    def _shut_down(self) -> None:
        self._health.stop()
        for plugin in self._plugins.values():
            plugin.stop()
        self._plugins.clear()

    def _check_config(self, force: bool = False) -> None:
        update = self._config_watch.poll(force=force)
        if update is None:
            return
        if isinstance(update, ConfigInvalid):
            self._metrics.config_reload_failures.inc()
            _log.error("refused the changed node config; keeping the last good one")
            for problem in update.diagnostics:
                _log.error("node config problem", extra=log.kv(problem=problem.as_text()))
            return
        self._apply(update.config)

    def _apply(self, config: NodeConfig) -> None:
        old = self._config
        self._config = config
        self._metrics.config_reloads.inc()
        _log.info(
            "applied the changed node config",
            extra=log.kv(resources=",".join(r.name for r in config.resources) or "none"),
        )
        if config.metrics_port != old.metrics_port:
            _log.warning("metricsPort changes take effect when the process restarts")
        self._tracker.set_policy(health_policy(config))
        self._rebuild()
        self._sync_plugins()

    def _poll_inventory(self, force: bool = False) -> None:
        try:
            discovered = tuple(self._nvml.devices())
        except Exception as error:  # NVML trouble makes devices unhealthy, never kills the process
            self._metrics.nvml_errors.labels("devices").inc()
            if not self._inventory_failing:
                _log.error(
                    "NVML cannot list GPUs; devices unhealthy", extra=log.kv(error=str(error))
                )
            self._inventory_failing = True
            self._tracker.set_source_failing(INVENTORY_SOURCE, True)
            if force:
                self._rebuild()
            return
        if self._inventory_failing:
            _log.info("NVML lists GPUs again")
            self._inventory_failing = False
            self._tracker.set_source_failing(INVENTORY_SOURCE, False)
        if discovered == self._discovered and not force:
            return
        self._discovered = discovered
        self._inventory = self._inventory.advance(discovered)
        self._tracker.observe_inventory(discovered)
        self._topology = topology_of(self._inventory.known.values())
        _log.info(
            "inventory",
            extra=log.kv(
                present=",".join(map(str, sorted(self._inventory.present))) or "none",
                vanished=",".join(map(str, sorted(self._inventory.vanished))) or "none",
            ),
        )
        self._rebuild()

    def _rebuild(self) -> None:
        """Recompute drift and every resource's devices after a config or inventory change."""
        config = self._config
        report = self._drift.update(
            config.inventory.for_node(self._settings.node_name), self._inventory.present_gpus()
        )
        if config.drift_policy == "strict":
            kept = (self._allowed or frozenset()) & self._inventory.vanished
            self._allowed = report.matching_indices | kept
        else:
            self._allowed = None
        built: dict[str, BuiltDevices] = {}
        for resource in config.resources:
            indices = resource.gpus.for_node(self._settings.node_name)
            if self._allowed is not None:
                indices = [i for i in indices if i in self._allowed]
            built[resource.name] = build_devices(resource, self._inventory.known, indices)
            previous = self._built.get(resource.name)
            if previous is None or previous.problems != built[resource.name].problems:
                for problem in built[resource.name].problems:
                    _log.warning(
                        "device not advertised",
                        extra=log.kv(resource=resource.name, problem=problem),
                    )
        self._built = built

    def _view(self, name: str, now: float) -> ResourceView:
        resource = next(r for r in self._config.resources if r.name == name)
        devices = self._built[name].devices
        healthy = frozenset(
            d.id for d in devices if self._tracker.is_healthy(d.gpu_uuid, d.mig_uuid, now)
        )
        return ResourceView(
            resource, self._config.device_list_strategy, devices, healthy, self._topology
        )

    def _sync_plugins(self) -> None:
        wanted = {resource.name for resource in self._config.resources}
        for name in sorted(self._plugins.keys() - wanted):
            self._plugins.pop(name).stop()
        now = time.monotonic()
        for name in sorted(wanted - self._plugins.keys()):
            plugin = ResourcePlugin(self._settings.plugin_dir, self._view(name, now), self._metrics)
            plugin.start()
            self._plugins[name] = plugin

    def _publish(self, now: float) -> None:
        for name, plugin in self._plugins.items():
            plugin.publish(self._view(name, now))
