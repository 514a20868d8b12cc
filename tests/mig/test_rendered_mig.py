"""The MIG examples rendered: the MIG manager's one mig-parted ConfigMap, README labels, node
configs, NVIDIA configs."""

from __future__ import annotations

from typing import Any

import kubernetes_validate
import pytest
from builders import (
    REPO,
    cluster,
    cluster_file,
    compile_example,
    configmap_data,
    errors,
    load_yaml,
    of_a_crd,
    pool,
    rendered,
    valid,
)

from gpuconf.api.node_config import NodeConfig
from gpuconf.api.validators import validate_node_config
from gpuconf.compiler.plan import plan
from gpuconf.compiler.plan.mig_parted import mig_parted_config

EXAMPLES = ["mig", "mig-nvidia"]


@pytest.fixture(scope="module")
def trees() -> dict[str, dict[str, bytes]]:
    return compile_example(*EXAMPLES).rendered


@pytest.mark.parametrize("name", EXAMPLES)
def test_the_committed_rendering_is_up_to_date(
    trees: dict[str, dict[str, bytes]], name: str
) -> None:
    folder = REPO / "rendered" / name
    on_disk = {
        p.relative_to(folder).as_posix(): p.read_bytes() for p in folder.rglob("*") if p.is_file()
    }
    assert sorted(on_disk) == sorted(trees[name])
    for path, data in trees[name].items():
        assert on_disk[path] == data, path


@pytest.mark.parametrize("name", EXAMPLES)
def test_every_manifest_passes_kubernetes_validate(
    trees: dict[str, dict[str, bytes]], name: str
) -> None:
    tree = trees[name]
    for path in load_yaml(tree["kustomization.yaml"])["resources"]:
        if not of_a_crd(obj := load_yaml(tree[path])):
            kubernetes_validate.validate(obj, "1.34.0", strict=True)


MIG_MANAGER_CONFIG = "mig-manager/configmap-gpuconf-mig-parted-config.yaml"


def _mig_configs(tree: dict[str, bytes], pool_name: str) -> Any:
    config_map = load_yaml(tree[MIG_MANAGER_CONFIG])
    # Where the GPU Operator's MIG manager reads it: its namespace, the name ClusterPolicy names.
    assert config_map["metadata"]["name"] == "gpuconf-mig-parted-config"
    assert config_map["metadata"]["namespace"] == "gpu-operator"
    assert MIG_MANAGER_CONFIG in load_yaml(tree["kustomization.yaml"])["resources"]
    document = configmap_data(tree, MIG_MANAGER_CONFIG, "config.yaml")
    assert document["version"] == "v1"
    assert document["mig-configs"]["all-disabled"] == [{"devices": "all", "mig-enabled": False}]
    return document["mig-configs"][f"gpuconf-{pool_name}"]


def test_one_config_map_holds_every_pools_layout_under_its_own_name(
    trees: dict[str, dict[str, bytes]],
) -> None:
    document = configmap_data(trees["mig"], MIG_MANAGER_CONFIG, "config.yaml")
    assert sorted(document["mig-configs"]) == [
        "all-disabled",
        "gpuconf-a100",
        "gpuconf-a30",
        "gpuconf-h100",
    ]
    assert not [p for p in trees["mig"] if p.endswith("configmap-mig-parted.yaml")]


def test_the_mig_manager_config_map_goes_where_the_cluster_says() -> None:
    mig = pool("h", "H100-SXM5-80GB", 8, [{"strategy": "mig", "layout": "all-1g.10gb"}])
    doc = cluster(
        [mig],
        [{"name": "s", "select": {"migProfile": "1g.10gb"}}],
        migManager={"namespace": "nvidia-gpu-operator", "configMapName": "mig-layouts"},
    )
    [artifact] = [a for a in plan(valid(doc), "c.yaml") if a.path.startswith("mig-manager/")]
    assert artifact.path == "mig-manager/configmap-mig-layouts.yaml"
    metadata = artifact.values["meta"]
    assert (metadata["namespace"], metadata["name"]) == ("nvidia-gpu-operator", "mig-layouts")


