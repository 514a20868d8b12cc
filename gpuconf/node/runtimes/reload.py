"""Make the engine load its changed config: a signal, a systemd restart, or nothing.

- dockerd reloads `runtimes`, `default-runtime` and `features` on SIGHUP; containers keep
  running (a restart would stop them unless live-restore is on).
- containerd has no reload: SIGHUP makes it exit and systemd starts it again (what NVIDIA's
  installer does); a systemd restart is the same thing said out loud. Containers keep running
  in their shims; CRI calls fail for a few seconds.
- CRI-O reloads its runtimes table on SIGHUP from 1.26; before that only a restart loads it.
- k3s renders containerd's config only when it starts: it is restarted only when asked.
"""

from __future__ import annotations

import os
import signal
import socket
import stat
from dataclasses import dataclass
from pathlib import Path

from gpuconf.api.node_config import RuntimeSettings
from gpuconf.api.runtime_files import default_restart
from gpuconf.errors import UserError
from gpuconf.node.runtimes import crio
from gpuconf.node.runtimes.host import Host
from gpuconf.node.runtimes.systemd import UnitRestartFailed, restart_unit, unit_state
from gpuconf.node.runtimes.versions import engine_version

PROCESS_NAMES = {"docker": "dockerd", "containerd": "containerd", "cri-o": "crio"}
SYSTEMD_UNITS = {"docker": ["docker"], "containerd": ["containerd"], "cri-o": ["crio"]}
K3S_UNITS = ["k3s", "k3s-agent"]
ENGINE_SOCKETS = {
    # Each daemon's default listening socket: containerd defaults/defaults_unix.go
    # DefaultAddress, docker opts/hosts.go DefaultUnixSocket, CRI-O crio.conf(5) `listen`.
    "docker": "/var/run/docker.sock",
    "containerd": "/run/containerd/containerd.sock",
    "cri-o": "/var/run/crio/crio.sock",
}


class ReloadError(UserError):
    """The engine could not be made to load its config; the files are written."""


@dataclass(frozen=True)
class Reload:
    mode: str
    """signal, systemd or none: what was (or would be) done."""
    why: str


def chosen(settings: RuntimeSettings, host: Host) -> Reload:
    """The reload a changed config gets, ``restart: auto`` resolved for this engine and host."""
    engine, mode = settings.engine, settings.restart
    if engine == "k3s" and mode == "signal":
        raise ReloadError("k3s has no config reload; use restart: systemd or none")
    if mode != "auto":
        return Reload(mode, "restart: " + mode)
    if engine == "cri-o":
        version = engine_version(host, "crio")
        if crio.reloads_runtimes(version):
            return Reload("signal", "CRI-O reloads runtimes on SIGHUP from 1.26")
        return Reload("systemd", "CRI-O before 1.26 (or unknown) loads runtimes only at start")
    why = {
        "docker": "dockerd reloads runtimes on SIGHUP; running containers are untouched",
        "containerd": "containerd has no reload; its shims keep containers running",
        "k3s": "k3s reads its config only at start; restart it when convenient",
    }[engine]
    return Reload(default_restart(engine), why)


def perform(
    settings: RuntimeSettings, host: Host, reload: Reload, owed_since: float | None = None
) -> str:
    """Do ``reload``; returns what was done, in words for the log. ``owed_since``: when an
    earlier run wrote the config it did not get to load (see systemd.restart_unit)."""
    if reload.mode == "none":
        return f"{settings.engine} not reloaded ({reload.why})"
    if reload.mode == "signal":
        return _signal(settings.engine, host)
    return _systemd_restart(settings.engine, host, owed_since)


def engine_processes(engine: str, host: Host) -> list[int]:
    """PIDs whose command name is exactly the engine's daemon (never its shims), in the host's
    PID namespace: with hostPID every process on the node shows, and a dockerd or containerd
    in a container (Docker-in-Docker, kind) is not the host's engine."""
    name = PROCESS_NAMES[engine]
    host_namespace = _pid_namespace(host.proc / "1")
    found = []
    for entry in host.proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            command = (entry / "comm").read_text().strip()
        except OSError:
            continue
        if command == name and host_namespace in (None, _pid_namespace(entry)):
            found.append(int(entry.name))
    return sorted(found)


def _pid_namespace(process: Path) -> str | None:
    """The PID namespace a /proc entry's process lives in ("pid:[4026531836]"); None if unknown."""
    try:
        return os.readlink(process / "ns" / "pid")
    except OSError:
        return None


def _signal(engine: str, host: Host) -> str:
    pids = engine_processes(engine, host)
    if not pids:
        return _not_found(engine, host)
    for pid in pids:
        try:
            os.kill(pid, signal.SIGHUP)
        except ProcessLookupError:
            continue
        except PermissionError as error:
            raise ReloadError(
                f"cannot signal {PROCESS_NAMES[engine]} (pid {pid}): {error}"
            ) from None
    return f"sent SIGHUP to {PROCESS_NAMES[engine]} (pid {', '.join(map(str, pids))})"


def _not_found(engine: str, host: Host) -> str:
    """No daemon in the host's /proc as this process sees it: not running, or not visible (a pod
    without hostPID, a wrong --proc). Its socket answering under the host root tells them apart."""
    daemon, address = PROCESS_NAMES[engine], ENGINE_SOCKETS[engine]
    if not _answers(host.path(address)):
        return f"{daemon} is not running; it reads the new config when it starts"
    raise ReloadError(
        f"{daemon} answers on {address} but is not among the processes in {host.proc}: setup "
        "cannot signal it without the host's PID namespace (hostPID: true in the setup "
        "DaemonSet, --proc naming the host's /proc); the config is written, the reload still owed"
    )


def _answers(path: Path) -> bool:
    """Whether a Unix socket at ``path`` accepts a connection (a stale one left by a daemon that
    died refuses). Reached through a descriptor of its folder: sun_path holds 108 bytes."""
    try:
        if not stat.S_ISSOCK(path.stat().st_mode):
            return False
        folder = os.open(path.parent, os.O_PATH | os.O_DIRECTORY)
    except OSError:
        return False
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
            client.settimeout(5)
            client.connect(f"/proc/self/fd/{folder}/{path.name}")
        return True
    except (ConnectionRefusedError, FileNotFoundError):
        return False
    except OSError:
        return True  # there, but not ours to connect to (permissions, a full backlog): running
    finally:
        os.close(folder)


def _systemd_restart(engine: str, host: Host, owed_since: float | None) -> str:
    units = K3S_UNITS if engine == "k3s" else SYSTEMD_UNITS[engine]
    try:
        for unit in units:
            if len(units) > 1 and not unit_state(host, unit).up:
                continue
            return restart_unit(host, unit, owed_since)
    except UnitRestartFailed as failed:
        raise ReloadError(str(failed)) from None
    raise ReloadError(f"none of the units {', '.join(units)} is active on the host")


def owed_marker_text(engine: str, written_at: float) -> bytes:
    """The reload-owed marker: the engine, and when its config was written (CLOCK_MONOTONIC
    seconds, the clock systemd stamps units with) so a later run can tell whether the engine
    came up since."""
    return f"engine: {engine}\nwritten-monotonic: {written_at:.6f}\n".encode()


def owed_since(marker: bytes) -> float | None:
    """When the owed config was written; None for a marker that does not say (an older setup)."""
    for line in marker.decode(errors="replace").splitlines():
        key, _, value = line.partition(": ")
        if key == "written-monotonic":
            try:
                return float(value)
            except ValueError:
                return None
    return None
