"""The MPS control daemon's life, driven through a recording nvidia-cuda-mps-control on PATH."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest
from builders import gpu_uuid, node_config, resource
from kubelet_stub import KubeletStub
from plugin_process import NodeProcess, plain_gpu, serving, wait_until

MPS = "gpuconf.dev/h100-mps"
REPLICAS = 4


def pipe_of(process: NodeProcess) -> Path:
    return process.files / "mps" / "h100-mps" / "pipe"


@pytest.fixture(scope="module")
def node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[NodeProcess, KubeletStub]]:
    files = tmp_path_factory.mktemp("mps")
    sharing = {
        "strategy": "mps",
        "replicas": REPLICAS,
        "failRequestsGreaterThanOne": True,
        "mpsPipeDirectory": str(files / "mps" / "h100-mps" / "pipe"),
        "mpsShmDirectory": str(files / "mps" / "shm"),
        "mpsMemoryLimitMiB": 20000,
    }
    config = node_config(
        [resource("h100", [0]), resource("h100-mps", [1, 2], sharing=sharing)], gpus=3
    )
    process = NodeProcess(files, config, [plain_gpu(i) for i in range(3)])
    with serving(process) as kubelet:
        kubelet.wait_devices(MPS, lambda d: all(h == "Healthy" for h, _ in d.values()), 10)
        yield process, kubelet


def started(process: NodeProcess) -> list[str]:
    """The commands that start a daemon, health checks left out."""
    return [c for c in process.commands() if "get_default_active_thread_percentage" not in c]


def test_the_daemon_starts_with_exclusive_gpus_and_server_side_limits(
    node: tuple[NodeProcess, KubeletStub],
) -> None:
    process, _ = node
    pipe = pipe_of(process)
    assert started(process)[:6] == [
        f"nvidia-smi -i {gpu_uuid(1)} -c EXCLUSIVE_PROCESS",
        f"nvidia-smi -i {gpu_uuid(2)} -c EXCLUSIVE_PROCESS",
        f"mps-control {pipe} -d",
        f"mps-control {pipe} set_default_device_pinned_mem_limit 1 20000M",
        f"mps-control {pipe} set_default_device_pinned_mem_limit 2 20000M",
        f"mps-control {pipe} set_default_active_thread_percentage {100 // REPLICAS}",
    ]
    assert (pipe.parent / "log").is_dir()
    assert process.metric("gpuconf_node_mps_daemon_up", resource=MPS) == 1


def test_a_dead_daemon_withdraws_its_devices_and_is_restarted(
    node: tuple[NodeProcess, KubeletStub],
) -> None:
    process, kubelet = node
    pid = int((pipe_of(process) / "nvidia-cuda-mps-control.pid").read_text())
    os.kill(pid, signal.SIGKILL)
    down = kubelet.wait_devices(
        MPS, lambda d: all(h == "Unhealthy" for h, _ in d.values()), timeout=5
    )
    assert len(down) == 2 * REPLICAS
    assert kubelet.wait_devices("gpuconf.dev/h100")[gpu_uuid(0)][0] == "Healthy"
    kubelet.wait_devices(MPS, lambda d: all(h == "Healthy" for h, _ in d.values()), timeout=10)
    assert started(process).count(f"mps-control {pipe_of(process)} -d") == 2
    assert process.metric("gpuconf_node_mps_daemon_starts_total", resource=MPS, result="ok") == 2


def test_stopping_quits_the_daemon_and_restores_the_compute_mode(
    node: tuple[NodeProcess, KubeletStub],
) -> None:
    process, _ = node
    assert process.stop() == 0
    tail = started(process)[-3:]
    assert tail == [
        f"mps-control {pipe_of(process)} quit",
        f"nvidia-smi -i {gpu_uuid(1)} -c DEFAULT",
        f"nvidia-smi -i {gpu_uuid(2)} -c DEFAULT",
    ]
    wait_until(lambda: not (pipe_of(process) / "nvidia-cuda-mps-control.pid").exists())