def test_the_h100_mig_parted_config_follows_the_two_declared_layouts(
    trees: dict[str, dict[str, bytes]],
) -> None:
    assert _mig_configs(trees["mig"], "h100") == [
        {"devices": [0, 1, 2, 3], "mig-enabled": True, "mig-devices": {"1g.10gb": 7}},
        {"devices": [4, 5, 6, 7], "mig-enabled": True, "mig-devices": {"3g.40gb": 2}},
    ]


def test_a_named_layout_on_every_gpu_uses_devices_all(trees: dict[str, dict[str, bytes]]) -> None:
    assert _mig_configs(trees["mig"], "a100") == [
        {
            "devices": "all",
            "mig-enabled": True,
            "mig-devices": {"1g.5gb": 2, "2g.10gb": 1, "3g.20gb": 1},
        }
    ]


def test_gpus_left_out_of_the_indices_get_mig_disabled(trees: dict[str, dict[str, bytes]]) -> None:
    assert _mig_configs(trees["mig"], "a30") == [
        {"devices": [0, 1], "mig-enabled": True, "mig-devices": {"1g.6gb": 4}},
        {"devices": [2, 3], "mig-enabled": False},
    ]


def test_pools_without_mig_get_no_mig_parted_config() -> None:
    doc = cluster(
        [pool("t", "Tesla-T4", 1, None)], [{"name": "t4", "select": {"model": "Tesla-T4"}}]
    )
    assert not [a.path for a in plan(valid(doc), "c.yaml") if a.path.startswith("mig-manager/")]


def test_pools_mixing_models_filter_devices_by_pci_id() -> None:
    mixed = pool("m", "A100-SXM4-80GB", 1, [{"strategy": "mig", "layout": "all-balanced"}])
    mixed["nodes"] = [{"name": "n1", "gpus": [{"index": 0}, {"index": 1, "model": "H200-141GB"}]}]
    doc = cluster([mixed], [{"name": "s", "select": {"migProfile": "1g.10gb"}}])
    validated = valid(doc)
    config = mig_parted_config(validated.cluster, validated.inventory)
    assert config is not None
    assert config["mig-configs"]["gpuconf-m"] == [
        {
            "devices": "all",
            "mig-enabled": True,
            "mig-devices": {"1g.10gb": 2, "2g.20gb": 1, "3g.40gb": 1},
            "device-filter": ["0x20B210DE"],
        },
        {
            "devices": "all",
            "mig-enabled": True,
            "mig-devices": {"1g.18gb": 2, "2g.35gb": 1, "3g.71gb": 1},
            "device-filter": ["0x233510DE"],
        },
    ]


def test_the_readme_documents_the_node_labels(trees: dict[str, dict[str, bytes]]) -> None:
    readme = trees["mig"]["README.md"].decode()
    assert "## MIG" in readme
    # mig declares the GPU Operator: its values name the ConfigMap, the README says how to apply them.
    assert "-f gpu-operator-values.yaml" in readme
    for name, nodes in (("h100", 4), ("a100", 2), ("a30", 3)):
        assert (
            f"| {name} | {nodes} with `gpuconf.dev/pool={name}` | `nvidia.com/mig.config=gpuconf-{name}` |"
            in readme
        )
        assert (
            f"kubectl label nodes -l gpuconf.dev/pool={name} nvidia.com/mig.config=gpuconf-{name} --overwrite"
            in readme
        )
    assert "GPUs 0–3: H100-SXM5-80GB 7×1g.10gb; GPUs 4–7: H100-SXM5-80GB 2×3g.40gb" in readme
    assert "GPUs 2, 3: A30 MIG disabled" in readme


def test_the_readme_names_declared_nodes_one_by_one() -> None:
    mig = pool("h", "H100-SXM5-80GB", 1, [{"strategy": "mig", "layout": "all-1g.10gb"}], size=3)
    mig["nodes"] = [{"name": "gpu-a", "gpus": [{"index": 0}]}]
    doc = cluster([mig], [{"name": "s", "select": {"migProfile": "1g.10gb"}}])
    readme = rendered(doc)["README.md"].decode()
    assert "| h | `gpu-a`, 2 more with `gpuconf.dev/pool=h` |" in readme


