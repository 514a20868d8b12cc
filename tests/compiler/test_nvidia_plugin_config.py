"""With plugin: nvidia, every generated config.yaml is one NVIDIA's v1 parser accepts, read strictly,
and it advertises exactly the resources the classes and quotas name."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import pytest
from builders import CASES, compile_folder
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from nvidia_config_v1 import advertised_resources, resource_name_errors, validate_config
from ruamel.yaml import YAML

from gpuconf.compiler.pipeline import Compiled
from gpuconf.gpus.nvidia_plugin_releases import plugin_release

CONFIG_MAP = "pools/{pool}/configmap-nvidia-device-plugin.yaml"
NVIDIA_CASES = sorted(p for p in (CASES / "positive").iterdir() if p.name.startswith("nvidia-"))


def _yaml(data: bytes | str) -> Any:
    return YAML(typ="safe", pure=True).load(data)


def nvidia_problems(compiled: Compiled) -> list[str]:
    """Every reason the NVIDIA configs of these clusters would be refused or misread."""
    problems: list[str] = []
    for name, validated in compiled.validated.items():
        spec = validated.cluster.spec
        if spec.plugin != "nvidia" or spec.allocation != "device-plugin":
            continue
        tree = compiled.rendered[name]
        for pool in spec.node_pools:
            path = CONFIG_MAP.format(pool=pool.name)
            config_map = _yaml(tree[path])
            config = _yaml(config_map["data"]["config.yaml"])
            release = plugin_release(validated.cluster)
            problems += [f"{name}/{path}: {e}" for e in validate_config(config, release)]
            profiles = {
                profile
                for group in validated.inventory.by_pool(pool.name)
                for gpu in group.gpus
                for profile in gpu.mig or {}
            }
            advertised = advertised_resources(config, profiles)
            for resolved in validated.classes:
                if pool.name in resolved.pools and resolved.resource_name not in advertised:
                    problems.append(
                        f"{name}/{path}: class {resolved.name!r} is requested as "
                        f"{resolved.resource_name!r}, but the plugin advertises {sorted(advertised)}"
                    )
    return problems


def test_example_nvidia_configs_pass_the_strict_v1_parser(compiled_examples) -> None:  # type: ignore[no-untyped-def]
    assert any(v.cluster.spec.plugin == "nvidia" for v in compiled_examples.validated.values())
    assert nvidia_problems(compiled_examples) == []


@pytest.mark.parametrize("case", NVIDIA_CASES, ids=[p.name for p in NVIDIA_CASES])
def test_positive_case_nvidia_configs_pass_the_strict_v1_parser(case: Path) -> None:
    compiled = compile_folder(case, "cluster.yaml")
    assert compiled.ok
    assert nvidia_problems(compiled) == []


# The checker itself: each broken config is refused for the reason NVIDIA's parser gives.
GOOD: dict[str, Any] = {
    "version": "v1",
    "flags": {"migStrategy": "none", "plugin": {"deviceListStrategy": ["envvar"]}},
    "sharing": {"timeSlicing": {"resources": [{"name": "nvidia.com/gpu", "replicas": 2}]}},
}
BROKEN = {
    "unknown top-level key": {**GOOD, "flagz": {}},
    "version v2": {**GOOD, "version": "v2"},
    "unknown MIG strategy": {**GOOD, "flags": {"migStrategy": "some"}},
    "unknown device list strategy": {**GOOD, "flags": {"plugin": {"deviceListStrategy": "env"}}},
    "unknown device ID strategy": {**GOOD, "flags": {"plugin": {"deviceIDStrategy": "name"}}},
    "misplaced flag": {**GOOD, "flags": {"deviceIDStrategy": "uuid"}},
    "string for a bool": {**GOOD, "flags": {"failOnInitError": "true"}},
    "resources ignored at run time": {**GOOD, "resources": {"gpus": []}},
    "no resources": {**GOOD, "sharing": {"timeSlicing": {"resources": []}}},
    "one replica": {
        **GOOD,
        "sharing": {"timeSlicing": {"resources": [{"name": "nvidia.com/gpu", "replicas": 1}]}},
    },
    "rename ignored": {
        **GOOD,
        "sharing": {
            "timeSlicing": {"resources": [{"name": "nvidia.com/gpu", "replicas": 2, "rename": "x"}]}
        },
    },
    "devices ignored": {
        **GOOD,
        "sharing": {
            "timeSlicing": {
                "resources": [{"name": "nvidia.com/gpu", "replicas": 2, "devices": "all"}]
            }
        },
    },
    "MPS without a root": {**GOOD, "sharing": {"mps": GOOD["sharing"]["timeSlicing"]}},
    "allocation policy spelled as gpuconf's": {
        **GOOD,
        "flags": {"plugin": {"sharedDevicesAllocationPolicy": "pack"}},
    },
    "MPS with mixed MIG": {
        **GOOD,
        "flags": {"migStrategy": "mixed", "mpsRoot": "/run/nvidia/mps"},
        "sharing": {"mps": GOOD["sharing"]["timeSlicing"]},
    },
}


def test_the_checker_accepts_a_good_config() -> None:
    assert validate_config(GOOD) == []


@pytest.mark.parametrize("config", BROKEN.values(), ids=list(BROKEN))
def test_the_checker_refuses_a_broken_config(config: dict[str, Any]) -> None:
    assert validate_config(config) != []


@pytest.mark.parametrize("release", ["v0.17.0", "v0.18.2", "v0.19.3"])
def test_the_checker_refuses_the_allocation_policy_before_v0_20(release: str) -> None:
    config = {**GOOD, "flags": {"plugin": {"sharedDevicesAllocationPolicy": "packed"}}}
    assert validate_config(config, "v0.20.0") == []
    assert validate_config(config, release) == [
        "flags.plugin.sharedDevicesAllocationPolicy: unknown key"
    ]


def test_the_checker_knows_gdrcopy_only_from_v0_18() -> None:
    config = {**GOOD, "flags": {"gdrcopyEnabled": False}}
    assert validate_config(config, "v0.18.0") == []
    assert validate_config(config, "v0.17.4") == ["flags.gdrcopyEnabled: unknown key"]


@pytest.mark.parametrize(
    "name", ["gpu", "nvidia.com/GPU", "nvidia.com/" + "g" * 60, "example.com/gpu"]
)
def test_the_checker_refuses_bad_resource_names(name: str) -> None:
    assert resource_name_errors(name)


# Any valid plugin: nvidia cluster, built from the published schema's vocabulary.
MODELS = ["Tesla-T4", "L4", "A10", "A100-SXM4-80GB", "H100-SXM5-80GB"]
SHARING = st.one_of(
    st.just({"strategy": "none"}),
    st.builds(
        lambda r, f: {"strategy": "time-slicing", "replicas": r, "failRequestsGreaterThanOne": f},
        st.integers(2, 64),
        st.booleans(),
    ),
    st.builds(
        lambda r, p: {"strategy": "time-slicing", "replicas": r, "allocationPolicy": p},
        st.integers(2, 8),
        st.sampled_from(["spread", "pack"]),
    ),
    st.builds(lambda r: {"strategy": "mps", "replicas": r}, st.integers(2, 48)),
)


@st.composite
def nvidia_clusters(draw: st.DrawFn) -> dict[str, Any]:
    pools = []
    for i in range(draw(st.integers(1, 3))):
        pools.append(
            {
                "name": f"pool-{i}",
                "runtime": {"engine": draw(st.sampled_from(["docker", "containerd", "k3s"]))},
                "gpus": {"model": draw(st.sampled_from(MODELS)), "count": draw(st.integers(1, 8))},
                "size": draw(st.integers(1, 5)),
            }
        )
    classes = []
    for i, pool in enumerate(pools):
        if draw(st.booleans()):
            sharing = draw(SHARING)
            entry: dict[str, Any] = {"name": f"class-{i}", "select": {"pools": [pool["name"]]}}
            policy = sharing.pop("allocationPolicy", None)
            entry["sharing"] = sharing
            if policy is not None:
                entry["allocationPolicy"] = policy
            name = draw(st.sampled_from([None, "nvidia.com/gpu", "nvidia.com/gpu.shared"]))
            if name is not None:
                entry["resourceName"] = name
            classes.append(entry)
    return {
        "apiVersion": "gpuconf.dev/v1alpha2",
        "kind": "Cluster",
        "metadata": {"name": "random"},
        "spec": {
            "kubernetes": {"version": draw(st.sampled_from(["1.29", "1.31", "1.34", "1.37"]))},
            "plugin": "nvidia",
            "nvidiaPlugin": {
                "version": draw(st.sampled_from(["v0.17.0", "v0.19.3", "v0.20.0"])),
                "renameByDefault": draw(st.booleans()),
            },
            "node": {"deviceListStrategy": draw(st.sampled_from(["envvar", "volume-mounts"]))},
            "nodePools": pools,
            "resourceClasses": classes,
        },
    }


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(nvidia_clusters())
def test_any_valid_nvidia_cluster_yields_configs_nvidia_accepts(cluster: dict[str, Any]) -> None:
    with tempfile.TemporaryDirectory() as folder:
        with open(Path(folder) / "cluster.yaml", "w", encoding="utf-8") as handle:
            YAML(typ="safe", pure=True).dump(cluster, handle)
        compiled = compile_folder(Path(folder), "cluster.yaml")
    if compiled.ok:
        assert nvidia_problems(compiled) == []
