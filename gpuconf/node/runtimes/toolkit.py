"""The NVIDIA container toolkit's config.toml: the keys gpuconf needs (api.runtime_files.
toolkit_settings), merged so the host's other keys stay.

A containerised driver lives under /run/nvidia/driver: with the CLI's root, its ldconfig moves
there too, as NVIDIA's installer sets them. The toolkit reads this file at every container
start: nothing to reload.
"""

from __future__ import annotations

import copy
from typing import Any

from gpuconf.api.node_config import NodeConfig
from gpuconf.api.runtime_files import TOOLKIT_CLI, TOOLKIT_CONFIG, toolkit_settings
from gpuconf.formats import toml_writer
from gpuconf.node.runtimes.changes import FileChange, current
from gpuconf.node.runtimes.host import Host
from gpuconf.node.runtimes.toml_files import parse_toml, string_at, table_at

DEFAULT_LDCONFIG = "@/sbin/ldconfig"


def plan(config: NodeConfig, host: Host) -> list[FileChange]:
    wanted = toolkit_settings(config.device_list_strategy, config.runtime.driver_root)
    if not wanted:
        return []  # the host's file is neither read nor judged
    path, old = current(host, TOOLKIT_CONFIG)
    existing = parse_toml(TOOLKIT_CONFIG, old)
    _check_shape(existing, wanted)
    merged = merged_config(existing, wanted)
    new = old if old is not None and merged == existing else toml_writer.dumps(merged).encode()
    return [FileChange(TOOLKIT_CONFIG, path, old, new)]


def _check_shape(existing: dict[str, Any], wanted: dict[str, Any]) -> None:
    """The tables setup merges into, and the ldconfig it moves, are of the type the toolkit reads."""
    for key, value in wanted.items():
        if isinstance(value, dict):
            table = table_at(TOOLKIT_CONFIG, existing, (key,))
            if key == TOOLKIT_CLI:
                string_at(TOOLKIT_CONFIG, table, (key, "ldconfig"))


def merged_config(existing: dict[str, Any], wanted: dict[str, Any]) -> dict[str, Any]:
    merged = copy.deepcopy(existing)
    for key, value in wanted.items():
        if isinstance(value, dict):
            merged[key] = {**merged.get(key, {}), **value}  # a table: _check_shape saw to it
        else:
            merged[key] = value
    cli = merged.get(TOOLKIT_CLI)
    if isinstance(cli, dict) and TOOLKIT_CLI in wanted:
        cli["ldconfig"] = ldconfig_under(
            wanted[TOOLKIT_CLI]["root"], cli.get("ldconfig", DEFAULT_LDCONFIG)
        )
    return merged


def ldconfig_under(driver_root: str, ldconfig: str) -> str:
    """`@/sbin/ldconfig` → `@/run/nvidia/driver/sbin/ldconfig` (the `@` means: on the host)."""
    if not ldconfig.startswith("@") or ldconfig.startswith("@" + driver_root.rstrip("/") + "/"):
        return ldconfig
    return "@" + driver_root.rstrip("/") + "/" + ldconfig[1:].lstrip("/")
