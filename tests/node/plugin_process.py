"""Run the real `gpuconf node run` process against a fake inventory in a short temp dir."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import grpc
import pytest
from builders import H100, gpu_uuid
from kubelet_stub import KubeletStub

from gpuconf.node.kubelet.proto import api_pb2, api_pb2_grpc

NODE = "node-a"
FAKE_BIN = Path(__file__).with_name("fake_bin")
"""Stand-ins for nvidia-cuda-mps-control and nvidia-smi that record their commands."""


def write_atomically(path: Path, text: str) -> None:
    partial = path.with_name(path.name + ".partial")
    partial.write_text(text, encoding="utf-8")
    os.replace(partial, path)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class NodeProcess:
    """gpus: the fake NVML's GPUs, or None to run on this machine's own (`--nvml real`)."""

    def __init__(
        self, files: Path, config: Mapping[str, Any] | str, gpus: list[dict[str, Any]] | None
    ) -> None:
        self.files = files
        self.plugin_dir = Path(tempfile.mkdtemp(prefix="gc-", dir="/tmp"))
        self.config_path = files / "node-config.yaml"
        self.fake_path = files / "fake-nvml.yaml"
        self.events_path = files / "xid.jsonl"
        self.log_path = files / "node.log"
        self.commands_path = files / "commands.log"
        self.pod_resources_socket = self.plugin_dir / "pod-resources.sock"
        self.metrics_port = free_port()
        self.write_config(config)
        self.nvml = "real" if gpus is None else f"fake:{self.fake_path}"
        if gpus is not None:
            self.write_gpus(gpus)
        self.events_path.touch()
        self.process: subprocess.Popen[bytes] | None = None
        self.started_at = 0.0

    def write_config(self, config: Mapping[str, Any] | str) -> None:
        text = config if isinstance(config, str) else json.dumps(config, indent=1)
        write_atomically(self.config_path, text)

    def write_gpus(self, gpus: list[dict[str, Any]]) -> None:
        fake = {"driverVersion": "550.54.15", "gpus": gpus, "events": self.events_path.name}
        write_atomically(self.fake_path, json.dumps(fake, indent=1))

    def send_xid(self, uuid: str, xid: int, gpu_instance_id: int | None = None) -> None:
        event: dict[str, Any] = {"uuid": uuid, "xid": xid}
        if gpu_instance_id is not None:
            event["gpuInstanceId"] = gpu_instance_id
        with self.events_path.open("a", encoding="utf-8") as stream:
            stream.write(json.dumps(event) + "\n")

    def command(self) -> list[str]:
        return [
            sys.executable, "-m", "gpuconf", "node", "run",
            "--config", str(self.config_path),
            "--node-name", NODE,
            "--plugin-dir", str(self.plugin_dir),
            "--nvml", self.nvml,
            "--pod-resources-socket", str(self.pod_resources_socket),
            "--state-dir", str(self.files / "state"),
            "--metrics-port", str(self.metrics_port),
        ]  # fmt: skip

    def environment(self) -> dict[str, str]:
        return {
            **os.environ,
            "PATH": f"{FAKE_BIN}{os.pathsep}{os.environ.get('PATH', '')}",
            "GPUCONF_FAKE_COMMAND_LOG": str(self.commands_path),
        }

    def commands(self) -> list[str]:
        """What the fake nvidia-cuda-mps-control and nvidia-smi were asked, in order."""
        try:
            return self.commands_path.read_text(encoding="utf-8").splitlines()
        except FileNotFoundError:
            return []

    def start(self) -> NodeProcess:
        with self.log_path.open("wb") as log:
            self.started_at = time.monotonic()
            self.process = subprocess.Popen(
                self.command(), stdout=log, stderr=subprocess.STDOUT, env=self.environment()
            )
        return self

    def reload(self) -> None:
        """SIGHUP: the runtime reads its config on its next turn, not at its next poll."""
        assert self.process is not None
        self.process.send_signal(signal.SIGHUP)

    def stop(self, timeout: float = 10.0) -> int:
        assert self.process is not None
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(5)
            raise AssertionError(f"the node runtime ignored SIGTERM; log:\n{self.log()}") from None

    def cleanup(self) -> None:
        """SIGTERM first, so the runtime quits the MPS daemons it started; SIGKILL if it hangs."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(5)
        shutil.rmtree(self.plugin_dir, ignore_errors=True)

    def status(self) -> Any:
        url = f"http://127.0.0.1:{self.metrics_port}/status"
        with urllib.request.urlopen(url, timeout=5) as response:
            return json.loads(response.read())

    def log(self) -> str:
        return self.log_path.read_text(encoding="utf-8", errors="replace")

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def socket(self, resource_name: str) -> Path:
        return self.plugin_dir / ("gpuconf-" + resource_name.replace("/", "_") + ".sock")

    @contextmanager
    def plugin(self, resource_name: str) -> Iterator[Any]:
        """A DevicePlugin client on the resource's socket."""
        with grpc.insecure_channel(f"unix://{self.socket(resource_name)}") as channel:
            yield api_pb2_grpc.DevicePluginStub(channel)  # type: ignore[no-untyped-call]

    def metrics(self) -> str:
        url = f"http://127.0.0.1:{self.metrics_port}/metrics"
        with urllib.request.urlopen(url, timeout=5) as response:
            return str(response.read().decode())

    def metric(self, name: str, **labels: str) -> float:
        wanted = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
        pattern = (
            re.escape(name) + (r"\{" + re.escape(wanted) + r"\}" if labels else "") + r" (\S+)"
        )
        found = re.search("^" + pattern + "$", self.metrics(), re.MULTILINE)
        return float(found.group(1)) if found else 0.0


def allocate(stub: Any, *containers: list[str]) -> api_pb2.AllocateResponse:
    request = api_pb2.AllocateRequest(
        container_requests=[api_pb2.ContainerAllocateRequest(devices_ids=ids) for ids in containers]
    )
    response: api_pb2.AllocateResponse = stub.Allocate(request, timeout=5)
    return response


HELD_UNKNOWN = (
    "gpuconf_node_pod_resources_up was 0 at the decision: the runtime could not say what is "
    "held, so every move waited; this run proves nothing (machine too slow?)"
)


def held_known(process: NodeProcess) -> bool:
    """Whether the runtime's List answered at its last poll: where it fails (times out on a
    starved machine, say) what is held is unknown and every move waits, so a test that a held
    device keeps a change waiting would pass for the wrong reason."""
    return bool(process.metric("gpuconf_node_pod_resources_up") == 1)


def assert_held_known(process: NodeProcess) -> None:
    """Right after a decision a test set up: fail, saying why, if what is held was unknown."""
    if not held_known(process):
        pytest.fail(HELD_UNKNOWN)


def wait_until(check: Any, timeout: float = 5.0, what: str = "") -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what or check}")
        time.sleep(0.05)


def plain_gpu(index: int, numa_node: int = 0) -> dict[str, Any]:
    return {
        "index": index,
        "uuid": gpu_uuid(index),
        "name": H100,
        "memoryMiB": 81559,
        "pciBusId": f"0000:{0x18 + index:02x}:00.0",
        "numaNode": numa_node,
    }


@contextmanager
def serving(process: NodeProcess, kubelet: KubeletStub | None = None) -> Iterator[KubeletStub]:
    """A kubelet stand-in first, then the plugin process; both stopped afterwards."""
    if kubelet is None:
        kubelet = KubeletStub(process.plugin_dir, process.pod_resources_socket)
    kubelet.start()
    process.start()
    try:
        yield kubelet
    finally:
        process.cleanup()
        kubelet.stop()
