"""A strict reading of NVIDIA k8s-device-plugin's `api/config/v1` config file.

Modelled on the Go structs and their parse rules (config.go, flags.go, sharing.go,
replicas.go, resources.go, consts.go, strategy.go) and on the plugin's
`validateFlags`, per release (v0.17.0 to v0.20.0: `gdrcopyEnabled` from v0.18.0,
`sharedDevicesAllocationPolicy` from v0.20.0), with one difference: NVIDIA's parser silently ignores unknown keys
and, at run time, `resources`, `rename` and `devices`; here every one of those is an
error, because a key the plugin ignores is a setting the user does not get.
"""

from __future__ import annotations

import re
from typing import Any

MIG_STRATEGIES = ("none", "single", "mixed")
DEVICE_LIST_STRATEGIES = ("envvar", "volume-mounts", "cdi-annotations", "cdi-cri")
DEVICE_ID_STRATEGIES = ("uuid", "index")
DEVICE_DISCOVERY_STRATEGIES = ("auto", "nvml", "tegra")
SHARED_DEVICES_ALLOCATION_POLICIES = ("distributed", "packed")
CURRENT = "v0.20.0"
# Config keys and the first release that reads them.
_SINCE = {"gdrcopyEnabled": (0, 18), "sharedDevicesAllocationPolicy": (0, 20)}
MAX_RESOURCE_NAME_LENGTH = 63
RESOURCE_PREFIX = "nvidia.com"
SHARED_SUFFIX = ".shared"
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_DURATION = re.compile(r"^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$")

# Field name -> expected type, per struct (CommandLineFlags, PluginCommandLineFlags, ...).
_FLAGS: dict[str, type | tuple[type, ...]] = {
    "migStrategy": str,
    "failOnInitError": bool,
    "mpsRoot": str,
    "nvidiaDriverRoot": str,
    "nvidiaDevRoot": str,
    "gdrcopyEnabled": bool,
    "gdsEnabled": bool,
    "mofedEnabled": bool,
    "useNodeFeatureAPI": bool,
    "deviceDiscoveryStrategy": str,
    "plugin": dict,
    "gfd": dict,
}
_PLUGIN_FLAGS: dict[str, type | tuple[type, ...]] = {
    "passDeviceSpecs": bool,
    "deviceListStrategy": (str, list),
    "deviceIDStrategy": str,
    "cdiAnnotationPrefix": str,
    "nvidiaCTKPath": str,
    "containerDriverRoot": str,
    "sharedDevicesAllocationPolicy": str,
}
_GFD_FLAGS: dict[str, type | tuple[type, ...]] = {
    "oneshot": bool,
    "noTimestamp": bool,
    "sleepInterval": str,
    "outputFile": str,
    "machineTypeFile": str,
}
_REPLICATED_RESOURCES = {
    "renameByDefault": bool,
    "failRequestsGreaterThanOne": bool,
    "resources": list,
}
_REPLICATED_RESOURCE = {"name": str, "replicas": int}
# Parsed by NVIDIA but ignored at run time (or disabled): never acceptable in generated output.
_IGNORED_TOP = {"resources"}
_IGNORED_IN_RESOURCE = {"rename", "devices"}


def _typed(value: Any, expected: type | tuple[type, ...]) -> bool:
    if isinstance(value, bool) and expected is not bool and expected != (bool,):
        return False
    return isinstance(value, expected)


def _fields(
    errors: list[str],
    where: str,
    data: Any,
    fields: dict[str, type | tuple[type, ...]],
    ignored: set[str] | frozenset[str] = frozenset(),
) -> dict[str, Any]:
    if not isinstance(data, dict):
        errors.append(f"{where}: must be a mapping, not {type(data).__name__}")
        return {}
    for key, value in data.items():
        if key in ignored:
            errors.append(f"{where}.{key}: ignored by NVIDIA's plugin at run time")
        elif key not in fields:
            errors.append(f"{where}.{key}: unknown key")
        elif value is None or not _typed(value, fields[key]):
            errors.append(f"{where}.{key}: {value!r} has the wrong type")
    return {k: v for k, v in data.items() if k in fields and v is not None and _typed(v, fields[k])}


def _one_of(errors: list[str], where: str, value: Any, options: tuple[str, ...]) -> None:
    if value not in options:
        errors.append(f"{where}: {value!r} is not one of {', '.join(options)}")


def resource_name_errors(name: str) -> list[str]:
    """NewResourceName: prefixed with nvidia.com/, at most 63 characters, a DNS subdomain after '/'."""
    full = name if name.startswith(RESOURCE_PREFIX + "/") else f"{RESOURCE_PREFIX}/{name}"
    errors = []
    if full != name:
        errors.append(f"{name!r} lacks the {RESOURCE_PREFIX}/ prefix the plugin would add")
    if len(full) > MAX_RESOURCE_NAME_LENGTH:
        errors.append(f"{full!r} is longer than {MAX_RESOURCE_NAME_LENGTH} characters")
    if not _DNS_SUBDOMAIN.match(full.split("/", 1)[1]):
        errors.append(f"{full!r}: the part after '/' is not a DNS subdomain")
    return errors


def _release(release: str) -> tuple[int, int]:
    major, minor, _patch = release.removeprefix("v").split(".")
    return (int(major), int(minor))


def _known(
    fields: dict[str, type | tuple[type, ...]], release: str
) -> dict[str, type | tuple[type, ...]]:
    """The fields of one struct that this release's Go struct has."""
    return {k: v for k, v in fields.items() if _release(release) >= _SINCE.get(k, (0, 0))}


