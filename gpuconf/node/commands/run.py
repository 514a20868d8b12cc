"""`gpuconf node run`: serve the kubelet device-plugin API until SIGTERM."""

from __future__ import annotations

import argparse
import signal
from dataclasses import dataclass
from pathlib import Path
from types import FrameType

from gpuconf.api.node_facts import MAX_UNIX_SOCKET_PATH
from gpuconf.errors import ExitCode, UserError
from gpuconf.node import log
from gpuconf.node.config_watch import ConfigInvalid, read_config
from gpuconf.node.metrics import Metrics
from gpuconf.node.metrics_http import MetricsPortUnavailable, MetricsServer
from gpuconf.node.nvml.api import Nvml
from gpuconf.node.supervisor import RunSettings, Supervisor

_log = log.get("run")


class _StartFailed(Exception):
    pass


def run(options: argparse.Namespace) -> int:
    log.configure()
    try:
        return _run(options)
    except ConfigInvalid as invalid:
        for problem in invalid.diagnostics:
            _log.error("cannot start", extra=log.kv(problem=problem.as_text()))
        return int(ExitCode.INVALID_INPUT)
    except _StartFailed as failed:
        _log.error("cannot start", extra=log.kv(problem=str(failed)))
        return int(ExitCode.INVALID_INPUT)
    except KeyboardInterrupt:
        return int(ExitCode.INTERRUPTED)
    except Exception as error:  # a bug: say what happened in one line, not a traceback
        _log.critical("internal error", extra=log.kv(error=f"{type(error).__name__}: {error}"))
        return int(ExitCode.INTERNAL)


@dataclass(frozen=True)
class _Started:
    supervisor: Supervisor
    nvml: Nvml
    http: MetricsServer | None


def _run(options: argparse.Namespace) -> int:
    try:
        started = _start(options)
    except ConfigInvalid:
        raise
    except UserError as failed:  # only here: once serving, problems are retried where they arise
        raise _StartFailed(str(failed)) from None
    try:
        started.supervisor.run()
    finally:
        if started.http is not None:
            started.http.stop()
        started.nvml.close()
    _log.info("stopped; sockets removed")
    return int(ExitCode.OK)


def _start(options: argparse.Namespace) -> _Started:
    settings = RunSettings(
        options.node_name,
        Path(options.plugin_dir),
        Path(options.config),
        Path(options.pod_resources_socket),
        Path(options.state_dir),
    )
    config = read_config(settings.config_path)
    _check_plugin_dir(settings.plugin_dir, [r.socket_name() for r in config.config.resources])
    nvml = _open_nvml(options.nvml)
    metrics = Metrics()
    supervisor = Supervisor(settings, config, nvml, metrics)
    port = options.metrics_port if options.metrics_port is not None else config.config.metrics_port
    http = _start_metrics(port, metrics, supervisor) if port else None

    def stop(signum: int, _: FrameType | None) -> None:
        _log.info("stopping", extra=log.kv(signal=signal.Signals(signum).name))
        supervisor.request_stop()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGHUP, lambda _signum, _frame: supervisor.request_reload())
    _log.info(
        "starting",
        extra=log.kv(
            node=settings.node_name, plugin_dir=settings.plugin_dir, metrics_port=port or "off"
        ),
    )
    try:
        supervisor.start()
    except BaseException:
        if http is not None:
            http.stop()
        nvml.close()
        raise
    return _Started(supervisor, nvml, http)


def _check_plugin_dir(plugin_dir: Path, socket_names: list[str]) -> None:
    if not plugin_dir.is_dir():
        said = "is not a folder" if plugin_dir.exists() else "does not exist"
        raise _StartFailed(f"{plugin_dir}: the kubelet device-plugin directory {said}")
    for name in socket_names:
        path = plugin_dir.absolute() / name
        if len(str(path).encode()) > MAX_UNIX_SOCKET_PATH:
            raise _StartFailed(
                f"{path}: unix socket paths are limited to {MAX_UNIX_SOCKET_PATH} bytes; "
                "use a shorter --plugin-dir or resource name"
            )


def _open_nvml(spec: str) -> Nvml:
    from gpuconf.node.nvml.select import open_nvml

    try:
        return open_nvml(spec)
    except Exception as error:  # no driver, bad fake file, unknown spec: all the user's to fix
        raise _StartFailed(f"cannot open NVML ({spec}): {error}") from None


def _start_metrics(port: int, metrics: Metrics, supervisor: Supervisor) -> MetricsServer:
    try:
        server = MetricsServer(port, metrics.registry, supervisor.alive, supervisor.status)
    except MetricsPortUnavailable as error:
        raise _StartFailed(str(error)) from None
    server.start()
    return server
