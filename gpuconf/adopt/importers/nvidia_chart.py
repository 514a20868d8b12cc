"""`gpuconf import nvidia-chart VALUES [CONFIG…]`: a cluster file (plugin: nvidia) from the values
given to NVIDIA's device-plugin Helm chart and its config files.

How the chart reads them (NVIDIA/k8s-device-plugin, deployments/helm/nvidia-device-plugin):
`config.map` holds named config files (values.yaml), or `config.name` names a ConfigMap made
beforehand whose keys are the names (give its manifest as CONFIG, or a bare config file, named by
its file name); the config-manager sidecar gives a node the config named by its
`nvidia.com/device-plugin.config` label, else `config.default` (templates/_helpers.tpl,
hasDefaultConfig: else the one named "default", else the only one). Top-level values become the
plugin's environment (templates/daemonset-device-plugin.yml: migStrategy → MIG_STRATEGY, …), which
its command puts before the config file's flags.

Each named config becomes a pool whose nodes carry that label, and a class per pool: whole GPUs,
or its time-slicing or MPS replicas. The GPUs of each pool are not in any of these files:
`--gpus CONFIG=MODEL:COUNT:NODES` gives them (NODES: how many nodes run that config)."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple, get_args

from gpuconf.adopt.importers.sources import Source, embedded
from gpuconf.api.base import POOL_NAME_MAX
from gpuconf.api.cluster.nvidia_components import NvidiaPluginRelease
from gpuconf.api.cluster.pool import MAX_POOL_SIZE
from gpuconf.api.node_facts import MAX_GPUS_PER_NODE
from gpuconf.diagnostics import Diagnostic, KeyPath
from gpuconf.errors import UsageError
from gpuconf.gpus.nvidia_plugin_releases import (
    DEVICE_ID_STRATEGY,
    FAIL_ON_INIT_ERROR,
    NVIDIA_DEVICE_LISTS,
    PASS_DEVICE_SPECS,
)
from gpuconf.gpus.resource_names import NVIDIA_GPU

CONFIG_LABEL = "nvidia.com/device-plugin.config"
"""The node label the chart's config-manager reads (daemonset-device-plugin.yml, NODE_LABEL)."""
GPU_PRESENT_LABEL = "nvidia.com/gpu.present"
"""What the chart's default affinity selects GPU nodes by, with NFD's PCI labels."""
# The values the chart turns into the plugin's environment, which wins over the config file.
VALUE_FLAGS: Mapping[str, KeyPath] = {
    "migStrategy": ("flags", "migStrategy"),
    "failOnInitError": ("flags", "failOnInitError"),
    "compatWithCPUManager": ("flags", "plugin", "passDeviceSpecs"),
    "deviceListStrategy": ("flags", "plugin", "deviceListStrategy"),
    "deviceIDStrategy": ("flags", "plugin", "deviceIDStrategy"),
    "nvidiaDriverRoot": ("flags", "nvidiaDriverRoot"),
}
# Values gpuconf reads; anything else set in VALUES is listed as not imported.
READ_VALUES = frozenset({*VALUE_FLAGS, "config", "image"})
NVIDIA_DEFAULTS: Mapping[KeyPath, Any] = {
    ("flags", "migStrategy"): "none",
    ("flags", "failOnInitError"): FAIL_ON_INIT_ERROR,
    ("flags", "plugin", "passDeviceSpecs"): PASS_DEVICE_SPECS,
    ("flags", "plugin", "deviceIDStrategy"): DEVICE_ID_STRATEGY,
    ("flags", "nvidiaDriverRoot"): "/",
}
"""The flags gpuconf's rendered config sets as cmd/nvidia-device-plugin/main.go defaults them."""
SHARING_SECTIONS = {"timeSlicing": "time-slicing", "mps": "mps"}
DEVICE_LISTS = {nvidia: ours for ours, nvidia in NVIDIA_DEVICE_LISTS.items()}
"""NVIDIA's device list strategies gpuconf renders, by the spec value that renders each; any other
(cdi-annotations: CDI devices named in annotations, not the CRI field) is listed as not imported."""


class GpuShape(NamedTuple):
    model: str
    gpus: int
    nodes: int


class NamedConfig(NamedTuple):
    name: str
    config: Source
    held_by: Source
    key: KeyPath
    """Where the config stands in the file that holds it."""


class Imported(NamedTuple):
    spec: dict[str, Any]
    left_out: list[Diagnostic]


