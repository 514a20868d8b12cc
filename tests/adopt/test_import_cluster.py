"""`gpuconf import cluster` writes a cluster file from a live cluster's GPU nodes (GFD's labels,
as NVIDIA's internal/lm writes them), read through the fake API server."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from builders import run_cli
from fake_api_server import FakeApiServer

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
    assert any(f"labelled gpuconf.dev/pool={long}" in line for line in header), header
