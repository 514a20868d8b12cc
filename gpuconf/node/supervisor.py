"""The main loop: keep every resource's server, registration and device list current.

It polls (config file, inventory, kubelet socket) rather than reacting to callbacks, so all
state changes happen on one thread; only XID events arrive from the health thread.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from pathlib import Path

from gpuconf.api.node_config import NodeConfig, ResourceSettings
from gpuconf.node import log, reset_state
from gpuconf.node.config_watch import ConfigInvalid, ConfigVersion, ConfigWatch
from gpuconf.node.devices import BuiltDevices
from gpuconf.node.discovered import DiscoveredInventory
from gpuconf.node.drift_watch import DriftWatch
from gpuconf.node.health import HealthPolicy, HealthTracker
from gpuconf.node.health_monitor import HealthMonitor
from gpuconf.node.kubelet.checkpoint_nudge import NudgeBackoff
from gpuconf.node.kubelet.device_checkpoint import CHECKPOINT_FILE
from gpuconf.node.kubelet.handed_out import HandedOut
from gpuconf.node.kubelet.kubelet_watch import KubeletWatch
from gpuconf.node.kubelet.pod_resources import HeldDevices
from gpuconf.node.kubelet.pod_resources_watch import PodResourcesWatch
from gpuconf.node.kubelet.resource_plugin import ResourcePlugin
from gpuconf.node.kubelet.saved_grants import GRANTS_FILE, SavedGrants
from gpuconf.node.label_watch import LabelWatch
from gpuconf.node.metrics import Metrics
from gpuconf.node.mps import MpsDaemonSpec, daemon_spec
from gpuconf.node.mps_supervisor import MpsSupervisor
from gpuconf.node.node_annotation import annotate_pending
from gpuconf.node.nvml.api import GpuInfo, Nvml
from gpuconf.node.reclass import (
    Assignment,
    PendingChange,
    assignment_of,
    devices_by_resource,
    reclass,
)
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
    pod_resources_socket: Path
    state_dir: Path
    """Where GPUs awaiting a reset and what Allocate handed out are remembered across restarts."""


def health_policy(config: NodeConfig) -> HealthPolicy:
    health = config.health
    return HealthPolicy(
        frozenset(health.ignored_xids),
        health.recover_after_seconds,
        frozenset(health.reset_xids),
    )


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
        self._saved_awaiting_reset = self._restore_awaiting_reset()
        self._save_failure: tuple[frozenset[str], int | None] | None = None
        """The state and error of the last save that failed: retried every tick, logged once."""
        self._kubelet = KubeletWatch(settings.plugin_dir)
        self._drift = DriftWatch(settings.node_name, metrics)
        self._labels = LabelWatch(settings.node_name, nvml)
        self._inventory = DiscoveredInventory()
        self._discovered: tuple[GpuInfo, ...] | None = None
        self._inventory_failing = False
        self._topology = Topology()
        self._allowed: frozenset[int] | None = None
        self._handed_out = HandedOut(saved=SavedGrants(settings.state_dir / GRANTS_FILE, metrics))
        self._handed_out.restore()
        self._pod_resources = PodResourcesWatch(
            settings.pod_resources_socket,
            settings.plugin_dir / CHECKPOINT_FILE,
            metrics,
            self._wake,
            self._handed_out,
        )
        self._nudges = NudgeBackoff()
        self._mps = MpsSupervisor(metrics, self._wake)
        self._wanted: Assignment = {}
        self._effective: Assignment = {}
        self._held_seen: HeldDevices | None = None
        self._pending: tuple[PendingChange, ...] = ()
        self._draining: frozenset[tuple[str, str]] = frozenset()
        self._built: dict[str, BuiltDevices] = {}
        self._plugins: dict[str, ResourcePlugin] = {}
        self._started = False
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

    def status(self) -> dict[str, object]:
        """What /status says: the changes waiting for GPUs to be released. Read from other
        threads, so it takes one reference to immutable data."""
        pending = self._pending
        return {"pendingChanges": [change.as_dict() for change in pending]}

    def start(self) -> None:
        """Start watching and serve the config's resources. Raises a UserError (a plugin socket
        that cannot be made, say) after undoing what started: the process cannot start."""
        self._pod_resources.start()
        self._mps.start()
        try:
            self._poll_inventory(force=True)
        except BaseException:
            self._shut_down()
            raise
        self._health.start()
        self._started = True

    def run(self) -> None:
        """Serve until stopped. From here a plugin socket that cannot be made is retried, never
        the end of the process."""
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
                if self._pending and self._pod_resources.held() != self._held_seen:
                    self._reassign()
                self._nudge_checkpoint(now)
                if self._kubelet.restarted():
                    self._nudges.reset()
                    for plugin in self._plugins.values():
                        plugin.restart("a new kubelet.sock appeared (kubelet restart)")
                for plugin in self._plugins.values():
                    plugin.tick(now)
                self._publish(now)
                self._labels.tick(now)
                self._wake.wait(TICK_SECONDS)
                self._wake.clear()
        finally:
            self._shut_down()

    def _shut_down(self) -> None:
        if self._started:
            self._health.stop()
        self._pod_resources.stop()
        for plugin in self._plugins.values():
            plugin.stop()
        self._plugins.clear()
        self._handed_out.save()  # the last answers' times: a restart holds them no longer
        self._mps.stop()

    def _check_config(self, force: bool = False) -> None:
        update = self._config_watch.poll(force=force)
        if update is None:
            return
        if isinstance(update, ConfigInvalid):
            self._metrics.config_reload_failures.inc()
            self._metrics.config_refused.set(1)
            _log.error("refused the changed node config; keeping the last good one")
            for problem in update.diagnostics:
                _log.error("node config problem", extra=log.kv(problem=problem.as_text()))
            return
        self._apply(update.config)

    def _apply(self, config: NodeConfig) -> None:
        old = self._config
        self._config = config
        self._metrics.config_reloads.inc()
        self._metrics.config_refused.set(0)
        _log.info(
            "applied the changed node config",
            extra=log.kv(resources=",".join(r.name for r in config.resources) or "none"),
        )
        if config.metrics_port != old.metrics_port:
            _log.warning("metricsPort changes take effect when the process restarts")
        self._tracker.set_policy(health_policy(config))
        self._rebuild()

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
                reset_pending=",".join(str(g.index) for g in discovered if g.reset_pending)
                or "none",
            ),
        )
        self._rebuild()

    def _rebuild(self) -> None:
        """Recompute drift and what each resource should offer after a config or inventory change."""
        config = self._config
        report = self._drift.update(
            config.inventory.for_node(self._settings.node_name), self._inventory.present_gpus()
        )
        self._labels.update(config, self._inventory.present_gpus())
        if config.drift_policy == "strict":
            kept = (self._allowed or frozenset()) & self._inventory.vanished
            self._allowed = report.matching_indices | kept
        else:
            self._allowed = None
        wanted = []
        for resource in config.resources:
            indices = config.gpu_indices(resource, self._settings.node_name)
            if self._allowed is not None:
                indices = [i for i in indices if i in self._allowed]
            wanted.append((resource, indices))
        self._wanted = assignment_of(wanted)
        self._reassign()

    def _reassign(self) -> None:
        """Apply the wanted assignment wherever no running container holds what it withdraws.

        What is held, the decision and the views Allocate checks change in one step, under the
        decision lock (kubelet/handed_out.py): an Allocate is either recorded before it, and so
        counted held here, or checked against the new views, and so refused a withdrawn ID.
        Only in-memory work happens under it; logging, starting and stopping plugins after."""
        known = self._inventory.known
        now = time.monotonic()
        with self._handed_out.decision:
            held = self._held_seen = self._pod_resources.held()
            change = reclass(self._effective, self._wanted, held, known)
            self._effective, self._draining = change.effective, change.draining
            built = devices_by_resource(self._effective, known)
            for resource in self._config.resources:
                built.setdefault(resource.name, BuiltDevices((), ()))
            before, self._built = self._built, built
            # /status and the gauge say it before any device list does
            pending_before, self._pending = self._pending, change.pending
            self._metrics.pending_gpu_changes.set(len(change.pending))
            swapped = self._swap_views(now)
        for plugin, view in swapped:
            plugin.report(view)
        if change.pending != pending_before:
            self._report_pending(pending_before, change.pending)
        for name, devices in sorted(built.items()):
            previous = before.get(name)
            if previous is None or previous.problems != devices.problems:
                for problem in devices.problems:
                    _log.warning(
                        "device not advertised", extra=log.kv(resource=name, problem=problem)
                    )
        self._mps.want(self._mps_specs())
        self._sync_plugins()

    def _swap_views(self, now: float) -> list[tuple[ResourcePlugin, ResourceView]]:
        """Every plugin's view for the current decision (under the decision lock); a resource
        no longer offered hands out nothing more until _sync_plugins stops it."""
        swapped = []
        for name, plugin in sorted(self._plugins.items()):
            if name not in self._built:
                plugin.withdraw_all()
                continue
            view = self._view(name, now)
            if plugin.swap(view):
                swapped.append((plugin, view))
        return swapped

    def _nudge_checkpoint(self, now: float) -> None:
        """Have the kubelet rewrite its checkpoint when only its entries hold a change up: the
        entry of a pod that ended stays until the kubelet next writes the file, and any device
        list update makes it write (manager.go genericDeviceUpdateCallback). What it writes is
        its own record, pruned of ended pods only once it has seen every pod source
        (UpdateAllocatedDevices), so a pod it has not re-learned yet keeps its devices. Entries
        that stay while their pod lives make the nudges back off (kubelet/checkpoint_nudge.py),
        each device that comes to be awaited from the checkpoint alone starting them over."""
        held = {device for change in self._pending for device in change.held}
        awaited = self._pod_resources.awaits_checkpoint(held)
        if not self._nudges.due(awaited, now) or not awaited:
            return
        registered = [p for _, p in sorted(self._plugins.items()) if p.registered]
        if registered:
            wait = self._nudges.nudged(now)
            # Says why device lists go out again, and whether a schedule started over (round 1).
            _log.info(
                "having the kubelet rewrite its device checkpoint",
                extra=log.kv(awaited=len(awaited), round=self._nudges.round, next_in_s=wait),
            )
            registered[0].resend()

    def _report_pending(
        self, before: tuple[PendingChange, ...], pending: tuple[PendingChange, ...]
    ) -> None:
        for change in pending:
            if change not in before:
                _log.warning("GPU change deferred", extra=log.kv(change=change.as_text()))
        for change in before:
            if all(change.gpu_index != p.gpu_index for p in pending):
                _log.info("deferred GPU change applied", extra=log.kv(gpu=change.gpu_index))
        threading.Thread(
            target=annotate_pending,
            args=(self._settings.node_name, [change.as_dict() for change in pending]),
            name="annotate-pending",
            daemon=True,
        ).start()

    def _mps_specs(self) -> dict[str, MpsDaemonSpec]:
        specs: dict[str, MpsDaemonSpec] = {}
        known = self._inventory.known
        for resource in self._config.resources:
            if resource.sharing.strategy != "mps":
                continue
            gpus = tuple(
                (index, known[index].uuid)
                for index, resources in sorted(self._effective.items())
                if index in known and resource in resources
            )
            if gpus:
                specs[resource.name] = daemon_spec(resource, gpus)
        return specs

    def _settings_of(self, name: str) -> ResourceSettings:
        """The config's settings for a resource; a removed one still draining keeps its last."""
        for resource in self._config.resources:
            if resource.name == name:
                return resource
        return next(r for rs in self._effective.values() for r in rs if r.name == name)

    def _view(self, name: str, now: float) -> ResourceView:
        resource = self._settings_of(name)
        devices = self._built[name].devices
        serving = resource.sharing.strategy != "mps" or self._mps.is_up(name)
        healthy = frozenset(
            d.id
            for d in devices
            if serving
            and (name, d.id) not in self._draining
            and self._tracker.is_healthy(d.gpu_uuid, d.mig_uuid, now)
        )
        return ResourceView(
            resource, self._config.device_list_strategy, devices, healthy, self._topology
        )

    def _sync_plugins(self) -> None:
        wanted = set(self._built)
        for name in sorted(self._plugins.keys() - wanted):
            self._plugins.pop(name).stop()
        now = time.monotonic()
        for name in sorted(wanted - self._plugins.keys()):
            plugin = ResourcePlugin(
                self._settings.plugin_dir, self._view(name, now), self._metrics, self._handed_out
            )
            if self._started:
                plugin.start_when_possible()
            else:
                plugin.start()
            self._plugins[name] = plugin

    def _restore_awaiting_reset(self) -> frozenset[str]:
        path = self._settings.state_dir / reset_state.STATE_FILE
        try:
            uuids = reset_state.load(path)
        except reset_state.StateUnreadable as error:
            _log.error("ignoring unreadable reset state", extra=log.kv(error=str(error)))
            return frozenset()
        if uuids:
            _log.warning(
                "GPUs still await a reset from before this start",
                extra=log.kv(uuids=",".join(sorted(uuids)), state=path),
            )
        self._tracker.restore_awaiting_reset(uuids)
        return uuids

    def _save_awaiting_reset(self, awaiting: frozenset[str]) -> None:
        if awaiting == self._saved_awaiting_reset:
            return
        path = self._settings.state_dir / reset_state.STATE_FILE
        try:
            reset_state.save(path, awaiting)
        except OSError as error:
            failure = (awaiting, error.errno)  # the message names a new temporary file each time
            if failure != self._save_failure:
                _log.error("cannot save the reset state", extra=log.kv(path=path, error=str(error)))
                self._save_failure = failure
            return
        if self._save_failure is not None:
            _log.info("reset state saved again", extra=log.kv(path=path))
            self._save_failure = None
        self._saved_awaiting_reset = awaiting

    def _publish(self, now: float) -> None:
        awaiting = self._tracker.awaiting_reset()
        self._metrics.gpus_awaiting_reset.set(len(awaiting))
        self._save_awaiting_reset(awaiting)
        for name, plugin in self._plugins.items():
            plugin.publish(self._view(name, now))