def _node_config(tree: dict[str, bytes], pool_name: str) -> NodeConfig:
    path = f"pools/{pool_name}/configmap-node-config.yaml"
    return validate_node_config(configmap_data(tree, path, "node-config.yaml"))


def test_the_node_config_declares_each_gpus_mig_layout(trees: dict[str, dict[str, bytes]]) -> None:
    config = _node_config(trees["mig"], "h100")
    layouts = {g.index: g.mig for g in config.inventory.default}
    assert layouts == {i: {"1g.10gb": 7} if i < 4 else {"3g.40gb": 2} for i in range(8)}
    a30 = _node_config(trees["mig"], "a30")
    assert {g.index: g.mig for g in a30.inventory.default} == {
        0: {"1g.6gb": 4},
        1: {"1g.6gb": 4},
        2: None,
        3: None,
    }


def test_the_node_config_lists_mig_devices_per_class(trees: dict[str, dict[str, bytes]]) -> None:
    resources = {r.class_name: r for r in _node_config(trees["mig"], "h100").resources}
    assert resources["h100-1g"].mig_profile == "1g.10gb"
    assert resources["h100-1g"].name == "gpuconf.dev/h100-1g"
    assert resources["h100-1g"].gpus.default == [0, 1, 2, 3]
    assert resources["h100-3g"].mig_profile == "3g.40gb"
    assert resources["h100-3g"].gpus.default == [4, 5, 6, 7]
    a100 = {r.class_name: r for r in _node_config(trees["mig"], "a100").resources}
    shared = a100["a100-1g-shared"]
    assert (shared.mig_profile, shared.sharing.strategy, shared.sharing.replicas) == (
        "1g.5gb",
        "time-slicing",
        4,
    )
    a30 = {r.class_name: r for r in _node_config(trees["mig"], "a30").resources}
    assert a30["a30-whole"].mig_profile is None
    assert a30["a30-whole"].gpus.default == [2, 3]


def _nvidia(tree: dict[str, bytes], pool_name: str) -> dict[str, Any]:
    path = f"pools/{pool_name}/configmap-nvidia-device-plugin.yaml"
    document: dict[str, Any] = configmap_data(tree, path, "config.yaml")
    return document


def test_a_pool_with_one_profile_on_every_gpu_runs_mig_strategy_single() -> None:
    # Without the GPU Operator, whose GFD would hold every pool to one strategy
    # (tests/compiler/test_operator_mig_strategy.py): each pool runs its own.
    document = cluster_file("mig-nvidia")
    del document["spec"]["gpuOperator"]
    del document["spec"]["resourceClasses"][0]["resourceName"]  # the name mixed gives
    tree = rendered(document)
    assert _nvidia(tree, "h100")["flags"]["migStrategy"] == "single"
    assert _nvidia(tree, "a100")["flags"]["migStrategy"] == "mixed"
    quota = load_yaml(tree["quotas/inference.yaml"])["spec"]["hard"]
    assert quota["requests.nvidia.com/gpu"] == "112"


def test_a_pool_with_whole_gpus_and_mig_runs_mig_strategy_mixed(
    trees: dict[str, dict[str, bytes]],
) -> None:
    tree = trees["mig-nvidia"]
    config = _nvidia(tree, "a100")
    assert config["flags"]["migStrategy"] == "mixed"
    assert config["sharing"]["timeSlicing"]["renameByDefault"] is True
    assert config["sharing"]["timeSlicing"]["resources"] == [
        {"name": "nvidia.com/gpu", "replicas": 2},
        {"name": "nvidia.com/mig-1g.10gb", "replicas": 2},
    ]
    assert (
        load_yaml(tree["quotas/inference.yaml"])["spec"]["hard"][
            "requests.nvidia.com/mig-1g.10gb.shared"
        ]
        == "28"
    )
    assert load_yaml(tree["quotas/training.yaml"])["spec"]["hard"] == {
        "requests.nvidia.com/gpu.shared": "4",
        "requests.nvidia.com/mig-3g.40gb": "8",
    }


