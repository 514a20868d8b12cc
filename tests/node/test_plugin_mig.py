"""MIG resources advertise and allocate MIG devices by their UUIDs."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from builders import mig_uuid, node_config, resource
from kubelet_stub import KubeletStub
from plugin_process import NodeProcess, allocate, plain_gpu, serving

SMALL = "gpuconf.dev/h100-1g"
LARGE = "gpuconf.dev/h100-3g"


def mig_gpu() -> dict[str, Any]:
    gpu = plain_gpu(0)
    gpu["migEnabled"] = True
    gpu["migDevices"] = [
        {"uuid": mig_uuid(0, gi), "profile": "1g.10gb", "gpuInstanceId": gi, "computeInstanceId": 0}
        for gi in (7, 8, 9)
    ] + [{"uuid": mig_uuid(0, 2), "profile": "3g.40gb", "gpuInstanceId": 2, "computeInstanceId": 0}]
    return gpu


@pytest.fixture(scope="module")
def node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[NodeProcess, KubeletStub]]:
    config = node_config(
        [
            resource("h100-1g", [0], migProfile="1g.10gb"),
            resource("h100-3g", [0], migProfile="3g.40gb"),
        ],
        gpus=1,
        deviceListStrategy="cdi",
    )
    config["inventory"]["default"][0]["mig"] = {"1g.10gb": 3, "3g.40gb": 1}
    process = NodeProcess(tmp_path_factory.mktemp("mig"), config, [mig_gpu()])
    with serving(process) as kubelet:
        yield process, kubelet


def test_each_profile_lists_its_mig_devices(node: tuple[NodeProcess, KubeletStub]) -> None:
    _, kubelet = node
    assert sorted(kubelet.wait_devices(SMALL, timeout=10)) == [mig_uuid(0, gi) for gi in (7, 8, 9)]
    assert sorted(kubelet.wait_devices(LARGE, timeout=10)) == [mig_uuid(0, 2)]


def test_mig_devices_are_allocated_as_cdi_devices_named_by_mig_uuid(
    node: tuple[NodeProcess, KubeletStub],
) -> None:
    process, kubelet = node
    kubelet.wait_registered(SMALL, timeout=10)
    with process.plugin(SMALL) as plugin:
        response = allocate(plugin, [mig_uuid(0, 7), mig_uuid(0, 9)]).container_responses[0]
    assert [d.name for d in response.cdi_devices] == [
        f"nvidia.com/gpu={mig_uuid(0, 7)}",
        f"nvidia.com/gpu={mig_uuid(0, 9)}",
    ]


def test_an_xid_for_one_gpu_instance_marks_only_its_mig_device(
    node: tuple[NodeProcess, KubeletStub],
) -> None:
    process, kubelet = node
    kubelet.wait_devices(SMALL, timeout=10)
    process.send_xid(plain_gpu(0)["uuid"], 94, gpu_instance_id=8)  # contained: workload class
    devices = kubelet.wait_devices(SMALL, lambda d: d[mig_uuid(0, 8)][0] == "Unhealthy", timeout=5)
    assert devices[mig_uuid(0, 7)][0] == "Healthy"
    assert kubelet.wait_devices(LARGE)[mig_uuid(0, 2)][0] == "Healthy"
