"""`gpuconf node labels` on this machine's real GPUs writes what NVIDIA's GPU Feature Discovery
writes on them: the node config comes from `gpuconf render` of a cluster file naming the model
the GPU really is, GFD runs with the plugin config of the same sharing (gfd.py says which GFD)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from gfd import gfd_binary, gfd_labels
from real_gpu_cluster import SHARING, catalog_model, cluster_file, rendered_node_config

from gpuconf.gpus import gfd_labels as gfd
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
    model = catalog_model(real_gpus)
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
