"""Kubelet restarts, config reloads, SIGTERM and start-up errors, on the real process."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import grpc
import pytest
from builders import dump, gpu_uuid, node_config, nvlink_box, resource, run_cli
from grpclib.const import Status
from kubelet_stub import KubeletStub
from plugin_process import NODE, NodeProcess, allocate, serving, wait_until

from gpuconf.node.kubelet.handed_out import HandedOut
from gpuconf.node.kubelet.plugin_server import DevicePluginService
from gpuconf.node.kubelet.proto import api_pb2
from gpuconf.node.latest import Latest
from gpuconf.node.metrics import Metrics

WHOLE = "gpuconf.dev/h100"
EXTRA = "gpuconf.dev/h100-extra"
CONFIG = node_config([resource("h100", [0, 1, 2, 3])])


@pytest.fixture
def running(tmp_path: Path) -> Iterator[tuple[NodeProcess, KubeletStub]]:
    process = NodeProcess(tmp_path, CONFIG, nvlink_box())
    with serving(process) as kubelet:
        kubelet.wait_devices(WHOLE, timeout=10)
        yield process, kubelet


def test_a_kubelet_restart_is_followed_by_a_new_registration_within_a_second(
    running: tuple[NodeProcess, KubeletStub],
) -> None:
    process, old = running
    # Read while the first registration stands: once the socket is gone the plugin serves anew
    # and reads 0 until the new kubelet takes it (waiting for 1 there raced that).
    wait_until(
        lambda: process.metric("gpuconf_node_registered", resource=WHOLE) == 1, what="registered"
    )
    old.stop()
    process.socket(WHOLE).unlink()  # the kubelet wipes the plugin sockets when it starts
    new = KubeletStub(process.plugin_dir).start()
    restarted = time.monotonic()
    try:
        new.wait_registered(WHOLE, timeout=3)
        registered_at = new.registrations[0][0]
        assert registered_at - restarted < 1.5  # ~1 s, with slack for a busy test machine
        assert len(new.wait_devices(WHOLE)) == 4
        wait_until(
            lambda: process.metric("gpuconf_node_registered", resource=WHOLE) == 1,
            what="registered again",
        )
    finally:
        new.stop()


def test_a_valid_config_change_is_applied_without_a_restart(
    running: tuple[NodeProcess, KubeletStub],
) -> None:
    process, kubelet = running
    assert process.process is not None
    pid = process.process.pid
    changed = node_config(
        [resource("h100", [0, 1, 2]), resource("h100-extra", [4, 5], sharing={"strategy": "time-slicing", "replicas": 2})],
        deviceListStrategy="volume-mounts",
    )  # fmt: skip
    process.write_config(changed)
    kubelet.wait_registered(EXTRA, timeout=5)
    assert sorted(kubelet.wait_devices(EXTRA)) == [
        f"{gpu_uuid(i)}::{n}" for i in (4, 5) for n in (0, 1)
    ]
    assert sorted(kubelet.wait_devices(WHOLE, lambda d: len(d) == 3)) == [
        gpu_uuid(i) for i in range(3)
    ]
    with process.plugin(WHOLE) as plugin:
        response = allocate(plugin, [gpu_uuid(1)]).container_responses[0]
    assert response.envs["NVIDIA_VISIBLE_DEVICES"] == "/var/run/nvidia-container-devices"
    assert [m.container_path for m in response.mounts] == [
        f"/var/run/nvidia-container-devices/{gpu_uuid(1)}"
    ]
    assert process.process.pid == pid
    assert process.alive()


def test_a_resource_removed_from_the_config_ends_its_list_and_watch_streams_with_unavailable(
    running: tuple[NodeProcess, KubeletStub],
) -> None:
    """The kubelet drops a plugin only when its stream ends (test_kubelet_go.py shows it)."""
    process, _ = running
    with process.plugin(WHOLE) as plugin:
        stream = plugin.ListAndWatch(api_pb2.Empty(), timeout=5)
        assert len(next(stream).devices) == 4
        process.write_config(node_config([resource("h100-extra", [0, 1])]))
        with pytest.raises(grpc.RpcError) as ended:
            for _ in stream:
                pass
    assert ended.value.code() == grpc.StatusCode.UNAVAILABLE
    assert ended.value.details() == "the gpuconf.dev/h100 plugin stopped serving"


def test_an_invalid_config_is_refused_and_the_last_good_one_keeps_serving(
    running: tuple[NodeProcess, KubeletStub],
) -> None:
    process, _ = running
    process.write_config("apiVersion: gpuconf.dev/v1alpha1\nkind: NodeConfig\nresources: [\n")
    wait_until(
        lambda: process.metric("gpuconf_node_config_reload_failures_total") == 1, what="a failure"
    )
    assert process.metric("gpuconf_node_config_refused") == 1  # the NodeConfigRefused alert
    broken = dict(
        CONFIG, resources=[{"name": "gpuconf.dev/x", "sharing": {"strategy": "sometimes"}}]
    )
    process.write_config(json.dumps(broken))
    wait_until(
        lambda: process.metric("gpuconf_node_config_reload_failures_total") == 2, what="another"
    )
    assert process.alive()
    with process.plugin(WHOLE) as plugin:
        assert allocate(plugin, [gpu_uuid(3)]).container_responses[0].envs
    log = process.log()
    assert "refused the changed node config" in log
    assert "Traceback" not in log


def test_strict_drift_policy_advertises_only_gpus_that_match_the_declaration(
    running: tuple[NodeProcess, KubeletStub],
) -> None:
    process, kubelet = running
    strict: dict[str, Any] = node_config([resource("h100", [0, 1, 2, 3])], driftPolicy="strict")
    strict["inventory"]["default"][1]["nvmlName"] = "NVIDIA A100-SXM4-80GB"
    process.write_config(strict)
    devices = kubelet.wait_devices(WHOLE, lambda d: len(d) == 3, timeout=5)
    assert sorted(devices) == [gpu_uuid(i) for i in (0, 2, 3)]
    assert process.metric("gpuconf_node_inventory_drift") == 1


def test_sigterm_stops_serving_removes_the_sockets_and_exits_zero(
    running: tuple[NodeProcess, KubeletStub],
) -> None:
    process, _ = running
    assert process.socket(WHOLE).is_socket()
    assert process.stop() == 0
    assert sorted(p.name for p in process.plugin_dir.iterdir()) == [
        "kubelet.sock",
        "pod-resources.sock",
    ]


def test_sighup_reloads_the_config(running: tuple[NodeProcess, KubeletStub]) -> None:
    process, _ = running
    assert process.process is not None
    process.process.send_signal(signal.SIGHUP)
    wait_until(lambda: "SIGHUP" in process.log(), what="the reload log line")
    assert process.alive()


def test_a_bad_config_at_start_is_a_message_and_exit_1(tmp_path: Path) -> None:
    config = tmp_path / "node-config.yaml"
    config.write_text("kind: NodeConfig\n")
    result = subprocess.run(
        [sys.executable, "-m", "gpuconf", "node", "run", "--config", str(config),
         "--node-name", NODE, "--plugin-dir", str(tmp_path), "--nvml", "fake:/nonexistent"],
        capture_output=True, text=True, timeout=30, env=dict(os.environ),
    )  # fmt: skip
    assert result.returncode == 1
    assert "node-config.yaml" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize(
    ("what", "said"), [("file", "is not a folder"), ("none", "does not exist")]
)
def test_a_plugin_dir_that_is_not_a_folder_is_named_for_what_it_is(
    tmp_path: Path, what: str, said: str
) -> None:
    process = NodeProcess(tmp_path, CONFIG, nvlink_box())
    plugin_dir = tmp_path / "device-plugins"
    if what == "file":
        plugin_dir.write_text("")
    command = process.command()
    command[command.index("--plugin-dir") + 1] = str(plugin_dir)
    result = subprocess.run(command, capture_output=True, text=True, timeout=30)
    assert result.returncode == 1
    assert f"{plugin_dir}: the kubelet device-plugin directory {said}" in result.stderr


def test_a_folder_where_a_plugin_socket_goes_is_a_message_naming_it_and_exit_1(
    tmp_path: Path,
) -> None:
    process = NodeProcess(tmp_path, CONFIG, nvlink_box())
    socket_path = process.plugin_dir / "gpuconf-gpuconf.dev_h100.sock"
    socket_path.mkdir()
    try:
        process.start()
        assert process.process is not None
        assert process.process.wait(timeout=30) == 1
        assert f"{socket_path}: cannot serve the device plugin here" in process.log()
        assert "internal error" not in process.log()
    finally:
        process.stop()
        socket_path.rmdir()


def test_a_folder_where_the_socket_goes_after_a_kubelet_restart_is_retried_not_fatal(
    running: tuple[NodeProcess, KubeletStub],
) -> None:
    process, old = running
    old.stop()
    socket_path = process.socket(WHOLE)
    socket_path.unlink()
    socket_path.mkdir()  # the kubelet restarted; something else took the socket's place
    new = KubeletStub(process.plugin_dir).start()
    try:
        wait_until(
            lambda: process.metric("gpuconf_node_plugin_socket_unavailable", resource=WHOLE) == 1,
            what="the socket reported unavailable",
        )
        assert process.alive()
        assert "cannot start" not in process.log()
        assert f"{socket_path}: cannot serve the device plugin here" in process.log()
        socket_path.rmdir()
        new.wait_registered(WHOLE, timeout=5)
        assert len(new.wait_devices(WHOLE)) == 4
        assert process.metric("gpuconf_node_plugin_socket_unavailable", resource=WHOLE) == 0
        assert process.log().count("cannot serve the device plugin here") == 1  # said once
    finally:
        new.stop()


def test_a_resource_added_by_a_reload_whose_socket_cannot_be_made_waits_for_it(
    running: tuple[NodeProcess, KubeletStub],
) -> None:
    process, kubelet = running
    extra_socket = process.socket(EXTRA)
    extra_socket.mkdir()
    process.write_config(node_config([resource("h100", [0, 1, 2]), resource("h100-extra", [3])]))
    wait_until(
        lambda: process.metric("gpuconf_node_plugin_socket_unavailable", resource=EXTRA) == 1,
        what="the new resource's socket reported unavailable",
    )
    assert process.alive()
    assert len(kubelet.wait_devices(WHOLE, lambda d: len(d) == 3)) == 3
    extra_socket.rmdir()
    kubelet.wait_registered(EXTRA, timeout=5)
    assert sorted(kubelet.wait_devices(EXTRA)) == [gpu_uuid(3)]


class _StreamReadingItsRequest:
    """A ListAndWatch call whose request has not arrived yet: the kubelet opens one right after
    Register returns (devicemanager/plugin/v1beta1 handler.go), so a stop can land there."""

    def __init__(self) -> None:
        self.arrived = asyncio.Event()
        self.sent: list[Any] = []
        self.trailers: tuple[Any, str] | None = None

    async def recv_message(self) -> Any:
        await self.arrived.wait()
        return api_pb2.Empty()

    async def send_message(self, message: Any) -> None:
        self.sent.append(message)

    async def send_trailing_metadata(self, *, status: Any, status_message: str) -> None:
        self.trailers = (status, status_message)


def test_a_list_and_watch_still_reading_its_request_when_the_plugin_stops_is_ended_too() -> None:
    view = SimpleNamespace(resource=SimpleNamespace(name="gpuconf.dev/h100"))
    service = DevicePluginService(Latest(view), Metrics(), HandedOut())  # type: ignore[arg-type]
    stream = _StreamReadingItsRequest()

    async def stop_while_reading() -> None:
        call = asyncio.ensure_future(service.ListAndWatch(stream))  # type: ignore[arg-type]
        await asyncio.sleep(0)
        assert service.streams == 1  # waited for by the stop, not cancelled unanswered
        service.end_streams()
        stream.arrived.set()
        await call

    asyncio.run(stop_while_reading())
    assert stream.sent == []
    assert stream.trailers == (Status.UNAVAILABLE, "the gpuconf.dev/h100 plugin stopped serving")
    assert service.streams == 0


@pytest.mark.parametrize("port", ["65536", "-1", "http"])
@pytest.mark.parametrize("command", ["run", "setup"])
def test_a_metrics_port_out_of_range_is_a_usage_error_not_an_internal_one(
    tmp_path: Path, command: str, port: str
) -> None:
    config = tmp_path / "node-config.yaml"
    config.write_text(dump(CONFIG))
    more = ["--node-name", NODE, "--nvml", "fake:/nonexistent"] if command == "run" else []
    result = run_cli("node", command, "--config", str(config), *more, f"--metrics-port={port}")
    assert result.code == 2, result.err
    assert "--metrics-port: a TCP port is 0 to 65535" in result.err
