"""CRI-O: a drop-in in /etc/crio/crio.conf.d/ declaring the nvidia runtime.

CRI-O reads crio.conf, then every file under crio.conf.d in lexical order, sub-folders
included, the last value of an option winning (crio.conf.d(5), pkg/config UpdateFromPath). The nvidia runtime copies the host's default low-level
runtime's table (monitor, root, …) and swaps its binary, as nvidia-ctk does. The runtimes
table and default_runtime reload on SIGHUP from CRI-O 1.26 (`ReloadRuntimes`); older
releases need a restart.
"""

from __future__ import annotations

import copy
from typing import Any

from gpuconf.api.node_config import RuntimeSettings
from gpuconf.api.runtime_files import CRIO_CONFIG, CRIO_DROPIN, CRIO_DROPIN_DIR, RUNTIME_NAME
from gpuconf.formats import toml_writer
from gpuconf.node.runtimes.changes import FileChange, current
from gpuconf.node.runtimes.host import Host
from gpuconf.node.runtimes.toml_files import parse_toml
from gpuconf.node.runtimes.versions import Version

RELOADS_RUNTIMES_FROM = (1, 26, 0)
# What CRI-O uses when no file names a default runtime (crun from 1.31's packaging on; runc
# before); the first one the host's files declare wins.
BUILT_IN_DEFAULTS = ("crun", "runc")
# CRI-O reads every file it finds; setup reads at most this many.
_MAX_DROPINS = 256


def reloads_runtimes(crio: Version | None) -> bool:
    return crio is not None and crio >= RELOADS_RUNTIMES_FROM


def plan(settings: RuntimeSettings, host: Host) -> list[FileChange]:
    effective = effective_runtime_config(host)
    dropin = toml_writer.dumps(dropin_tables(settings, effective)).encode()
    path, old = current(host, CRIO_DROPIN)
    return [FileChange(CRIO_DROPIN, path, old, dropin)]


def effective_runtime_config(host: Host) -> dict[str, Any]:
    """`[crio.runtime]` as the host's files leave it, our own drop-in left out."""
    runtime: dict[str, Any] = {}
    for host_path in [CRIO_CONFIG, *_dropins(host)]:
        _, data = current(host, host_path)
        table = parse_toml(host_path, data).get("crio", {}).get("runtime", {})
        if not isinstance(table, dict):
            continue
        runtimes = {**runtime.get("runtimes", {}), **table.get("runtimes", {})}
        runtime = {**runtime, **table, "runtimes": runtimes}
    return runtime


def dropin_tables(settings: RuntimeSettings, effective: dict[str, Any]) -> dict[str, Any]:
    runtimes = effective.get("runtimes", {})
    base: dict[str, Any] = {}
    for name in (effective.get("default_runtime"), *BUILT_IN_DEFAULTS):
        if isinstance(name, str) and not name.startswith(RUNTIME_NAME) and name in runtimes:
            base = copy.deepcopy(runtimes[name])
            break
    nvidia = {**base, "runtime_path": settings.binary_path, "runtime_type": "oci"}
    table: dict[str, Any] = {"runtimes": {RUNTIME_NAME: nvidia}}
    if settings.set_as_default:
        table["default_runtime"] = RUNTIME_NAME
    return {"crio": {"runtime": table}}


def _dropins(host: Host) -> list[str]:
    """Every file under crio.conf.d in the order CRI-O reads them (`UpdateFromPath`:
    filepath.Walk, so lexical, into sub-folders, dotfiles too), our own left out."""
    found: list[str] = []

    def walk(folder: str) -> None:
        try:
            entries = sorted(host.path(folder).iterdir(), key=lambda entry: entry.name)
        except (FileNotFoundError, NotADirectoryError):
            return
        for entry in entries[: _MAX_DROPINS - len(found)]:
            path = f"{folder}/{entry.name}"
            if entry.is_dir() and not entry.is_symlink():
                walk(path)
            elif path != CRIO_DROPIN:
                found.append(path)

    walk(CRIO_DROPIN_DIR)
    return found[:_MAX_DROPINS]
