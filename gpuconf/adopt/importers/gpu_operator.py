"""`gpuconf import gpu-operator CLUSTERPOLICY [CONFIGMAP…]`: the device-plugin part of a GPU
Operator ClusterPolicy, read as the Operator hands it to NVIDIA's plugin, then imported as the
chart's values are (nvidia_chart.py).

What the Operator does with it (NVIDIA/gpu-operator controllers/object_controls.go, v26.7.0):
`spec.mig.strategy` becomes the plugin's MIG_STRATEGY (applyMIGConfiguration);
`spec.devicePlugin.config.{name,default}` are the plugin's ConfigMap and default config, with
FALLBACK_STRATEGIES "empty" (no fallback to a config named "default" or the only one);
`spec.devicePlugin.env` is added to the plugin's container; `spec.devicePlugin.version` is its
image tag. The other operands (driver, toolkit, DCGM, GFD, …) stay the Operator's: they are
listed, not imported."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gpuconf.adopt.importers.nvidia_chart import VALUE_FLAGS
from gpuconf.adopt.importers.sources import Source
from gpuconf.api.shape_errors import as_yaml_spells
from gpuconf.diagnostics import Diagnostic, KeyPath

# The chart's environment names (daemonset-device-plugin.yml) → its values' keys.
ENV_VALUES = {
    "MIG_STRATEGY": "migStrategy",
    "FAIL_ON_INIT_ERROR": "failOnInitError",
    "PASS_DEVICE_SPECS": "compatWithCPUManager",
    "DEVICE_LIST_STRATEGY": "deviceListStrategy",
    "DEVICE_ID_STRATEGY": "deviceIDStrategy",
    "NVIDIA_DRIVER_ROOT": "nvidiaDriverRoot",
}
# Chart value → where the ClusterPolicy holds it.
FROM_POLICY: Mapping[KeyPath, KeyPath] = {
    ("image", "tag"): ("spec", "devicePlugin", "version"),
    ("migStrategy",): ("spec", "mig", "strategy"),
    ("config", "name"): ("spec", "devicePlugin", "config", "name"),
    ("config", "default"): ("spec", "devicePlugin", "config", "default"),
}
# What is read above, as the ClusterPolicy CRD types it (gpu-operator v26.7.0,
# config/crd/bases/nvidia.com_clusterpolicies.yaml: objects, env an array), parents first.
SHAPES: Mapping[KeyPath, tuple[type, str]] = {
    ("spec",): (dict, "a mapping"),
    ("spec", "operator"): (dict, "a mapping"),
    ("spec", "mig"): (dict, "a mapping"),
    ("spec", "devicePlugin"): (dict, "a mapping"),
    ("spec", "devicePlugin", "config"): (dict, "a mapping"),
    ("spec", "devicePlugin", "env"): (list, "a list"),
}
IMPORTED = frozenset({"devicePlugin", "mig"})
# spec.operator.defaultRuntime (OperatorSpec) → gpuconf's engine.
ENGINES = {"containerd": "containerd", "docker": "docker", "crio": "cri-o"}


def engine(policy: Source) -> str | None:
    return ENGINES.get(str(policy.at("spec", "operator", "defaultRuntime")))


def as_chart_values(policy: Source) -> tuple[Source, list[Diagnostic]]:
    """The chart values the ClusterPolicy amounts to, located where the ClusterPolicy says each.
    A policy the API server would refuse the shape of is refused here (InvalidInput)."""
    if policy.at("kind") != "ClusterPolicy":
        raise policy.wrong(("kind",), "not a ClusterPolicy (nvidia.com/v1)")
    for path, (kind, noun) in SHAPES.items():
        value = policy.at(*path)
        if value is not None and not isinstance(value, kind):
            raise policy.wrong(path, f"should be {noun}, not {as_yaml_spells(value)}")
    values: dict[str, Any] = {"config": {"fallbackStrategies": ["empty"]}}
    positions: dict[KeyPath, tuple[int, int]] = dict(policy.located.positions)
    for key, source_path in FROM_POLICY.items():
        value = policy.at(*source_path)
        if value is None:
            continue
        _put(values, key, value)
        positions[key] = policy.located.position(source_path)
    env = policy.at("spec", "devicePlugin", "env")
    for index, variable in enumerate(env if isinstance(env, list) else []):
        name = variable.get("name") if isinstance(variable, dict) else None
        if name in ENV_VALUES and isinstance(variable.get("value"), str):
            value_key = ENV_VALUES[name]
            _put(values, (value_key,), _typed(value_key, variable["value"]))
            positions[(value_key,)] = policy.located.position(
                ("spec", "devicePlugin", "env", index)
            )
    spec = policy.at("spec")
    left_out = [
        policy.not_imported(
            ("spec", section), "left to the GPU Operator; gpuconf imports the device plugin"
        )
        for section, value in (spec if isinstance(spec, dict) else {}).items()
        if section not in IMPORTED and section != "operator" and _enabled(value)
    ]
    located = policy.located._replace(data=values, positions=positions, renumbered={})
    return Source(located), left_out


# What Go's strconv.ParseBool reads as true, as NVIDIA's plugin reads its boolean environment
# (urfave/cli v2 flag_bool.go).
_TRUE = frozenset({"1", "t", "T", "true", "True", "TRUE"})


def _typed(key: str, text: str) -> Any:
    """The chart's boolean values arrive as text in the environment."""
    flag = VALUE_FLAGS[key]
    return text in _TRUE if flag[-1] in ("failOnInitError", "passDeviceSpecs") else text


def _enabled(section: Any) -> bool:
    return isinstance(section, dict) and section.get("enabled", True) is not False


def _put(values: dict[str, Any], key: KeyPath, value: Any) -> None:
    node = values
    for part in key[:-1]:
        node = node.setdefault(str(part), {})
    node[str(key[-1])] = value
