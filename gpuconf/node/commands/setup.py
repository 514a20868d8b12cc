"""`gpuconf node setup`: make this host's container engine run GPU containers, then say so.

Runs as the pool's setup DaemonSet (runc, privileged, the host's / at --root): waits for the
driver, writes the engine's config the way that engine merges it (plus the toolkit config
and CDI spec), reloads the engine only when its config changed, and writes the ready marker
every GPU consumer waits for. On SIGTERM the marker goes (and, if asked, the originals come
back). `--dry-run` prints the exact diff and writes nothing.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
import time
from pathlib import Path
from types import FrameType

from gpuconf.api.node_config import NodeConfig
from gpuconf.api.node_facts import CONTAINERISED_DRIVER_ROOT
from gpuconf.api.runtime_files import (
    BACKUP_DIR,
    DRIVER_READY_MARKER,
    RELOAD_OWED_MARKER,
    SETUP_MARKER_DIR,
    SETUP_READY_MARKER,
)
from gpuconf.errors import UserError
from gpuconf.node import log
from gpuconf.node.atomic_files import remove, write_atomically
from gpuconf.node.config_watch import read_config
from gpuconf.node.metrics_http import MetricsServer
from gpuconf.node.nvml.tegra import RELEASE_FILE as TEGRA_RELEASE_FILE
from gpuconf.node.prometheus_text import Counter, Gauge, Registry
from gpuconf.node.runtimes import apply, reload
from gpuconf.node.runtimes.changes import config_hash, unified_diff
from gpuconf.node.runtimes.host import Host
from gpuconf.node.runtimes.host_files import exclusive_lock, read_optional
from gpuconf.node.runtimes.host_plan import HostPlan, plan_host

LOCK_FILE = f"{SETUP_MARKER_DIR}/setup.lock"

_log = log.get("setup")


class SetupMetrics:
    def __init__(self) -> None:
        self.registry = Registry()
        self.ready = Gauge(
            "gpuconf_setup_ready",
            "1 while the setup-ready marker is written",
            registry=self.registry,
        )
        self.changed_files = Gauge(
            "gpuconf_setup_changed_files",
            "Host files the last setup run changed",
            registry=self.registry,
        )
        self.reloads = Counter(
            "gpuconf_setup_engine_reloads",
            "Engine reloads by setup, by engine and mode (signal, systemd, none)",
            ["engine", "mode"],
            registry=self.registry,
        )


def run(options: argparse.Namespace) -> int:
    config = read_config(Path(options.config)).config
    host = Host(
        Path(options.root), chroot=options.host_commands == "chroot", proc=Path(options.proc)
    )
    if options.dry_run:
        return _dry_run(config, host)
    log.configure(sys.stderr)
    metrics = SetupMetrics()
    http = (
        MetricsServer(options.metrics_port, metrics.registry, lambda: True)
        if options.metrics_port
        else None
    )
    if http is not None:
        http.start()
    stop = threading.Event()
    _on_stop_signals(stop)
    try:
        if not _wait_for_driver(config, host, options, stop):
            return 0
        host_plan = _set_up(config, host, metrics)
        if options.once:
            return 0
        stop.wait()
        _tear_down(config, host, host_plan, metrics)
        return 0
    finally:
        if http is not None:
            http.stop()


def _dry_run(config: NodeConfig, host: Host) -> int:
    host_plan = plan_host(config, host)
    changed = host_plan.changed
    sys.stdout.writelines(unified_diff(change) for change in changed)
    reload_text = None
    if host_plan.engine_changed or host.path(RELOAD_OWED_MARKER).exists():
        what = reload.chosen(config.runtime, host)
        reload_text = f"reload {config.runtime.engine} by {what.mode} ({what.why})"
    if not changed:
        owed = f"an earlier run did not reload it: would {reload_text}"
        print(
            f"{config.runtime.engine}: already configured; nothing to write; "
            + (owed if reload_text else "nothing to reload")
        )
        return 0
    action = f"then {reload_text}" if reload_text else "no engine reload needed"
    paths = ", ".join(change.host_path for change in changed)
    print(f"dry run: nothing written; would change {paths}; {action}")
    return 0


def _set_up(config: NodeConfig, host: Host, metrics: SetupMetrics) -> HostPlan:
    engine = config.runtime.engine
    with exclusive_lock(host.path(LOCK_FILE)):
        host_plan = plan_host(config, host)
        owed = host.path(RELOAD_OWED_MARKER)
        if host_plan.engine_changed:
            write_atomically(owed, reload.owed_marker_text(engine, time.monotonic()))
        kept = apply.write_changes(host, host_plan.files)
        for host_path in kept:
            _log.info("kept the original", extra=log.kv(file=host_path))
        for change in host_plan.changed:
            _log.info("wrote", extra=log.kv(file=change.host_path))
        outcome = _reload_if_needed(config, host, host_plan, metrics, owed=read_optional(owed))
        remove(owed)
        digest = config_hash(host_plan.files)
        write_atomically(host.path(SETUP_READY_MARKER), apply.marker_text(digest, engine, outcome))
    metrics.changed_files.set(len(host_plan.changed))
    metrics.ready.set(1)
    _log.info("ready", extra=log.kv(engine=engine, hash=digest, reload=outcome))
    return host_plan


def _reload_if_needed(
    config: NodeConfig,
    host: Host,
    host_plan: HostPlan,
    metrics: SetupMetrics,
    *,
    owed: bytes | None,
) -> str:
    """Reload the engine if its config changed now, or an earlier run changed it and did not
    get to reload it (``owed``: the reload-owed marker's bytes)."""
    if not host_plan.engine_changed and owed is None:
        _log.info(
            "engine config unchanged; nothing restarted", extra=log.kv(engine=config.runtime.engine)
        )
        return "unchanged"
    if not host_plan.engine_changed:
        _log.info(
            "engine config written by an earlier run that did not reload it",
            extra=log.kv(engine=config.runtime.engine),
        )
    what = reload.chosen(config.runtime, host)
    since = None if host_plan.engine_changed or owed is None else reload.owed_since(owed)
    done = reload.perform(config.runtime, host, what, owed_since=since)
    metrics.reloads.labels(config.runtime.engine, what.mode).inc()
    _log.info(
        "engine reload", extra=log.kv(engine=config.runtime.engine, mode=what.mode, done=done)
    )
    return "pending (restart the engine to load it)" if what.mode == "none" else what.mode


def _tear_down(config: NodeConfig, host: Host, host_plan: HostPlan, metrics: SetupMetrics) -> None:
    remove(host.path(SETUP_READY_MARKER))
    metrics.ready.set(0)
    _log.info("stopping; ready marker removed")
    if not config.runtime.revert_on_stop:
        return
    with exclusive_lock(host.path(LOCK_FILE)):
        reverted = apply.revert(host, host_plan.files)
        for host_path in reverted.put_back:
            _log.info("reverted", extra=log.kv(file=host_path))
        for host_path in reverted.left:
            _log.warning(
                "not reverted: changed on the host since setup wrote it",
                extra=log.kv(file=host_path, original=f"{BACKUP_DIR}{host_path}"),
            )
        if {change.host_path for change in host_plan.engine}.intersection(reverted.put_back):
            what = reload.chosen(config.runtime, host)
            _log.info(
                "engine reload", extra=log.kv(done=reload.perform(config.runtime, host, what))
            )


def _wait_for_driver(
    config: NodeConfig, host: Host, options: argparse.Namespace, stop: threading.Event
) -> bool:
    """Wait until the driver is loaded; False when stopped first. Raises on --driver-timeout."""
    containerised = config.runtime.driver_root == CONTAINERISED_DRIVER_ROOT
    ready = host.path(DRIVER_READY_MARKER) if containerised else host.proc / "driver/nvidia/version"
    if config.platform == "tegra":
        # Jetson's GPU driver (nvgpu) comes with L4T; /proc/driver/nvidia belongs to nvidia.ko,
        # which a module may not load at all.
        ready = host.path("/" + TEGRA_RELEASE_FILE)
    deadline = time.monotonic() + options.driver_timeout if options.driver_timeout else None
    announced = False
    while not ready.exists():
        if not announced:
            _log.info("waiting for the NVIDIA driver", extra=log.kv(until=str(ready)))
            announced = True
        if deadline is not None and time.monotonic() > deadline:
            raise UserError(
                f"the NVIDIA driver is not ready after {options.driver_timeout}s ({ready} is missing)"
            )
        if stop.wait(options.wait_interval):
            return False
    return True


def _on_stop_signals(stop: threading.Event) -> None:
    def handler(signum: int, _: FrameType | None) -> None:
        _log.info("stopping", extra=log.kv(signal=signal.Signals(signum).name))
        stop.set()

    signal.signal(signal.SIGTERM, handler)
    signal.signal(signal.SIGINT, handler)