def _flags(errors: list[str], data: Any, release: str) -> dict[str, Any]:
    flags = _fields(errors, "flags", data, _known(_FLAGS, release))
    if "migStrategy" in flags:
        _one_of(errors, "flags.migStrategy", flags["migStrategy"], MIG_STRATEGIES)
    if "deviceDiscoveryStrategy" in flags:
        _one_of(
            errors,
            "flags.deviceDiscoveryStrategy",
            flags["deviceDiscoveryStrategy"],
            DEVICE_DISCOVERY_STRATEGIES,
        )
    if "plugin" in flags:
        plugin = _fields(errors, "flags.plugin", flags["plugin"], _known(_PLUGIN_FLAGS, release))
        if "deviceListStrategy" in plugin:
            strategies = plugin["deviceListStrategy"]
            strategies = [strategies] if isinstance(strategies, str) else strategies
            if not strategies:
                errors.append("flags.plugin.deviceListStrategy: at least one strategy is required")
            for k, strategy in enumerate(strategies):
                _one_of(
                    errors,
                    f"flags.plugin.deviceListStrategy[{k}]",
                    strategy,
                    DEVICE_LIST_STRATEGIES,
                )
        if "sharedDevicesAllocationPolicy" in plugin:
            _one_of(
                errors,
                "flags.plugin.sharedDevicesAllocationPolicy",
                plugin["sharedDevicesAllocationPolicy"],
                SHARED_DEVICES_ALLOCATION_POLICIES,
            )
        if "deviceIDStrategy" in plugin:
            _one_of(
                errors,
                "flags.plugin.deviceIDStrategy",
                plugin["deviceIDStrategy"],
                DEVICE_ID_STRATEGIES,
            )
    if "gfd" in flags:
        gfd = _fields(errors, "flags.gfd", flags["gfd"], _GFD_FLAGS)
        if "sleepInterval" in gfd and not _DURATION.match(gfd["sleepInterval"]):
            errors.append(f"flags.gfd.sleepInterval: {gfd['sleepInterval']!r} is not a duration")
    return flags


def _replicated(errors: list[str], where: str, data: Any) -> list[dict[str, Any]]:
    section = _fields(errors, where, data, _REPLICATED_RESOURCES)
    resources = section.get("resources")
    if not resources:
        errors.append(f"{where}.resources: no resources specified")
        return []
    names: set[str] = set()
    parsed = []
    for k, item in enumerate(resources):
        here = f"{where}.resources[{k}]"
        resource = _fields(errors, here, item, _REPLICATED_RESOURCE, _IGNORED_IN_RESOURCE)
        if "name" not in resource:
            errors.append(f"{here}: no resource name specified")
        else:
            errors.extend(f"{here}.name: {e}" for e in resource_name_errors(resource["name"]))
            if resource["name"] in names:
                errors.append(f"{here}.name: {resource['name']!r} is listed twice")
            names.add(resource["name"])
        if "replicas" not in resource:
            errors.append(f"{here}: no replicas specified")
        elif resource["replicas"] < 2:
            errors.append(f"{here}.replicas: number of replicas must be >= 2")
        parsed.append(resource)
    return parsed


def validate_config(data: Any, release: str = CURRENT) -> list[str]:
    """Every reason NVIDIA's plugin `release` (read strictly) would refuse or misread this config."""
    errors: list[str] = []
    top = _fields(
        errors,
        "config",
        data,
        {"version": str, "flags": dict, "sharing": dict, "imex": dict},
        _IGNORED_TOP,
    )
    if top.get("version", "v1") != "v1":
        errors.append(f"config.version: unknown version: {top['version']}")
    if "version" not in top:
        errors.append("config.version: missing (NVIDIA defaults it; gpuconf always writes v1)")
    flags = _flags(errors, top.get("flags", {}), release)
    if "imex" in top:
        imex = _fields(errors, "imex", top["imex"], {"channelIDs": list, "required": bool})
        for k, channel in enumerate(imex.get("channelIDs", [])):
            if not _typed(channel, int) or not 0 <= channel <= 2047:
                errors.append(f"imex.channelIDs[{k}]: {channel!r} is not a channel ID (0-2047)")
    sharing = _fields(errors, "sharing", top.get("sharing", {}), {"timeSlicing": dict, "mps": dict})
    if "timeSlicing" in sharing and "mps" in sharing:
        errors.append("sharing: timeSlicing is ignored when mps is set")
    for section in ("timeSlicing", "mps"):
        if section in sharing:
            _replicated(errors, f"sharing.{section}", sharing[section])
    if "mps" in sharing:
        if flags.get("migStrategy") == "mixed":
            errors.append("flags.migStrategy: using --mig-strategy=mixed is not supported with MPS")
        if not flags.get("mpsRoot"):
            errors.append("flags.mpsRoot: using MPS requires --mps-root to be specified")
    return errors


def advertised_resources(data: dict[str, Any], mig_profiles: set[str]) -> set[str]:
    """The extended resources the plugin advertises for this config on a node with these MIG profiles."""
    flags = data.get("flags", {})
    strategy = flags.get("migStrategy", "none")
    names = {f"{RESOURCE_PREFIX}/gpu"}
    if strategy == "mixed":
        names |= {f"{RESOURCE_PREFIX}/mig-{profile}" for profile in mig_profiles}
    sharing = data.get("sharing", {})
    section = sharing.get("mps") or sharing.get("timeSlicing")
    if section and section.get("renameByDefault"):
        replicated = {r["name"] for r in section["resources"]}
        names = {n + SHARED_SUFFIX if n in replicated else n for n in names}
    return names
