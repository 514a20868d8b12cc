"""Streams never starve short calls, and a hung kubelet delays nothing but its own registration."""

from __future__ import annotations

import threading
import urllib.request
from collections.abc import Iterator
from typing import Any

import grpc
import pytest
from builders import gpu_uuid, node_config, resource
from kubelet_stub import KubeletStub
from plugin_process import NodeProcess, allocate, plain_gpu, serving, wait_until

from gpuconf.node.kubelet.plugin_server import MAX_STREAMS
from gpuconf.node.kubelet.proto import api_pb2

WHOLE = "gpuconf.dev/h100"


def whole_node(files: Any) -> NodeProcess:
    config = node_config([resource("h100", [0, 1, 2, 3])], gpus=4, deviceListStrategy="cdi")
    return NodeProcess(files, config, [plain_gpu(i) for i in range(4)])


class Streams:
    """ListAndWatch streams a test opens on one socket, each read on its own thread."""

    def __init__(self, process: NodeProcess) -> None:
        self.channel = grpc.insecure_channel(f"unix://{process.socket(WHOLE)}")
        from gpuconf.node.kubelet.proto import api_pb2_grpc

        self.stub = api_pb2_grpc.DevicePluginStub(self.channel)  # type: ignore[no-untyped-call]
        self.calls: list[Any] = []
        self.latest: list[dict[str, str]] = []
        self.errors: list[grpc.StatusCode] = []
        self.changed = threading.Condition()

    def open(self, count: int) -> None:
        for _ in range(count):
            call = self.stub.ListAndWatch(api_pb2.Empty())
            self.calls.append(call)
            self.latest.append({})
            slot = len(self.calls) - 1
            threading.Thread(target=self._read, args=(slot, call), daemon=True).start()

    def _read(self, slot: int, call: Any) -> None:
        try:
            for message in call:
                with self.changed:
                    self.latest[slot] = {d.ID: d.health for d in message.devices}
                    self.changed.notify_all()
        except grpc.RpcError as error:
            with self.changed:
                self.errors.append(error.code())
                self.changed.notify_all()

    def wait(self, check: Any, timeout: float) -> None:
        with self.changed:
            assert self.changed.wait_for(check, timeout), "timed out waiting on the streams"

    def close(self) -> None:
        for call in self.calls:
            call.cancel()
        self.channel.close()


@pytest.fixture
def node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[NodeProcess, KubeletStub]]:
    process = whole_node(tmp_path_factory.mktemp("streams"))
    with serving(process) as kubelet:
        kubelet.wait_devices(WHOLE, timeout=10)
        yield process, kubelet


def test_allocate_answers_while_every_stream_slot_is_taken(
    node: tuple[NodeProcess, KubeletStub],
) -> None:
    process, _ = node
    streams = Streams(process)
    try:
        streams.open(MAX_STREAMS - 1)  # the kubelet stand-in holds one
        streams.wait(lambda: all(streams.latest[: MAX_STREAMS - 1]), timeout=10)
        streams.open(1)
        streams.wait(lambda: streams.errors, timeout=5)
        assert streams.errors == [grpc.StatusCode.RESOURCE_EXHAUSTED]
        with process.plugin(WHOLE) as plugin:
            for _ in range(10):
                response = allocate(plugin, [gpu_uuid(2)])
                assert response.container_responses[0].cdi_devices[0].name.endswith(gpu_uuid(2))
    finally:
        streams.close()


def test_with_a_hung_kubelet_an_xid_still_reaches_open_streams_at_once(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    process = whole_node(tmp_path_factory.mktemp("hung"))
    kubelet = KubeletStub(process.plugin_dir, process.pod_resources_socket)
    kubelet.answer_registrations.clear()  # accepts Register, never answers
    with serving(process, kubelet):
        wait_until(process.socket(WHOLE).exists, timeout=10, what="the plugin socket")
        streams = Streams(process)
        try:
            streams.open(1)
            streams.wait(lambda: streams.latest[0] or streams.errors, timeout=30)
            assert not streams.errors
            process.send_xid(gpu_uuid(1), 48)
            streams.wait(lambda: streams.latest[0].get(gpu_uuid(1)) == "Unhealthy", timeout=30)
            # Delivered while the registration still hangs: its first attempt gives up only
            # after REGISTER_TIMEOUT_SECONDS. A machine so loaded that it gave up first shows
            # nothing either way. (bench/node.py times the delivery.)
            failed = {"resource": WHOLE, "result": "failed"}
            if process.metric("gpuconf_node_registrations_total", **failed):
                pytest.skip("the first registration gave up before the XID was delivered")
            url = f"http://127.0.0.1:{process.metrics_port}/healthz"
            with urllib.request.urlopen(url, timeout=5) as reply:
                assert reply.status == 200
            assert not kubelet.registrations
        finally:
            streams.close()