def pool_name(config: str) -> str:
    """A pool name (and class) for a config; the node label keeps the config's name."""
    label = re.sub(r"[^a-z0-9-]+", "-", config.lower()).strip("-")[:POOL_NAME_MAX].rstrip("-")
    return label or "default"


def parse_gpus(given: Sequence[str]) -> dict[str, GpuShape]:
    """`CONFIG=MODEL:COUNT:NODES` arguments."""
    shapes: dict[str, GpuShape] = {}
    for argument in given:
        name, _, shape = argument.partition("=")
        model, _, numbers = shape.partition(":")
        count, _, nodes = numbers.partition(":")
        if not name or not model or not count.isdigit() or not nodes.isdigit():
            raise UsageError(
                f"--gpus {argument}: write CONFIG=MODEL:COUNT:NODES, e.g. default=L4:2:10 "
                "(10 nodes of 2 L4s run config default)"
            )
        if not 1 <= int(count) <= MAX_GPUS_PER_NODE:
            raise UsageError(f"--gpus {argument}: a node has 1 to {MAX_GPUS_PER_NODE} GPUs")
        if not 1 <= int(nodes) <= MAX_POOL_SIZE:
            raise UsageError(f"--gpus {argument}: a pool has 1 to {MAX_POOL_SIZE} nodes")
        shapes[name] = GpuShape(model, int(count), int(nodes))
    return shapes


def named_configs(
    values: Source, configs: Sequence[tuple[Source, Path | None]]
) -> list[NamedConfig]:
    """`configs`: each config source, and the file it came from (None: standard input)."""
    out: list[NamedConfig] = []
    config_map = values.at("config", "map")
    if isinstance(config_map, dict):
        for name, text in config_map.items():
            key: KeyPath = ("config", "map", name)
            if not isinstance(text, str):
                raise values.wrong(key, "a config.map entry is a config file's text")
            out.append(NamedConfig(name, embedded(text, values, key), values, key))
    for source, path in configs:
        if source.at("kind") == "ConfigMap":
            data = source.at("data")
            for name, text in (data if isinstance(data, dict) else {}).items():
                key = ("data", str(name))
                if isinstance(text, str):
                    out.append(NamedConfig(name, embedded(text, source, key), source, key))
        elif path is None:
            raise source.wrong(
                (),
                "a config file on standard input has no file name to name its config by",
                "pipe the plugin's ConfigMap instead, or give the config file by its name",
            )
        else:
            out.append(NamedConfig(path.stem, source, source, ()))
    names = [c.name for c in out]
    for config in out:
        if names.count(config.name) > 1:
            raise config.held_by.wrong(config.key, f"config {config.name!r} is given twice")
    return out


def default_config(values: Source, configs: Sequence[NamedConfig]) -> str | None:
    """templates/_helpers.tpl, hasDefaultConfig, with the chart's default fallbackStrategies."""
    chosen = values.at("config", "default")
    if isinstance(chosen, str) and chosen:
        return chosen
    strategies = values.at("config", "fallbackStrategies") or ["named", "single"]
    names = [c.name for c in configs]
    if "named" in strategies and "default" in names:
        return "default"
    if "single" in strategies and len(names) == 1:
        return names[0]
    return None


def import_chart(
    values: Source,
    configs: Sequence[tuple[Source, Path | None]],
    gpus: Mapping[str, GpuShape],
    kubernetes_version: str,
    engine: str | None = None,
) -> Imported:
    """`engine`: the nodes' container engine, where the source says it."""
    named = named_configs(values, configs)
    left_out = _unread_values(values)
    if not named:
        # No config file: every GPU node runs the plugin with the chart's values alone.
        named = [NamedConfig("default", Source(values.located._replace(data={})), values, ())]
    if engine is None:
        left_out.append(
            values.not_imported(
                (),
                "the chart's files do not say which container runtime the nodes run: "
                "containerd assumed",
                "set each pool's runtime.engine (docker, containerd, k3s) before rendering",
            )
        )
    unknown = [name for name in gpus if name not in {c.name for c in named}]
    if unknown:
        shape = gpus[unknown[0]]
        raise UsageError(
            f"--gpus {unknown[0]}={shape.model}:{shape.gpus}:{shape.nodes}: the chart's files have "
            f"no config {unknown[0]!r} (their configs: {', '.join(sorted(c.name for c in named))})"
        )
    missing = sorted(c.name for c in named if c.name not in gpus)
    if missing:
        raise UsageError(
            "the chart's files do not say which GPUs the nodes have: give --gpus "
            + " ".join(f"{name}=MODEL:COUNT:NODES" for name in missing)
        )
    default = default_config(values, named)
    pools: list[dict[str, Any]] = []
    classes: list[dict[str, Any]] = []
    renames: dict[bool, NamedConfig] = {}
    device_lists: set[str] = set()
    for config in named:
        pool, pool_classes, rename, device_list = _pool(
            config, values, gpus[config.name], engine or "containerd", left_out
        )
        if len(named) > 1 and config.name == default:
            left_out.append(
                values.not_imported(
                    ("config", "default"),
                    f"nodes without the {CONFIG_LABEL} label got config {default!r}; "
                    "gpuconf's pool selects only nodes labelled with it",
                    f"label those nodes {CONFIG_LABEL}={default}",
                )
            )
        pools.append(pool)
        classes += pool_classes
        if rename is not None:
            renames.setdefault(rename, config)
        if device_list is not None:
            device_lists.add(device_list)
    spec: dict[str, Any] = {
        "kubernetes": {"version": kubernetes_version},
        "plugin": "nvidia",
        "nvidiaPlugin": _plugin(values, renames, left_out),
    }
    if len(device_lists) == 1:
        spec["node"] = {"deviceListStrategy": device_lists.pop()}
    elif device_lists:
        left_out.append(
            values.not_imported(
                (), "configs use different device list strategies; gpuconf sets one per cluster"
            )
        )
    spec["nodePools"] = pools
    spec["resourceClasses"] = classes
    return Imported(spec, left_out)


