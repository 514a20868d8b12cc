"""What Allocate gives a container, as pure data."""

from __future__ import annotations

from typing import Any

import pytest
from builders import resource_settings

from gpuconf.api.node_facts import DeviceListStrategy
from gpuconf.node.devices import build_devices
from gpuconf.node.kubelet.allocation import AllocationRefused, container_allocation
from gpuconf.node.nvml.api import GpuInfo
from gpuconf.node.resource_view import ResourceView

GPUS = {i: GpuInfo(i, f"GPU-{i}", "x", 1, f"0000:0{i}:00.0") for i in range(2)}


def view(sharing: dict[str, Any], strategy: DeviceListStrategy = "envvar") -> ResourceView:
    settings = resource_settings(
        {"name": "gpuconf.dev/x", "class": "x", "gpus": {"default": [0, 1]}, "sharing": sharing}
    )
    devices = build_devices(settings, GPUS, [0, 1]).devices
    return ResourceView(settings, strategy, devices, frozenset(d.id for d in devices))


def test_replicas_of_one_gpu_are_given_as_that_gpu_once() -> None:
    shared = view({"strategy": "time-slicing", "replicas": 2})
    response = container_allocation(shared, ["GPU-1::0", "GPU-0::1", "GPU-1::1"])
    assert dict(response.envs) == {"NVIDIA_VISIBLE_DEVICES": "GPU-1,GPU-0"}


def test_volume_mounts_name_each_device_under_the_nvidia_directory() -> None:
    response = container_allocation(view({"strategy": "none"}, "volume-mounts"), ["GPU-0", "GPU-1"])
    assert dict(response.envs) == {"NVIDIA_VISIBLE_DEVICES": "/var/run/nvidia-container-devices"}
    assert [(m.host_path, m.container_path) for m in response.mounts] == [
        ("/dev/null", "/var/run/nvidia-container-devices/GPU-0"),
        ("/dev/null", "/var/run/nvidia-container-devices/GPU-1"),
    ]


def test_unknown_ids_are_named_in_the_refusal() -> None:
    with pytest.raises(
        AllocationRefused, match=r"unknown device IDs for gpuconf\.dev/x: GPU-9, nope"
    ):
        container_allocation(view({"strategy": "none"}), ["GPU-0", "GPU-9", "nope"])


def test_fail_requests_greater_than_one_refuses_two_replicas() -> None:
    shared = view({"strategy": "time-slicing", "replicas": 2, "failRequestsGreaterThanOne": True})
    assert container_allocation(shared, ["GPU-0::0"]).envs["NVIDIA_VISIBLE_DEVICES"] == "GPU-0"
    with pytest.raises(AllocationRefused, match="at most 1"):
        container_allocation(shared, ["GPU-0::0", "GPU-1::0"])


def test_cdi_names_each_gpu_by_uuid_and_keeps_the_legacy_hook_out() -> None:
    shared = view({"strategy": "time-slicing", "replicas": 2}, "cdi")
    response = container_allocation(shared, ["GPU-1::0", "GPU-1::1", "GPU-0::0"])
    assert [d.name for d in response.cdi_devices] == [
        "nvidia.com/gpu=GPU-1",
        "nvidia.com/gpu=GPU-0",
    ]
    assert dict(response.envs) == {"NVIDIA_VISIBLE_DEVICES": "void"}
    assert not response.mounts


def test_mps_clients_get_the_pipe_and_shared_memory_but_no_limits_they_could_change() -> None:
    sharing = {
        "strategy": "mps",
        "replicas": 2,
        "mpsPipeDirectory": "/run/nvidia/mps/x/pipe",
        "mpsShmDirectory": "/run/nvidia/mps/shm",
        "mpsMemoryLimitMiB": 1000,
    }
    response = container_allocation(view(sharing, "cdi"), ["GPU-0::1"])
    assert dict(response.envs) == {
        "NVIDIA_VISIBLE_DEVICES": "void",
        "CUDA_MPS_PIPE_DIRECTORY": "/run/nvidia/mps/x/pipe",
    }
    assert [(m.host_path, m.container_path) for m in response.mounts] == [
        ("/run/nvidia/mps/x/pipe", "/run/nvidia/mps/x/pipe"),
        ("/run/nvidia/mps/shm", "/dev/shm"),
    ]
