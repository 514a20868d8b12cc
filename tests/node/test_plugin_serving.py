"""The real process registers every resource and streams complete device lists."""

from __future__ import annotations

import tempfile
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from builders import gpu_uuid, node_config, nvlink_box, read_node_config, resource
from kubelet_stub import KubeletStub
from plugin_process import NodeProcess, serving, wait_until

from gpuconf.api.node_facts import KUBELET_PLUGIN_DIR, MAX_UNIX_SOCKET_PATH
from gpuconf.node.kubelet.proto import api_pb2

WHOLE = "gpuconf.dev/h100"
SHARED = "gpuconf.dev/h100-shared"


@pytest.fixture(scope="module")
def node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[NodeProcess, KubeletStub]]:
    config = node_config(
        [
            resource("h100", [0, 1, 2, 3, 4, 5, 6]),
            resource("h100-shared", [7], sharing={"strategy": "time-slicing", "replicas": 4}),
        ]
    )
    process = NodeProcess(tmp_path_factory.mktemp("serving"), config, nvlink_box())
    with serving(process) as kubelet:
        yield process, kubelet


def test_every_resource_registers_with_its_socket_and_preferred_allocation(
    node: tuple[NodeProcess, KubeletStub],
) -> None:
    process, kubelet = node
    for name in (WHOLE, SHARED):
        request = kubelet.wait_registered(name, timeout=10)
        assert request.version == "v1beta1"
        assert request.endpoint == "gpuconf-" + name.replace("/", "_") + ".sock"
        assert request.options.get_preferred_allocation_available
        assert not request.options.pre_start_required
        assert (process.plugin_dir / request.endpoint).is_socket()


def test_whole_gpus_are_listed_by_uuid_with_their_numa_node(
    node: tuple[NodeProcess, KubeletStub],
) -> None:
    _, kubelet = node
    devices = kubelet.wait_devices(WHOLE, timeout=10)
    assert devices == {gpu_uuid(i): ("Healthy", (0 if i < 4 else 1,)) for i in range(7)}


def test_time_sliced_gpus_are_listed_as_replicas(node: tuple[NodeProcess, KubeletStub]) -> None:
    _, kubelet = node
    devices = kubelet.wait_devices(SHARED, timeout=10)
    assert sorted(devices) == [f"{gpu_uuid(7)}::{n}" for n in range(4)]
    assert all(len(device_id) <= 63 for device_id in devices)


def test_options_say_preferred_allocation_is_available(
    node: tuple[NodeProcess, KubeletStub],
) -> None:
    process, kubelet = node
    kubelet.wait_registered(WHOLE, timeout=10)
    with process.plugin(WHOLE) as plugin:
        options = plugin.GetDevicePluginOptions(api_pb2.Empty(), timeout=5)
    assert options.get_preferred_allocation_available


def test_metrics_count_registrations_and_advertised_devices(
    node: tuple[NodeProcess, KubeletStub],
) -> None:
    process, kubelet = node
    kubelet.wait_devices(SHARED, timeout=10)
    # Resources register on their own threads: SHARED's devices can arrive before WHOLE's
    # registration is counted.
    wait_until(
        lambda: (
            process.metric("gpuconf_node_registrations_total", resource=WHOLE, result="ok") >= 1
        ),
        timeout=10,
        what="WHOLE's registration in the metrics",
    )
    assert process.metric("gpuconf_node_devices", resource=SHARED, health="Healthy") == 4
    assert process.metric("gpuconf_node_inventory_drift") == 0


def test_healthz_answers_ok_while_the_loop_runs(node: tuple[NodeProcess, KubeletStub]) -> None:
    process, _ = node
    url = f"http://127.0.0.1:{process.metrics_port}/healthz"

    def answer() -> tuple[int, bytes] | None:
        # The metrics server may open after the first devices are served.
        try:
            with urllib.request.urlopen(url, timeout=5) as response:
                return (response.status, response.read())
        except urllib.error.URLError:
            return None

    assert wait_until(answer, timeout=10, what="/healthz") == (200, b"ok\n")


LONGEST_CLASS = "c" * 63
"""A class name as long as a DNS label may be: gpuconf.dev/<it> is a 75-character resource."""


def test_a_resource_named_as_long_as_validate_allows_is_served_from_the_kubelets_directory(
    tmp_path: Path,
) -> None:
    # A unix socket path holds at most 107 bytes: gpuconf-gpuconf.dev_<63 characters>.sock in
    # the kubelet's directory would be 113, and `gpuconf node run` would refuse to start.
    process = NodeProcess(tmp_path, node_config([resource(LONGEST_CLASS, [0])]), nvlink_box(1))
    plugin_dir = Path(tempfile.mkdtemp(prefix="gc-", dir="/tmp"))
    process.plugin_dir = plugin_dir / ("d" * (len(KUBELET_PLUGIN_DIR) - len(str(plugin_dir)) - 1))
    process.plugin_dir.mkdir()
    process.pod_resources_socket = plugin_dir / "pod-resources.sock"
    assert len(str(process.plugin_dir)) == len(KUBELET_PLUGIN_DIR)
    with serving(process) as kubelet:
        request = kubelet.wait_registered(f"gpuconf.dev/{LONGEST_CLASS}", timeout=10)
        assert (process.plugin_dir / request.endpoint).is_socket()
        assert len(f"{KUBELET_PLUGIN_DIR}/{request.endpoint}") <= MAX_UNIX_SOCKET_PATH
        assert kubelet.wait_devices(f"gpuconf.dev/{LONGEST_CLASS}", timeout=10)


def test_long_resource_names_that_share_a_beginning_get_sockets_of_their_own() -> None:
    first, second = (
        read_node_config(node_config([resource("c" * 62 + end, [0])])).resources[0] for end in "ab"
    )
    assert first.socket_name() != second.socket_name()
    longest = MAX_UNIX_SOCKET_PATH - len(KUBELET_PLUGIN_DIR) - 1
    assert len(first.socket_name()) == len(second.socket_name()) == longest
    short = read_node_config(node_config([resource("h100", [0])])).resources[0]
    assert short.socket_name() == "gpuconf-gpuconf.dev_h100.sock"