def _pool(
    config: NamedConfig, values: Source, shape: GpuShape, engine: str, left_out: list[Diagnostic]
) -> tuple[dict[str, Any], list[dict[str, Any]], bool | None, str | None]:
    flags = _effective_flags(config, values, left_out)
    selector = {CONFIG_LABEL: config.name} if config.config.data else {GPU_PRESENT_LABEL: "true"}
    pool = {
        "name": pool_name(config.name),
        "nodeSelector": selector,
        "runtime": {"engine": engine},
        "gpus": {"model": shape.model, "count": shape.gpus},
        "size": shape.nodes,
    }
    classes, rename = _classes(config, left_out)
    device_list = flags.get(("flags", "plugin", "deviceListStrategy"))
    return pool, classes, rename, device_list


def _effective_flags(
    config: NamedConfig, values: Source, left_out: list[Diagnostic]
) -> dict[KeyPath, Any]:
    """The flags the plugin runs with: the chart's values over the config file's."""
    flags: dict[KeyPath, Any] = {}
    for path in [*VALUE_FLAGS.values(), ("flags", "mpsRoot")]:
        value = config.config.at(*path)
        if value is not None:
            flags[path] = (value, config.config, path)
    for value_key, path in VALUE_FLAGS.items():
        value = values.at(value_key)
        if value is not None and not (isinstance(value, str) and not value):
            flags[path] = (value, values, (value_key,))
    out: dict[KeyPath, Any] = {}
    for path, (value, source, where) in flags.items():
        note = _flag_note(path, value)
        if note is None:
            continue
        if isinstance(note, str):
            out[path] = note
            continue
        message, hint = note
        said = _at(source, config, where, f"{'.'.join(map(str, path))}: {message}", hint)
        if said not in left_out:  # a chart value every config runs with is said once
            left_out.append(said)
    _unread_flags(config, left_out)
    return out


def _flag_note(path: KeyPath, value: Any) -> str | tuple[str, str] | None:
    """None: gpuconf renders the same; a string: the value gpuconf's spec takes; else a note."""
    if path == ("flags", "plugin", "deviceListStrategy"):
        strategies = value if isinstance(value, list) else str(value).split(",")
        mapped = {DEVICE_LISTS.get(str(s).strip()) for s in strategies}
        if len(mapped) == 1 and None not in mapped:
            return str(mapped.pop())
        return (f"{value!r} has no single gpuconf equivalent", "set spec.node.deviceListStrategy")
    if path == ("flags", "mpsRoot"):
        return None  # gpuconf renders the MPS daemon and its root itself
    if path == ("flags", "migStrategy") and value in ("single", "mixed"):
        return (
            f"{value!r} needs the pools' MIG layouts, which the chart's files do not hold",
            "declare the pool's sharing: [{strategy: mig, layout: …}]; gpuconf then picks the strategy",
        )
    if NVIDIA_DEFAULTS.get(path, value) == value:
        return None
    return (f"{value!r} is not what gpuconf renders ({NVIDIA_DEFAULTS[path]!r})", "")