def _nvidia_pool(sharing: object, count: int = 2) -> dict[str, Any]:
    return pool("p", "H100-SXM5-80GB", count, sharing)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("sharing", "classes", "strategy", "names"),
    [
        pytest.param(
            [{"strategy": "mig", "layout": "all-3g.40gb"}],
            [{"name": "half", "select": {"migProfile": "3g.40gb"}}],
            "single",
            ["nvidia.com/gpu"],
            id="one-profile-everywhere",
        ),
        pytest.param(
            [{"strategy": "mig", "layout": "all-3g.40gb", "indices": [0]}],
            [
                {"name": "half", "select": {"migProfile": "3g.40gb"}},
                {"name": "whole", "select": {"indices": [1]}},
            ],
            "mixed",
            ["nvidia.com/mig-3g.40gb", "nvidia.com/gpu"],
            id="one-profile-and-whole-gpus",
        ),
        pytest.param(
            [{"strategy": "mig", "layout": "all-3g.40gb", "indices": [0]}],
            [{"name": "half", "select": {"migProfile": "3g.40gb"}}],
            "mixed",
            ["nvidia.com/mig-3g.40gb"],
            id="whole-gpus-in-no-class-still-count",
        ),
        pytest.param(
            [{"strategy": "mig", "layout": "all-balanced"}],
            [
                {"name": "a", "select": {"migProfile": "1g.10gb"}},
                {"name": "b", "select": {"migProfile": "2g.20gb"}},
                {"name": "c", "select": {"migProfile": "3g.40gb"}},
            ],
            "mixed",
            ["nvidia.com/mig-1g.10gb", "nvidia.com/mig-2g.20gb", "nvidia.com/mig-3g.40gb"],
            id="several-profiles",
        ),
        pytest.param(
            [{"strategy": "mig", "layout": "all-1g.10gb"}],
            [
                {
                    "name": "a",
                    "select": {"migProfile": "1g.10gb"},
                    "sharing": {"strategy": "time-slicing", "replicas": 2},
                }
            ],
            "single",
            ["nvidia.com/gpu.shared"],
            id="single-time-sliced",
        ),
    ],
)
def test_nvidia_mig_strategy_and_resource_names(
    sharing: object, classes: list[dict[str, Any]], strategy: str, names: list[str]
) -> None:
    validated = valid(cluster([_nvidia_pool(sharing)], classes, plugin="nvidia"))
    assert [c.resource_name for c in validated.classes] == names
    [config_map] = [
        a
        for a in plan(validated, "c.yaml")
        if a.path.endswith("configmap-nvidia-device-plugin.yaml")
    ]
    config = load_yaml(config_map.values["data"]["config.yaml"])
    assert config["flags"]["migStrategy"] == strategy
    if strategy == "single" and "sharing" in config:
        assert config["sharing"]["timeSlicing"]["resources"] == [
            {"name": "nvidia.com/gpu", "replicas": 2}
        ]


def test_a_class_spanning_single_and_mixed_pools_is_an_error() -> None:
    single = pool("s", "H100-SXM5-80GB", 1, [{"strategy": "mig", "layout": "all-1g.10gb"}])
    mixed = pool(
        "m", "H100-SXM5-80GB", 2, [{"strategy": "mig", "layout": "all-1g.10gb", "indices": [0]}]
    )
    doc = cluster([single, mixed], [{"name": "x", "select": {"migProfile": "1g.10gb"}}], "nvidia")
    found = [d for d in errors(doc) if d.path == ("spec", "resourceClasses", 0, "select")]
    assert [d.message for d in found] == [
        "class 'x' spans pools with migStrategy single (s) and mixed (m)"
    ]


def test_an_explicit_mixed_name_on_a_single_pool_is_an_error() -> None:
    doc = cluster(
        [_nvidia_pool([{"strategy": "mig", "layout": "all-1g.10gb"}])],
        [
            {
                "name": "x",
                "resourceName": "nvidia.com/mig-1g.10gb",
                "select": {"migProfile": "1g.10gb"},
            }
        ],
        "nvidia",
    )
    [found] = errors(doc)
    assert found.path == ("spec", "resourceClasses", 0, "resourceName")
    assert found.message == (
        "with migStrategy single NVIDIA's plugin does not advertise 1g.10gb devices as "
        "'nvidia.com/mig-1g.10gb'"
    )
