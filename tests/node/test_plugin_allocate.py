"""Allocate and GetPreferredAllocation over the plugin's unix socket."""

from __future__ import annotations

from collections.abc import Iterator

import grpc
import pytest
from builders import gpu_uuid, node_config, nvlink_box, resource
from plugin_process import NodeProcess, allocate, plain_gpu, serving

from gpuconf.node.kubelet.proto import api_pb2

WHOLE = "gpuconf.dev/h100"
SLICED = "gpuconf.dev/h100-sliced"
MPS = "gpuconf.dev/h100-mps"


@pytest.fixture(scope="module")
def node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NodeProcess]:
    files = tmp_path_factory.mktemp("allocate")
    config = node_config(
        [
            resource("h100", list(range(8))),
            resource(
                "h100-sliced",
                [8],
                sharing={
                    "strategy": "time-slicing",
                    "replicas": 4,
                    "failRequestsGreaterThanOne": True,
                },
            ),
            resource(
                "h100-mps",
                [9],
                sharing={
                    "strategy": "mps",
                    "replicas": 2,
                    "mpsPipeDirectory": str(files / "mps" / "h100-mps" / "pipe"),
                    "mpsShmDirectory": str(files / "mps" / "shm"),
                    "mpsMemoryLimitMiB": 40000,
                    "mpsActiveThreadPercentage": 50,
                },
            ),
        ],
        gpus=10,
        deviceListStrategy="envvar",
    )
    process = NodeProcess(files, config, [*nvlink_box(), plain_gpu(8), plain_gpu(9, 1)])
    with serving(process) as kubelet:
        for name in (WHOLE, SLICED, MPS):
            kubelet.wait_registered(name, timeout=10)
        yield process


def test_legacy_envvar_gives_whole_gpus_by_uuid_in_nvidia_visible_devices(
    node: NodeProcess,
) -> None:
    before = node.metric("gpuconf_node_allocations_total", resource=WHOLE)
    with node.plugin(WHOLE) as plugin:
        response = allocate(plugin, [gpu_uuid(0), gpu_uuid(3)], [gpu_uuid(5)])
    assert [dict(c.envs) for c in response.container_responses] == [
        {"NVIDIA_VISIBLE_DEVICES": f"{gpu_uuid(0)},{gpu_uuid(3)}"},
        {"NVIDIA_VISIBLE_DEVICES": gpu_uuid(5)},
    ]
    assert node.metric("gpuconf_node_allocations_total", resource=WHOLE) == before + 2


def test_unknown_device_ids_are_invalid_arguments_that_name_them(node: NodeProcess) -> None:
    with node.plugin(WHOLE) as plugin, pytest.raises(grpc.RpcError) as raised:
        allocate(plugin, [gpu_uuid(0), "GPU-not-here"])
    assert raised.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "unknown device IDs for gpuconf.dev/h100: GPU-not-here" in str(raised.value.details())
    assert node.metric("gpuconf_node_allocate_errors_total", resource=WHOLE) >= 1
    assert node.alive()


def test_one_replica_is_fine_but_two_are_refused_when_fail_requests_greater_than_one(
    node: NodeProcess,
) -> None:
    with node.plugin(SLICED) as plugin:
        one = allocate(plugin, [f"{gpu_uuid(8)}::2"])
        assert dict(one.container_responses[0].envs) == {"NVIDIA_VISIBLE_DEVICES": gpu_uuid(8)}
        with pytest.raises(grpc.RpcError) as raised:
            allocate(plugin, [f"{gpu_uuid(8)}::0", f"{gpu_uuid(8)}::1"])
    assert raised.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "at most 1" in str(raised.value.details())


def test_mps_replicas_get_the_daemon_pipe_and_shm_and_no_limits_of_their_own(
    node: NodeProcess,
) -> None:
    pipe = str(node.files / "mps" / "h100-mps" / "pipe")
    with node.plugin(MPS) as plugin:
        response = allocate(plugin, [f"{gpu_uuid(9)}::1"]).container_responses[0]
    assert dict(response.envs) == {
        "NVIDIA_VISIBLE_DEVICES": gpu_uuid(9),
        "CUDA_MPS_PIPE_DIRECTORY": pipe,
    }
    assert [(m.host_path, m.container_path) for m in response.mounts] == [
        (pipe, pipe),
        (str(node.files / "mps" / "shm"), "/dev/shm"),
    ]


def preferred(
    node: NodeProcess, available: list[int], must_include: list[int], size: int
) -> list[str]:
    request = api_pb2.PreferredAllocationRequest(
        container_requests=[
            api_pb2.ContainerPreferredAllocationRequest(
                available_deviceIDs=[gpu_uuid(i) for i in available],
                must_include_deviceIDs=[gpu_uuid(i) for i in must_include],
                allocation_size=size,
            )
        ]
    )
    with node.plugin(WHOLE) as plugin:
        response = plugin.GetPreferredAllocation(request, timeout=5)
    return list(response.container_responses[0].deviceIDs)


def test_preferred_allocation_picks_the_nvlink_richest_four_around_a_busy_gpu(
    node: NodeProcess,
) -> None:
    not_busy = [0, 2, 3, 4, 5, 6, 7]
    assert preferred(node, not_busy, [], 4) == [gpu_uuid(i) for i in (0, 2, 3, 4)]
    assert preferred(node, not_busy, [5], 4) == [gpu_uuid(i) for i in (4, 5, 6, 7)]


def test_pre_start_container_is_a_no_op(node: NodeProcess) -> None:
    with node.plugin(WHOLE) as plugin:
        response = plugin.PreStartContainer(
            api_pb2.PreStartContainerRequest(devices_ids=[gpu_uuid(0)]), timeout=5
        )
    assert response == api_pb2.PreStartContainerResponse()
