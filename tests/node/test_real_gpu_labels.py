"""`gpuconf node labels` on this machine's real GPUs writes what NVIDIA's GPU Feature Discovery
writes on them: the node config comes from `gpuconf render` of a cluster file naming the model
the GPU really is, GFD runs with the plugin config of the same sharing (gfd.py says which GFD)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from gfd import gfd_binary, gfd_labels

from gpuconf.cli import main as gpuconf
from gpuconf.gpus import gfd_labels as gfd
from gpuconf.gpus.catalog import Catalog
from gpuconf.node.commands.parser import main as gpuconf_node
from gpuconf.node.nvml.api import GpuInfo

NODE = "gpu-node"
# GFD keys gpuconf does not write, with the GFD labeller that does (internal/lm).
NOT_COMPARED = {
    "nvidia.com/gfd.timestamp": "timestamp.go, the time of labelling (--no-timestamp drops it)",
    "nvidia.com/gpu.mode": "nvml.go newGPUModeLabeler: the GPUs' PCI class, compute or graphics",
    "nvidia.com/gpu.clique": "imex.go: the NVLink fabric's cluster UUID and clique id",
    "nvidia.com/vgpu.present": "vgpu.go: whether the GPUs are NVIDIA vGPUs",
    "nvidia.com/vgpu.host-driver-version": "vgpu.go: a vGPU's host driver",
    "nvidia.com/vgpu.host-driver-branch": "vgpu.go: a vGPU's host driver",
}
# Keys both must write for a whole GPU, so that the comparison cannot pass on nothing.
REQUIRED = {
    gfd.PRODUCT,
    gfd.COUNT,
    gfd.REPLICAS,
    gfd.SHARING_STRATEGY,
    gfd.MEMORY,
    gfd.FAMILY,
    gfd.COMPUTE_MAJOR,
    gfd.COMPUTE_MINOR,
    gfd.MACHINE,
    gfd.MIG_CAPABLE,
    gfd.MPS_CAPABLE,
    *gfd.DRIVER_VERSION_KEYS,
    *gfd.CUDA_VERSION_KEYS,
}
SHARING: dict[str, dict[str, Any]] = {
    "none": {"strategy": "none"},
    "time-slicing": {"strategy": "time-slicing", "replicas": 4},
}


def cluster_file(model: str, count: int, sharing: dict[str, Any]) -> dict[str, Any]:
    """One pool of one node with this machine's GPUs, one class taking them all."""
    return {
        "apiVersion": "gpuconf.dev/v1alpha2",
        "kind": "Cluster",
        "metadata": {"name": "real-gpu"},
        "spec": {
            "kubernetes": {"version": "1.34"},
            "nodePools": [
                {
                    "name": "gpus",
                    "runtime": {"engine": "containerd"},
                    "gpus": {"model": model, "count": count},
                    "size": 1,
                }
            ],
            "resourceClasses": [{"name": "gpu", "select": {"model": model}, "sharing": sharing}],
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


def gfd_config(sharing: dict[str, Any]) -> dict[str, Any]:
    """The device plugin's config (api/config/v1) of the same sharing, for GFD."""
    config: dict[str, Any] = {"version": "v1", "flags": {"migStrategy": "none"}}
    if sharing["strategy"] == "time-slicing":
        resources = [{"name": "nvidia.com/gpu", "replicas": sharing["replicas"]}]
        config["sharing"] = {"timeSlicing": {"renameByDefault": False, "resources": resources}}
    return config


@pytest.mark.gpu
@pytest.mark.parametrize("sharing", sorted(SHARING))
def test_node_labels_are_gfd_s_on_the_real_gpus(
    real_gpus: tuple[GpuInfo, ...],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    sharing: str,
) -> None:
    names = {gpu.name for gpu in real_gpus}
    if len(names) != 1:
        pytest.skip(f"GPUs of more than one model here ({sorted(names)}); one pool takes one")
    model = Catalog.load().by_nvml_name(real_gpus[0].name)
    if model is None:
        pytest.skip(f"no catalog model is {real_gpus[0].name!r} (test_real_gpu_catalog.py fails)")
    binary = gfd_binary()

    config = rendered_node_config(
        tmp_path, cluster_file(model.name, len(real_gpus), SHARING[sharing])
    )
    capsys.readouterr()
    argv = ["labels", "--config", str(config), "--node-name", NODE]
    assert gpuconf_node([*argv, "--machine-type-file", gfd.MACHINE_TYPE_FILE]) == 0
    printed = capsys.readouterr().out.splitlines()
    ours = dict(line.split("=", 1) for line in printed if line.startswith("nvidia.com/"))

    theirs = gfd_labels(binary, tmp_path, gfd_config(SHARING[sharing]), gfd.MACHINE_TYPE_FILE)
    left_out = {key: theirs.pop(key) for key in NOT_COMPARED if key in theirs}
    assert ours == theirs, f"GFD's labels not compared: {left_out}"
    assert ours.keys() >= REQUIRED
