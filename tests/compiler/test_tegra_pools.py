"""Jetson (tegra) pools: arm64 scheduling, discovery without NVML, and what Jetson cannot do
refused at compile time with the reason."""

from __future__ import annotations

from typing import Any

import pytest
from builders import cluster, compile_example, errors, load_yaml, pool, rendered, valid

from gpuconf.diagnostics import Severity, format_path

ORIN = "Jetson-AGX-Orin-64GB"
SLICED = {"strategy": "time-slicing", "replicas": 4}


def _jetson(name: str = "orin", model: str = ORIN, **fields: Any) -> dict[str, Any]:
    return pool(name, model, 1, platform="tegra", runtime={"engine": "docker"}, **fields)


def _shared(name: str = "orin-shared", sharing: dict[str, Any] = SLICED) -> dict[str, Any]:
    return {"name": name, "select": {"pools": ["orin"]}, "sharing": sharing}


def _messages(document: dict[str, Any]) -> list[tuple[str, str]]:
    return [(format_path(d.path), d.message) for d in errors(document)]


def _pod(tree: dict[str, bytes], path: str) -> dict[str, Any]:
    spec: dict[str, Any] = load_yaml(tree[path])["spec"]["template"]["spec"]
    return spec


def test_a_time_sliced_jetson_pool_runs_tegra_discovery_on_arm64_nodes() -> None:
    tree = rendered(cluster([_jetson()], [_shared()]))
    pod = _pod(tree, "pools/orin/daemonset-gpuconf-node.yaml")
    assert pod["nodeSelector"] == {"gpuconf.dev/pool": "orin", "kubernetes.io/arch": "arm64"}
    command = pod["containers"][0]["command"]
    assert command[command.index("--nvml") + 1] == "tegra"
    mounts = {m["mountPath"]: m for m in pod["containers"][0]["volumeMounts"]}
    assert mounts["/etc/nv_tegra_release"]["readOnly"] is True


def test_every_daemonset_of_the_edge_example_lands_on_arm64() -> None:
    tree = compile_example("jetson-edge").rendered["jetson-edge"]
    daemonsets = [p for p in tree if p.startswith("pools/") and "/daemonset-" in p]
    assert daemonsets
    for path in daemonsets:
        assert _pod(tree, path)["nodeSelector"]["kubernetes.io/arch"] == "arm64", path


def test_a_discrete_pool_lands_on_any_architecture_unless_it_names_one() -> None:
    plain = pool("l4", "L4", 1)
    arm = pool("gh", "H100-SXM5-80GB", 1, architecture="arm64")
    tree = rendered(cluster([plain, arm], []))
    assert (
        "kubernetes.io/arch"
        not in _pod(tree, "pools/l4/daemonset-gpuconf-node.yaml")["nodeSelector"]
    )
    command = _pod(tree, "pools/l4/daemonset-gpuconf-node.yaml")["containers"][0]["command"]
    assert command[command.index("--nvml") + 1] == "real"
    assert (
        _pod(tree, "pools/gh/daemonset-gpuconf-node.yaml")["nodeSelector"]["kubernetes.io/arch"]
        == "arm64"
    )


def test_nvidia_s_plugin_on_a_jetson_pool_lands_on_arm64_with_a_config_it_accepts() -> None:
    from nvidia_config_v1 import validate_config

    tree = rendered(cluster([_jetson()], [_shared()], plugin="nvidia"))
    daemonsets = [p for p in tree if p.startswith("pools/orin/daemonset-")]
    assert daemonsets
    for path in daemonsets:
        assert _pod(tree, path)["nodeSelector"]["kubernetes.io/arch"] == "arm64", path
    config_map = load_yaml(tree["pools/orin/configmap-nvidia-device-plugin.yaml"])
    configs = [load_yaml(text) for text in config_map["data"].values()]
    assert configs
    for config in configs:
        assert validate_config(config) == []