def _classes(
    config: NamedConfig, left_out: list[Diagnostic]
) -> tuple[list[dict[str, Any]], bool | None]:
    source = config.config
    sections = [s for s in SHARING_SECTIONS if isinstance(source.at("sharing", s), dict)]
    for extra in sections[1:]:
        left_out.append(
            _at(
                source,
                config,
                ("sharing", extra),
                f"sharing.{extra}: a second sharing "
                "section on one pool; gpuconf shares a pool's GPUs one way",
                "",
            )
        )
    name = pool_name(config.name)
    whole = {"name": name, "select": {"pools": [name]}}
    if not sections:
        return [whole], None
    section = sections[0]
    sharing = source.at("sharing", section)
    shared: list[dict[str, Any]] = []
    resources = sharing.get("resources") or []
    if not isinstance(resources, list):
        left_out.append(
            _at(source, config, ("sharing", section, "resources"), "resources: not a list", "")
        )
        resources = []
    for index, resource in enumerate(resources):
        where: KeyPath = ("sharing", section, "resources", index)
        resource_name = resource.get("name") if isinstance(resource, dict) else None
        replicas = resource.get("replicas") if isinstance(resource, dict) else None
        if resource_name != NVIDIA_GPU:
            left_out.append(
                _at(
                    source,
                    config,
                    where,
                    f"{resource_name!r}: gpuconf shares MIG devices only in a pool "
                    "whose MIG layout it knows",
                    "declare the layout, then a class per profile",
                )
            )
            continue
        if not isinstance(replicas, int) or isinstance(replicas, bool) or replicas < 2:
            left_out.append(
                _at(
                    source,
                    config,
                    (*where, "replicas"),
                    f"replicas {replicas!r}: NVIDIA's parser refuses fewer than 2 "
                    "(api/config/v1/replicas.go); imported as whole GPUs",
                    "",
                )
            )
            continue
        for ignored in ("rename", "devices"):
            if ignored in resource and not (ignored == "devices" and resource[ignored] == "all"):
                left_out.append(
                    _at(
                        source,
                        config,
                        (*where, ignored),
                        f"{ignored}: NVIDIA's plugin ignores "
                        "it at run time (api/config/v1 DisableResourceNamingInConfig)",
                        "",
                    )
                )
        strategy = SHARING_SECTIONS[section]
        class_sharing: dict[str, Any] = {"strategy": strategy, "replicas": replicas}
        if strategy == "time-slicing" and sharing.get("failRequestsGreaterThanOne") is True:
            class_sharing["failRequestsGreaterThanOne"] = True
        shared.append(
            {
                "name": name,
                "select": {"pools": [name]},
                "sharing": class_sharing,
            }
        )
    rename = sharing.get("renameByDefault", False)
    return (shared or [whole]), (rename is True) if shared else None


def _plugin(
    values: Source, renames: Mapping[bool, NamedConfig], left_out: list[Diagnostic]
) -> dict[str, Any]:
    plugin: dict[str, Any] = {}
    tag = values.at("image", "tag")
    if tag not in (None, ""):
        if tag in get_args(NvidiaPluginRelease):
            plugin["version"] = tag
        else:
            left_out.append(
                values.not_imported(("image", "tag"), f"release {tag!r} is not one gpuconf knows")
            )
    # The chart's default is renameByDefault: false; gpuconf's is true, so say it.
    plugin["renameByDefault"] = next(iter(renames), False)
    if len(renames) > 1:
        other = renames[not plugin["renameByDefault"]]
        left_out.append(
            _at(
                other.config,
                other,
                (),
                "renameByDefault differs between configs; gpuconf sets it for the whole cluster",
                "",
            )
        )
    return plugin


def _unread_values(values: Source) -> list[Diagnostic]:
    data = values.data if isinstance(values.data, dict) else {}
    return [
        values.not_imported((key,), "not imported; gpuconf renders its own")
        for key, value in data.items()
        if key not in READ_VALUES and value not in (None, "", {}, [])
    ]


def _unread_flags(config: NamedConfig, left_out: list[Diagnostic]) -> None:
    known = {"version", "flags", "sharing"}
    data = config.config.data if isinstance(config.config.data, dict) else {}
    for key in data:
        if key not in known:
            left_out.append(_at(config.config, config, (key,), f"{key}: not imported", ""))


def _at(source: Source, config: NamedConfig, where: KeyPath, message: str, hint: str) -> Diagnostic:
    """At `where` in `source`; for a config embedded in another file (a ConfigMap's data, the
    chart's config.map), at the key that holds it, naming the config."""
    if source is config.config and config.config is not config.held_by:
        return config.held_by.not_imported(config.key, f"config {config.name!r}: {message}", hint)
    return source.not_imported(where, message, hint)
