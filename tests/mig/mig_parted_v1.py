"""A strict reading of NVIDIA mig-parted's `version: v1` config file, as the GPU Operator's MIG
manager (mig-parted v0.15.0) parses it.

Modelled on `api/spec/v1/spec.go` (Spec and MigConfigSpec UnmarshalJSON: unknown keys are
errors at both levels, `version` must be v1, every config needs at least one entry, `devices`
is "all" or a list of integers, `mig-devices` is required when MIG is enabled and must be empty
when it is not) and on go-nvlib's `parseMigProfile` (`[<C>c.]<G>g.<GB>gb[+attr,…|-attr,…]`,
counts not negative and not all 0). The file reaches mig-parted through sigs.k8s.io/yaml, which
turns YAML into JSON first, so every key must be a string.
"""

from __future__ import annotations

import re
from typing import Any

_FIELD = {"c": r"(?P<c>[0-9]+)c", "g": r"(?P<g>[0-9]+)g", "gb": r"(?P<gb>[0-9]+)gb"}
_PROFILE = re.compile(rf"^({_FIELD['c']}\.)?{_FIELD['g']}\.{_FIELD['gb']}([+-](?P<attrs>.+))?$")
_ATTRIBUTE = re.compile(r"^[A-Za-z][A-Za-z0-9.]*[A-Za-z0-9]$|^[A-Za-z]$")
_DEVICE_FILTER = re.compile(r"^0x[0-9A-Fa-f]{8}$")
_ENTRY_KEYS = {"device-filter", "devices", "mig-enabled", "mig-devices"}


def profile_errors(profile: Any) -> list[str]:
    if not isinstance(profile, str) or not profile:
        return [f"{profile!r}: profile is the empty string or not a string"]
    if "+" in profile and "-" in profile:
        return [f"profile {profile!r} contains both '+/-' attributes"]
    found = _PROFILE.match(profile)
    if found is None:
        return [f"cannot parse fields of {profile!r}"]
    attrs = found.group("attrs")
    if attrs is not None:
        names = attrs.split(",")
        if len(set(names)) != len(names):
            return [f"cannot parse attributes of {profile!r}: non unique attribute in list"]
        if not all(_ATTRIBUTE.match(a) for a in names):
            return [f"cannot parse attributes of {profile!r}"]
    return []


def _entry_errors(where: str, entry: Any) -> list[str]:
    if not isinstance(entry, dict):
        return [f"{where}: not a mapping"]
    errors = [f"{where}: unexpected field: {k}" for k in entry if k not in _ENTRY_KEYS]
    errors += [
        f"{where}: missing required field: {k}"
        for k in ("devices", "mig-enabled")
        if k not in entry
    ]
    if "device-filter" in entry:
        found = entry["device-filter"]
        filters = [found] if isinstance(found, str) else found
        if not isinstance(filters, list) or not all(isinstance(f, str) for f in filters):
            errors.append(f"{where}.device-filter: not a string or a list of strings")
        else:
            # mig-parted compares the filter with "0x<device><vendor>" of each GPU.
            errors += [
                f"{where}.device-filter: {f!r} matches no GPU"
                for f in filters
                if not _DEVICE_FILTER.match(f)
            ]
    if "devices" in entry:
        devices = entry["devices"]
        if isinstance(devices, str):
            if devices != "all":
                errors.append(f"{where}.devices: invalid string input for 'devices': {devices}")
        elif not isinstance(devices, list) or not all(
            isinstance(d, int) and not isinstance(d, bool) for d in devices
        ):
            errors.append(f"{where}.devices: neither 'all' nor a list of integers")
    enabled = entry.get("mig-enabled")
    if "mig-enabled" in entry and not isinstance(enabled, bool):
        errors.append(f"{where}.mig-enabled: not a bool")
    devices_map = entry.get("mig-devices")
    if "mig-devices" in entry:
        if not isinstance(devices_map, dict):
            errors.append(f"{where}.mig-devices: not a mapping")
            devices_map = {}
        for profile, count in devices_map.items():
            errors += [
                f"{where}.mig-devices: invalid format for {profile!r}: {e}"
                for e in profile_errors(profile)
            ]
            if not isinstance(count, int) or isinstance(count, bool) or count < 0:
                errors.append(f"{where}.mig-devices: invalid count for {profile!r}: {count!r}")
        counts = [c for c in devices_map.values() if isinstance(c, int)]
        if devices_map and not any(c > 0 for c in counts):
            errors.append(f"{where}.mig-devices: all counts for all MigProfiles are 0")
    if enabled is True and devices_map is None:
        errors.append(f"{where}: missing required field 'mig-devices' when 'mig-enabled' is true")
    if enabled is False and devices_map:
        errors.append(f"{where}: MIG devices included when 'mig-enabled' is false")
    return errors


def validate_mig_parted(data: Any) -> list[str]:
    """Every reason mig-parted v0.15.0 would refuse this config."""
    if not isinstance(data, dict):
        return ["config: not a mapping"]
    if data and "version" not in data:
        return ["unable to parse with missing 'version' field"]
    if data.get("version") != "v1":
        return [f"unknown version: {data.get('version')}"]
    errors = [f"unexpected field: {k}" for k in data if k not in ("version", "mig-configs")]
    configs = data.get("mig-configs")
    if "mig-configs" not in data:
        return errors
    if not isinstance(configs, dict) or not configs:
        return [*errors, "at least one entry in 'mig-configs' is required"]
    for name, entries in configs.items():
        if not isinstance(name, str):
            errors.append(f"mig-configs: key {name!r} is not a string")
        if not isinstance(entries, list) or not entries:
            errors.append(f"at least one entry in '{name}' is required")
            continue
        for k, entry in enumerate(entries):
            errors += _entry_errors(f"mig-configs.{name}[{k}]", entry)
    return errors
