"""`gpuconf node run` on this machine's real GPUs (`--nvml real`) against the kubelet's own
device-manager code (kubelet_go/, go_kubelet.py says which): the node config comes from
`gpuconf render` of a cluster file naming the model the GPUs really are, and the kubelet must
list those GPUs by their real UUIDs and admit a pod on one of them with the documented answer:
for volume-mounts exactly what NVIDIA's plugin gives (k8s-device-plugin v0.20.0,
internal/plugin/server.go updateResponseForDeviceMounts), for CDI gpuconf's own answer
(docs/isolation.md's table; NVIDIA's cdi-cri sets no variable and names its devices under
another vendor, server.go updateResponseForCDI).

Read-only on the GPUs: whole and time-sliced classes only (no MIG, no MPS, no compute mode),
and the runtime finds the recording stand-ins of nvidia-smi and nvidia-cuda-mps-control first
on its PATH (plugin_process.FAKE_BIN), which must not be asked anything."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from go_kubelet import GoKubelet, kubelet_for, prebuilt_or_installed
from plugin_process import NodeProcess
from real_gpu_cluster import CLASS, SHARING, catalog_model, cluster_file, rendered_node_config

from gpuconf.node.nvml.api import GpuInfo

RESOURCE = f"gpuconf.dev/{CLASS}"
# The cluster's containerd config version, for each device list strategy it gives the pool
# (gpuconf/compiler/resolve/device_lists.py: CDI from containerd config version 3).
STRATEGIES = {"volume-mounts": None, "cdi": 3}
VOLUME_MOUNTS_ROOT = "/var/run/nvidia-container-devices"  # server.go, deviceListAsVolumeMounts*


def offered_ids(gpus: tuple[GpuInfo, ...], replicas: int) -> dict[str, tuple[str, tuple[int, ...]]]:
    """What NVIDIA's plugin lists for these GPUs: each by UUID, or its replicas as
    <UUID>::<n> (internal/rm/device_map.go, AnnotatedID), healthy, on the GPU's NUMA node."""
    return {
        (gpu.uuid if replicas == 1 else f"{gpu.uuid}::{n}"): (
            "Healthy",
            () if gpu.numa_node is None else (gpu.numa_node,),
        )
        for gpu in gpus
        for n in range(replicas)
    }


def documented_container_options(strategy: str, uuid: str) -> dict[str, Any]:
    """What the container runtime gets from gpuconf's Allocate answer for one GPU, as the
    kubelet passes it on (docs/isolation.md's table): a time-sliced replica is given as its
    GPU, as NVIDIA's plugin does (server.go getAllocateResponse takes the annotated IDs' GPU
    IDs)."""
    if strategy == "cdi":  # CDI devices named by UUID, the legacy hook kept out by "void"
        return {
            "envs": {"NVIDIA_VISIBLE_DEVICES": "void"},
            "cdiDevices": [f"nvidia.com/gpu={uuid}"],
            "mounts": None,
        }
    return {  # NVIDIA's volume-mounts: one /dev/null mount per device, the folder in the env
        "envs": {"NVIDIA_VISIBLE_DEVICES": VOLUME_MOUNTS_ROOT},
        "cdiDevices": None,
        "mounts": [
            {
                "containerPath": f"{VOLUME_MOUNTS_ROOT}/{uuid}",
                "hostPath": "/dev/null",
                "readOnly": False,
            }
        ],
    }


def container_options(admitted: dict[str, Any]) -> dict[str, Any]:
    return {key: admitted[key] for key in ("envs", "cdiDevices", "mounts")}


@pytest.mark.gpu
@pytest.mark.parametrize("strategy", sorted(STRATEGIES))
@pytest.mark.parametrize("sharing", sorted(SHARING))
def test_the_kubelet_lists_the_real_gpus_and_admits_a_pod_on_one_as_documented(
    real_gpus: tuple[GpuInfo, ...], tmp_path: Path, sharing: str, strategy: str
) -> None:
    model = catalog_model(real_gpus)
    binary = prebuilt_or_installed()
    cluster = cluster_file(model.name, len(real_gpus), SHARING[sharing], STRATEGIES[strategy])
    config = rendered_node_config(tmp_path, cluster).read_text()
    assert yaml.safe_load(config)["deviceListStrategy"] == strategy
    replicas = SHARING[sharing].get("replicas", 1)
    files = tmp_path / "node"
    files.mkdir()
    process = NodeProcess(files, config, gpus=None)
    kubelet = kubelet_for(binary, process).start()
    process.start()
    try:
        connected = kubelet.wait_connected(RESOURCE, timeout=60)
        assert connected["endpoint"] == process.socket(RESOURCE).name
        offered = offered_ids(real_gpus, replicas)
        assert kubelet.wait_devices(RESOURCE, lambda d: d == offered, timeout=30) == offered
        count = len(offered)
        assert kubelet.call("capacity") == {
            "capacity": {RESOURCE: count},
            "allocatable": {RESOURCE: count},
        }

        admitted = kubelet.call("admit", pod="pod-real", resource=RESOURCE, count=1)
        (device,) = admitted["devices"]
        assert device in offered
        uuid = device.split("::")[0]
        assert uuid in {gpu.uuid for gpu in real_gpus}
        assert container_options(admitted) == documented_container_options(strategy, uuid)
        assert (admitted["deviceSpecs"], admitted["annotations"]) == (None, {})
        kubelet.call("release", pod="pod-real")

        assert process.stop() == 0, process.log()
        stopped(kubelet)
        assert process.commands() == []  # no nvidia-smi, no MPS control: the GPUs untouched
    finally:
        process.cleanup()
        kubelet.stop()


def stopped(kubelet: GoKubelet) -> None:
    """The kubelet's client sees the plugin's stream end (handler.go runClient disconnects
    it), and nothing was refused along the way."""
    kubelet.wait(lambda: kubelet.event("disconnected", RESOURCE), what=f"{RESOURCE} disconnected")
    assert not kubelet.event("refused")
