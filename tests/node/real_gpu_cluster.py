"""A cluster file for this machine's real GPUs, and the node config `gpuconf render` makes of it:
one pool of one node, one class taking every GPU, for the tests on a real GPU (marker gpu)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from gpuconf.api.gpu_model import GpuModel
from gpuconf.cli import main as gpuconf
from gpuconf.gpus.catalog import Catalog
from gpuconf.node.nvml.api import GpuInfo

SHARING: dict[str, dict[str, Any]] = {
    "none": {"strategy": "none"},
    "time-slicing": {"strategy": "time-slicing", "replicas": 4},
}
CLASS = "gpu"


def catalog_model(gpus: tuple[GpuInfo, ...]) -> GpuModel:
    """The catalog model every GPU here is, by NVML name; skips where there is no one such."""
    names = {gpu.name for gpu in gpus}
    if len(names) != 1:
        pytest.skip(f"GPUs of more than one model here ({sorted(names)}); one pool takes one")
    model = Catalog.load().by_nvml_name(gpus[0].name)
    if model is None:
        pytest.skip(f"no catalog model is {gpus[0].name!r} (test_real_gpu_catalog.py fails)")
    return model


def cluster_file(
    model: str, count: int, sharing: dict[str, Any], containerd_config_version: int | None = None
) -> dict[str, Any]:
    """One pool of one node with this machine's GPUs, the class `gpu` taking them all; its
    containerd's config version decides its device list strategy (CDI from version 3)."""
    runtime: dict[str, Any] = {"engine": "containerd"}
    if containerd_config_version is not None:
        runtime["containerdConfigVersion"] = containerd_config_version
    return {
        "apiVersion": "gpuconf.dev/v1alpha2",
        "kind": "Cluster",
        "metadata": {"name": "real-gpu"},
        "spec": {
            "kubernetes": {"version": "1.34"},
            "nodePools": [
                {
                    "name": "gpus",
                    "runtime": runtime,
                    "gpus": {"model": model, "count": count},
                    "size": 1,
                }
            ],
            "resourceClasses": [{"name": CLASS, "select": {"model": model}, "sharing": sharing}],
        },
    }


def rendered_node_config(tmp_path: Path, cluster: dict[str, Any]) -> Path:
    """The pool's node config, from `gpuconf render` of the cluster file."""
    source = tmp_path / "cluster.yaml"
    source.write_text(yaml.safe_dump(cluster))
    assert gpuconf(["render", str(source), "-o", str(tmp_path / "rendered")]) == 0
    config_map = (
        tmp_path / "rendered" / "real-gpu" / "pools" / "gpus" / "configmap-node-config.yaml"
    )
    config = tmp_path / "node-config.yaml"
    config.write_text(yaml.safe_load(config_map.read_text())["data"]["node-config.yaml"])
    return config