def test_jetpack_s_driver_version_is_accepted() -> None:
    valid(cluster([_jetson(driver={"version": "540.4.0"}, jetpack="6.2")], [_shared()]))


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        (
            {"sharing": [{"strategy": "mig", "layout": "all-balanced"}]},
            [("spec.nodePools[0].sharing", "Jetson's integrated GPU has no MIG")],
        ),
        (
            {"gpus": {"model": ORIN, "count": 2}},
            [("spec.nodePools[0].gpus.count", "a Jetson module has one integrated GPU, not 2")],
        ),
        (
            {"architecture": "amd64"},
            [("spec.nodePools[0].architecture", "Jetson modules are arm64")],
        ),
        (
            {"driver": {"version": "540.4.0", "install": True}},
            [("spec.nodePools[0].driver.install",
              "a Jetson module's driver comes with JetPack (L4T); NVIDIA's driver container is "
              "for discrete GPUs")],
        ),
        (
            {"nodes": [{"name": "n1", "gpus": [
                {"index": 1, "uuid": "GPU-00000000-0000-4000-8000-000000000001"}]}]},
            [("spec.nodePools[0].nodes[0].gpus[0].index",
              "a Jetson module's only GPU has index 0, not 1"),
             ("spec.nodePools[0].nodes[0].gpus[0].uuid",
              "the integrated GPU of a Jetson module has no UUID the node can read")],
        ),
        (
            {"gpus": {"model": "L4", "count": 1}},
            [("spec.nodePools[0].gpus.model",
              "L4 is not a Jetson module; a tegra pool's GPU is the module's integrated GPU")],
        ),
        (
            {"gpus": {"model": "Jetson-AGX-Xavier-32GB", "count": 1}, "jetpack": "6.2"},
            [("spec.nodePools[0].jetpack",
              "JetPack 6.2 (L4T 36.4.3) does not support Jetson-AGX-Xavier-32GB "
              "(Xavier, tegra194)")],
        ),
        (
            {"nodeSelector": {"site": "edge", "kubernetes.io/arch": "amd64"}},
            [("spec.nodePools[0].nodeSelector.kubernetes.io/arch",
              "the node selector picks amd64 nodes but the pool is arm64")],
        ),
    ],
    ids=["mig", "two-gpus", "amd64", "driver-install", "index-and-uuid", "discrete-model",
         "xavier-on-jetpack-6", "arch-selector-conflict"],
)  # fmt: skip
def test_what_a_jetson_cannot_do_is_refused_with_the_reason(
    fields: dict[str, Any], expected: list[tuple[str, str]]
) -> None:
    assert _messages(cluster([_jetson(**fields)], [])) == expected


def test_mps_on_a_jetson_is_refused_at_the_class() -> None:
    mps = {"strategy": "mps", "replicas": 4}
    found = errors(cluster([_jetson()], [_shared(sharing=mps)]))
    assert [(format_path(d.path), d.message, d.hint) for d in found] == [
        (
            "spec.resourceClasses[0].sharing.strategy",
            "class 'orin-shared' shares Jetson GPUs (pool orin) with MPS; Jetson has no MPS "
            "control daemon and no NVML to set compute modes",
            "use strategy: time-slicing",
        )
    ]


def test_dra_is_refused_for_a_cluster_with_jetson_pools() -> None:
    # Time-sliced as DRA shares: no replicas (refused under DRA on its own account).
    document = cluster(
        [_jetson()], [_shared(sharing={"strategy": "time-slicing"})], allocation="dra"
    )
    assert _messages(document) == [
        (
            "spec.nodePools[0].platform",
            "NVIDIA's DRA driver discovers GPUs through NVML, which Jetson modules lack",
        )
    ]


def test_a_jetson_model_in_a_discrete_pool_asks_for_platform_tegra() -> None:
    found = errors(cluster([pool("p", ORIN, 1)], []))
    assert [(format_path(d.path), d.hint) for d in found] == [
        ("spec.nodePools[0].gpus.model", "set platform: tegra on the pool")
    ]


def test_jetpack_on_a_discrete_pool_is_refused() -> None:
    assert _messages(cluster([pool("p", "L4", 1, jetpack="6.2")], [])) == [
        ("spec.nodePools[0].jetpack", "jetpack applies to platform tegra")
    ]


def test_an_unknown_jetpack_release_is_a_warning_not_an_error() -> None:
    found = valid(cluster([_jetson(jetpack="7.9")], [_shared()]))
    assert [(d.severity, d.message) for d in found.warnings] == [
        (
            Severity.WARNING,
            "gpuconf does not know JetPack 7.9; it cannot check that it supports the modules",
        )
    ]


def test_a_jetson_pool_gets_the_igpu_by_volume_mounts_whatever_the_engine() -> None:
    k3s = _jetson() | {"runtime": {"engine": "k3s"}}
    tree = rendered(cluster([k3s], [_shared()]))
    config = load_yaml(
        load_yaml(tree["pools/orin/configmap-node-config.yaml"])["data"]["node-config.yaml"]
    )
    assert config["deviceListStrategy"] == "volume-mounts"


def test_cdi_declared_for_a_cluster_with_jetson_pools_warns_how_the_spec_must_name_the_igpu() -> (
    None
):
    document = cluster([_jetson()], [_shared()])
    document["spec"]["node"] = {"deviceListStrategy": "cdi"}
    found = valid(document)
    assert [(format_path(d.path), d.hint) for d in found.warnings if "Jetson" in d.message] == [
        (
            "spec.node.deviceListStrategy",
            "leave deviceListStrategy out: Jetson pools then use volume-mounts",
        )
    ]
