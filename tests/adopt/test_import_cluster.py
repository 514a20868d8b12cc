"""`gpuconf import cluster` writes a cluster file from a live cluster's GPU nodes (GFD's labels,
as NVIDIA's internal/lm writes them), read through the fake API server."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from builders import CATALOG, run_cli
from fake_api_server import FakeApiServer

from gpuconf.adopt.importers.live_cluster import import_live
from gpuconf.formats.located_yaml import load_file


def _gpu_node(
    name: str, product: str, count: int, replicas: int = 1, runtime: str = "containerd://1.7.27"
) -> dict[str, Any]:
    labels = {
        "nvidia.com/gpu.product": product,
        "nvidia.com/gpu.count": str(count),
        "nvidia.com/gpu.replicas": str(replicas),
        "nvidia.com/gpu.sharing-strategy": "time-slicing" if replicas > 1 else "none",
        "nvidia.com/cuda.driver-version.full": "550.54.15",
    }
    return {
        "metadata": {"name": name, "labels": labels},
        "status": {
            "allocatable": {"nvidia.com/gpu": str(count * replicas)},
            "nodeInfo": {"containerRuntimeVersion": runtime, "kubeletVersion": "v1.33.4"},
        },
    }


NODES = [
    _gpu_node("t4-b", "Tesla-T4-SHARED", 4, replicas=4),
    _gpu_node("t4-a", "Tesla-T4-SHARED", 4, replicas=4),
    _gpu_node("a100-a", "NVIDIA-A100-SXM4-80GB", 8),
    _gpu_node("odd-one", "NVIDIA-Z9000", 1),
    {"metadata": {"name": "cpu-1", "labels": {}}, "status": {"allocatable": {"cpu": "8"}}},
]


@pytest.fixture
def kubeconfig(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    with FakeApiServer(NODES, []).running() as server:
        yield server.kubeconfig(tmp_path)


def test_import_cluster_groups_gpu_nodes_into_pools_and_lists_the_rest(
    kubeconfig: Path, tmp_path: Path
) -> None:
    result = run_cli(
        "import", "cluster", "--kubeconfig", str(kubeconfig), "--name", "live", cwd=tmp_path
    )
    assert result.code == 0, result.err
    assert result.out == "wrote clusters/live.yaml\n"
    assert "warning: node odd-one: GPU 'NVIDIA-Z9000' is not in gpuconf's catalog" in result.err
    spec = load_file(tmp_path / "clusters" / "live.yaml").data["spec"]
    assert spec["kubernetes"] == {"version": "1.33"}
    assert spec["plugin"] == "nvidia"
    assert spec["nvidiaPlugin"] == {"renameByDefault": False}
    assert [(p["name"], p["gpus"], [n["name"] for n in p["nodes"]]) for p in spec["nodePools"]] == [
        ("tesla-t4", {"model": "Tesla-T4", "count": 4}, ["t4-a", "t4-b"]),
        ("a100-sxm4-80gb", {"model": "A100-SXM4-80GB", "count": 8}, ["a100-a"]),
    ]
    assert spec["nodePools"][0]["driver"] == {"version": "550.54.15"}
    assert spec["resourceClasses"][0] == {
        "name": "tesla-t4",
        "select": {"pools": ["tesla-t4"]},
        "sharing": {"strategy": "time-slicing", "replicas": 4},
    }
    explain = run_cli("explain", "live", cwd=tmp_path)
    assert "tesla-t4        nvidia.com/gpu  8        4         32" in explain.out
    header = (tmp_path / "clusters" / "live.yaml").read_text().splitlines()[:6]
    assert any("have no gpuconf.dev/pool label" in line for line in header)


def test_a_pool_label_longer_than_a_pool_name_is_cut_short_and_said(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # gpuconf-<pool> is the nodes' nvidia.com/mig.config label value: a pool name is at most 55.
    long = "team-" + "x" * 55
    node = _gpu_node("big-1", "Tesla-T4", 4)
    node["metadata"]["labels"]["gpuconf.dev/pool"] = long
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    with FakeApiServer([node], []).running() as server:
        config = server.kubeconfig(tmp_path)
        result = run_cli(
            "import", "cluster", "--kubeconfig", str(config), "--name", "n", cwd=tmp_path
        )
    assert result.code == 0, result.err
    [pool] = load_file(tmp_path / "clusters" / "n.yaml").data["spec"]["nodePools"]
    assert pool["name"] == long[:55]
    header = (tmp_path / "clusters" / "n.yaml").read_text().splitlines()[:8]
    said = f"labelled gpuconf.dev/pool={long}, longer than a pool name may be"
    assert any(said in line for line in header), header


def _labelled(name: str, product: str, count: int, pool: str) -> dict[str, Any]:
    node = _gpu_node(name, product, count)
    node["metadata"]["labels"]["gpuconf.dev/pool"] = pool
    return node


def test_nodes_of_one_pool_label_with_other_gpus_get_a_pool_of_their_own_and_are_told_why() -> None:
    nodes = [
        _labelled("a", "Tesla-T4", 4, "gpu"),
        _labelled("b", "NVIDIA-A100-SXM4-80GB", 8, "gpu"),
        _labelled("c", "Tesla-T4", 4, "gpu"),
    ]
    imported = import_live(nodes, "1.33", CATALOG)
    pools = [(p["name"], [n["name"] for n in p["nodes"]]) for p in imported.spec["nodePools"]]
    assert pools == [("gpu", ["a", "c"]), ("gpu-2", ["b"])]
    assert imported.left_out == [
        "nodes b are labelled gpuconf.dev/pool=gpu but differ from the rest so labelled in GPU "
        "model, GPU count: pool gpu-2; label them with that name"
    ]
    assert not any("longer than a pool name" in line for line in imported.left_out)


def test_a_pool_label_another_pool_s_name_took_first_names_that_pool_s_nodes() -> None:
    """Unlabelled T4 nodes are pool tesla-t4 by their model; nodes labelled so come after."""
    nodes = [_gpu_node("u", "Tesla-T4", 4), _labelled("l", "Tesla-T4", 2, "tesla-t4")]
    left_out = import_live(nodes, "1.33", CATALOG).left_out
    assert (
        "nodes l are labelled gpuconf.dev/pool=tesla-t4, the name of the pool of nodes u: pool "
        "tesla-t4-2; label them with that name"
    ) in left_out


def test_mig_nodes_are_listed_with_their_mig_devices_not_imported_as_whole_gpus() -> None:
    """GFD (internal/lm/mig-strategy.go) labels a MIG node's GPUs with their model under mixed
    (nvidia.com/gpu.product, gpu.count), its MIG devices as nvidia.com/mig-<profile>.count; under
    single, gpu.product is <model>-MIG-<profile>. A whole-GPU pool would render a plugin config
    offering GPUs the node has partitioned."""
    mixed = _gpu_node("mig-a", "NVIDIA-A100-SXM4-80GB", 8)
    mixed["metadata"]["labels"] |= {
        "nvidia.com/mig.strategy": "mixed",
        "nvidia.com/mig-1g.10gb.count": "28",
        "nvidia.com/mig-3g.40gb.count": "8",
    }
    single = _gpu_node("mig-b", "NVIDIA-A100-SXM4-80GB-MIG-1g.10gb", 56)
    single["metadata"]["labels"]["nvidia.com/mig.strategy"] = "single"
    # mixed in the plugin's config, but no GPU partitioned: whole GPUs, as labelled.
    unpartitioned = _gpu_node("a100-c", "NVIDIA-A100-SXM4-80GB", 8)
    unpartitioned["metadata"]["labels"]["nvidia.com/mig.strategy"] = "mixed"
    imported = import_live([mixed, single, unpartitioned], "1.33", CATALOG)
    pools = [(p["name"], [n["name"] for n in p["nodes"]]) for p in imported.spec["nodePools"]]
    assert pools == [("a100-sxm4-80gb", ["a100-c"])]
    assert imported.left_out[:2] == [
        "node mig-a: its A100-SXM4-80GB GPUs run MIG (nvidia.com/mig-1g.10gb: 28, "
        "nvidia.com/mig-3g.40gb: 8), whose layout the labels do not give: declare its pool "
        "with sharing: [{strategy: mig, layout: …}] (docs/mig.md)",
        "node mig-b: its A100-SXM4-80GB GPUs run MIG (nvidia.com/gpu: 56 of 1g.10gb), whose "
        "layout the labels do not give: declare its pool with sharing: [{strategy: mig, "
        "layout: …}] (docs/mig.md)",
    ]


def test_classes_one_resource_serves_are_not_told_to_rename_what_renaming_cannot_part(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two time-sliced T4 pools (their drivers differ) of a renamed cluster share
    nvidia.com/gpu.shared: renameByDefault is already true, and renaming parts shared GPUs from
    whole ones only, so the hint offers plugin: gpuconf alone (it said 'set renameByDefault: true
    (shared GPUs become nvidia.com/gpu.shared.shared)')."""
    older = _gpu_node("t4-old", "Tesla-T4", 4, replicas=4)
    older["metadata"]["labels"]["nvidia.com/cuda.driver-version.full"] = "535.183.01"
    nodes = [_gpu_node("t4-new", "Tesla-T4", 4, replicas=4), older]
    for node in nodes:
        node["status"]["allocatable"] = {"nvidia.com/gpu.shared": "16"}
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    with FakeApiServer(nodes, []).running() as server:
        config = server.kubeconfig(tmp_path)
        result = run_cli(
            "import", "cluster", "--kubeconfig", str(config), "--name", "t4s", cwd=tmp_path
        )
    assert result.code == 0, result.err
    validated = run_cli("validate", "clusters/t4s.yaml", cwd=tmp_path)
    [warning] = [line for line in validated.err.splitlines() if "all requested as" in line]
    assert "renameByDefault" not in warning
    assert warning.endswith(
        "(hint: give pods the node selector of the pool they need; once workloads can change "
        "their requests, use plugin: gpuconf for one resource per class)"
    )
