"""CRI-O: a drop-in in /etc/crio/crio.conf.d/ declaring the nvidia runtime.

CRI-O reads crio.conf, then every file under crio.conf.d in lexical order, sub-folders
included, the last value of an option winning (crio.conf.d(5), pkg/config UpdateFromPath):
a file read after the drop-in that sets what the drop-in sets is refused. The nvidia runtime
copies the host's default low-level runtime's table (monitor, root, …) and swaps its binary,
as nvidia-ctk does. The runtimes
table and default_runtime reload on SIGHUP from CRI-O 1.26 (`ReloadRuntimes`); older
releases need a restart.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from typing import Any

from gpuconf.api.node_config import RuntimeSettings
from gpuconf.api.runtime_files import CRIO_CONFIG, CRIO_DROPIN, CRIO_DROPIN_DIR, RUNTIME_NAME
from gpuconf.formats import toml_writer
from gpuconf.node.runtimes.changes import FileChange, current
from gpuconf.node.runtimes.host import Host, HostPathError
from gpuconf.node.runtimes.toml_files import parse_toml, string_at, table_at
from gpuconf.node.runtimes.versions import Version

RELOADS_RUNTIMES_FROM = (1, 26, 0)
# What CRI-O uses when no file names a default runtime (crun from 1.31's packaging on; runc
# before); the first one the host's files declare wins.
BUILT_IN_DEFAULTS = ("crun", "runc")
# CRI-O reads every file it finds; setup refuses a folder with more than this many.
_MAX_DROPINS = 256


def reloads_runtimes(crio: Version | None) -> bool:
    return crio is not None and crio >= RELOADS_RUNTIMES_FROM


def plan(settings: RuntimeSettings, host: Host) -> list[FileChange]:
    order = _read_order(host)
    tables = {
        path: _runtime_table(host, path) for path in [CRIO_CONFIG, *order] if path != CRIO_DROPIN
    }
    _refuse_overrides_after_dropin(settings, order, tables)
    effective = effective_runtime_config(tables.values())
    dropin = toml_writer.dumps(dropin_tables(settings, effective)).encode()
    path, old = current(host, CRIO_DROPIN)
    return [FileChange(CRIO_DROPIN, path, old, dropin)]


def effective_runtime_config(tables: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """`[crio.runtime]` as the host's files leave it, read in order (our drop-in left out)."""
    runtime: dict[str, Any] = {}
    for table in tables:
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


def _runtime_table(host: Host, host_path: str) -> dict[str, Any]:
    """`[crio.runtime]` of one file; a part of the wrong type is refused, as CRI-O refuses it."""
    _, data = current(host, host_path)
    document = parse_toml(host_path, data)
    table = table_at(host_path, document, ("crio", "runtime"))
    string_at(host_path, table, ("crio", "runtime", "default_runtime"))
    for name in table_at(host_path, document, ("crio", "runtime", "runtimes")):
        table_at(host_path, document, ("crio", "runtime", "runtimes", name))
    return table


def _refuse_overrides_after_dropin(
    settings: RuntimeSettings, order: list[str], tables: dict[str, dict[str, Any]]
) -> None:
    for host_path in order[order.index(CRIO_DROPIN) + 1 :]:
        table = tables[host_path]
        overridden = []
        if settings.set_as_default and "default_runtime" in table:
            overridden.append("default_runtime")
        if RUNTIME_NAME in table.get("runtimes", {}):  # a table: _runtime_table saw to it
            overridden.append(f"runtimes.{RUNTIME_NAME}")
        if overridden:
            raise HostPathError(
                f"{host_path} is read after {CRIO_DROPIN} and sets crio.runtime."
                f"{overridden[0]}, overriding the nvidia runtime's; remove it there or name the "
                "file before 99-nvidia.conf"
            )


def _read_order(host: Host) -> list[str]:
    """Every file under crio.conf.d in the order CRI-O reads them (`UpdateFromPath`:
    filepath.Walk, so lexical, into sub-folders, dotfiles too, links to folders not followed),
    our own drop-in where it is read once written."""
    found: list[str] = []

    def walk(folder: str) -> None:
        try:
            names = {entry.name for entry in host.path(folder).iterdir()}
        except (FileNotFoundError, NotADirectoryError):
            names = set()
        if folder == CRIO_DROPIN_DIR:
            names.add(CRIO_DROPIN.rpartition("/")[2])
        for name in sorted(names):
            path = f"{folder}/{name}"
            if path != CRIO_DROPIN and host.path(path).is_dir():
                if (host.path(folder) / name).is_symlink():
                    # filepath.Walk does not follow it: CRI-O reads it as a file and fails.
                    raise HostPathError(
                        f"{path} is a link to a folder, which CRI-O cannot read as a drop-in; "
                        "left untouched (replace it with the folder or the files)"
                    )
                walk(path)
                continue
            found.append(path)
            if len(found) > _MAX_DROPINS:
                raise HostPathError(
                    f"{CRIO_DROPIN_DIR} holds more than {_MAX_DROPINS} files; setup cannot tell "
                    "which CRI-O reads last; left untouched"
                )

    walk(CRIO_DROPIN_DIR)
    return found
