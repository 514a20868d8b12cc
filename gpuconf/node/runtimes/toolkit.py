"""The NVIDIA container toolkit's config.toml: the few keys gpuconf needs, the host's others kept.

- With volume-mounts or CDI device lists, an unprivileged pod must not get GPUs by setting
  NVIDIA_VISIBLE_DEVICES itself (it would bypass the plugin and the quotas), so the toolkit
  stops honouring that variable for unprivileged containers.
- volume-mounts needs the toolkit to read device lists from mounts.
- A containerised driver lives under /run/nvidia/driver: the toolkit's CLI root and ldconfig
  point there, as NVIDIA's installer sets them.
The toolkit reads this file at every container start: nothing to reload.
"""

from __future__ import annotations

import copy
from typing import Any

from gpuconf.api.node_config import NodeConfig
from gpuconf.api.runtime_files import TOOLKIT_CONFIG
from gpuconf.formats import toml_writer
from gpuconf.node.runtimes.changes import FileChange, current
from gpuconf.node.runtimes.host import Host
from gpuconf.node.runtimes.toml_files import parse_toml

ENVVAR_WHEN_UNPRIVILEGED = "accept-nvidia-visible-devices-envvar-when-unprivileged"
AS_VOLUME_MOUNTS = "accept-nvidia-visible-devices-as-volume-mounts"
CLI = "nvidia-container-cli"
DEFAULT_LDCONFIG = "@/sbin/ldconfig"


def wanted_settings(config: NodeConfig) -> dict[str, Any]:
    """The keys gpuconf sets, as nested tables; empty when the toolkit's defaults are right."""
    wanted: dict[str, Any] = {}
    strategy = config.device_list_strategy
    if strategy in ("volume-mounts", "cdi"):
        wanted[ENVVAR_WHEN_UNPRIVILEGED] = False
    if strategy == "volume-mounts":
        wanted[AS_VOLUME_MOUNTS] = True
    if config.runtime.driver_root != "/":
        wanted[CLI] = {"root": config.runtime.driver_root}
    return wanted


def plan(config: NodeConfig, host: Host) -> list[FileChange]:
    wanted = wanted_settings(config)
    path, old = current(host, TOOLKIT_CONFIG)
    existing = parse_toml(TOOLKIT_CONFIG, old)
    if not wanted:
        return []
    merged = merged_config(existing, wanted)
    new = old if old is not None and merged == existing else toml_writer.dumps(merged).encode()
    return [FileChange(TOOLKIT_CONFIG, path, old, new)]


def merged_config(existing: dict[str, Any], wanted: dict[str, Any]) -> dict[str, Any]:
    merged = copy.deepcopy(existing)
    for key, value in wanted.items():
        if isinstance(value, dict):
            table = merged.get(key)
            merged[key] = {**(table if isinstance(table, dict) else {}), **value}
        else:
            merged[key] = value
    cli = merged.get(CLI)
    if isinstance(cli, dict) and CLI in wanted:
        cli["ldconfig"] = ldconfig_under(wanted[CLI]["root"], cli.get("ldconfig", DEFAULT_LDCONFIG))
    return merged


def ldconfig_under(driver_root: str, ldconfig: str) -> str:
    """`@/sbin/ldconfig` → `@/run/nvidia/driver/sbin/ldconfig` (the `@` means: on the host)."""
    if not ldconfig.startswith("@") or ldconfig.startswith("@" + driver_root.rstrip("/") + "/"):
        return ldconfig
    return "@" + driver_root.rstrip("/") + "/" + ldconfig[1:].lstrip("/")
