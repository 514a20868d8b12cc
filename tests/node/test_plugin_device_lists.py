"""What Allocate hands the runtime per device list strategy, over the plugin's real socket."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from builders import gpu_uuid, node_config, resource
from plugin_process import NodeProcess, allocate, plain_gpu, serving

from gpuconf.node.kubelet.proto import api_pb2

WHOLE = "gpuconf.dev/h100"
SHARED = "gpuconf.dev/h100-shared"


def given(response: api_pb2.ContainerAllocateResponse) -> dict[str, object]:
    return {
        "cdi": [d.name for d in response.cdi_devices],
        "envs": dict(response.envs),
        "mounts": [(m.host_path, m.container_path) for m in response.mounts],
    }


@pytest.fixture(scope="module", params=["cdi", "volume-mounts", "envvar"])
def node(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, NodeProcess]]:
    strategy = request.param
    config = node_config(
        [
            resource("h100", [0, 1]),
            resource("h100-shared", [2], sharing={"strategy": "time-slicing", "replicas": 2}),
        ],
        gpus=3,
        deviceListStrategy=strategy,
    )
    process = NodeProcess(
        tmp_path_factory.mktemp(strategy), config, [plain_gpu(i) for i in range(3)]
    )
    with serving(process) as kubelet:
        kubelet.wait_registered(WHOLE, timeout=10)
        kubelet.wait_registered(SHARED, timeout=10)
        yield strategy, process


EXPECTED = {
    "cdi": {
        "cdi": [f"nvidia.com/gpu={gpu_uuid(1)}", f"nvidia.com/gpu={gpu_uuid(0)}"],
        "envs": {"NVIDIA_VISIBLE_DEVICES": "void"},
        "mounts": [],
    },
    "volume-mounts": {
        "cdi": [],
        "envs": {"NVIDIA_VISIBLE_DEVICES": "/var/run/nvidia-container-devices"},
        "mounts": [
            ("/dev/null", f"/var/run/nvidia-container-devices/{gpu_uuid(1)}"),
            ("/dev/null", f"/var/run/nvidia-container-devices/{gpu_uuid(0)}"),
        ],
    },
    "envvar": {
        "cdi": [],
        "envs": {"NVIDIA_VISIBLE_DEVICES": f"{gpu_uuid(1)},{gpu_uuid(0)}"},
        "mounts": [],
    },
}


def test_whole_gpus_reach_the_runtime_as_the_strategy_says(node: tuple[str, NodeProcess]) -> None:
    strategy, process = node
    with process.plugin(WHOLE) as plugin:
        response = allocate(plugin, [gpu_uuid(1), gpu_uuid(0)]).container_responses[0]
    assert given(response) == EXPECTED[strategy]


def test_a_replica_is_given_as_its_gpu_once(node: tuple[str, NodeProcess]) -> None:
    strategy, process = node
    with process.plugin(SHARED) as plugin:
        response = allocate(plugin, [f"{gpu_uuid(2)}::1"]).container_responses[0]
    uuid = gpu_uuid(2)
    if strategy == "cdi":
        assert [d.name for d in response.cdi_devices] == [f"nvidia.com/gpu={uuid}"]
    elif strategy == "volume-mounts":
        assert [m.container_path for m in response.mounts] == [
            f"/var/run/nvidia-container-devices/{uuid}"
        ]
    else:
        assert dict(response.envs) == {"NVIDIA_VISIBLE_DEVICES": uuid}
