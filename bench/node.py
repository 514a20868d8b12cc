"""Benchmark `gpuconf node run` on a fake 8-GPU inventory, over its real unix socket.

Prints: time from process start to registration with a kubelet stand-in; Allocate and
GetPreferredAllocation latency (p50/p99) beside an empty round trip
(GetDevicePluginOptions) on the same socket; the process's resident memory.
Run: .venv/bin/python bench/node.py [--calls N]
"""

from __future__ import annotations

import argparse
import json
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from concurrent import futures
from pathlib import Path
from typing import Any

import grpc

from gpuconf.node.kubelet.proto import api_pb2, api_pb2_grpc

GPUS = 8
RESOURCE = "gpuconf.dev/h100"


class _Kubelet(api_pb2_grpc.RegistrationServicer):
    def __init__(self) -> None:
        self.registered = threading.Event()
        self.registered_at = 0.0

    def Register(
        self, request: api_pb2.RegisterRequest, context: grpc.ServicerContext
    ) -> api_pb2.Empty:
        self.registered_at = time.monotonic()
        self.registered.set()
        return api_pb2.Empty()


def _uuid(index: int) -> str:
    return f"GPU-{index:08x}-0000-4000-8000-{index:012x}"


def _write_inputs(folder: Path) -> tuple[Path, Path]:
    gpus = [
        {
            "index": i, "uuid": _uuid(i), "name": "NVIDIA H100 80GB HBM3", "memoryMiB": 81559,
            "pciBusId": f"0000:{0x18 + i:02x}:00.0", "numaNode": i // 4,
            "nvlinks": {str(p): 2 for p in range(GPUS) if p != i},
        }
        for i in range(GPUS)
    ]  # fmt: skip
    fake = folder / "fake.yaml"
    fake.write_text(json.dumps({"gpus": gpus}))
    config = folder / "node-config.yaml"
    config.write_text(
        json.dumps(
            {
                "apiVersion": "gpuconf.dev/v1alpha1", "kind": "NodeConfig", "cluster": "bench",
                "pool": "h100",
                "runtime": {"engine": "containerd", "setAsDefault": True, "binaryPath": "/usr/bin/x"},
                "health": {"ignoredXids": [13], "recoverAfterSeconds": 60},
                "inventory": {"default": [
                    {"index": i, "model": "H100-80GB", "nvmlName": "NVIDIA H100 80GB HBM3", "memoryMiB": 81559}
                    for i in range(GPUS)
                ]},
                "resources": [{"name": RESOURCE, "class": "h100", "gpus": {"default": list(range(GPUS))},
                               "sharing": {"strategy": "none"}}],
            }
        )
    )  # fmt: skip
    return config, fake


def _latencies(call: Callable[[], Any], count: int) -> list[float]:
    for _ in range(min(count, 50)):
        call()
    out = []
    for _ in range(count):
        started = time.perf_counter()
        call()
        out.append((time.perf_counter() - started) * 1e6)
    return out


def _report(name: str, micros: list[float]) -> None:
    ordered = sorted(micros)
    p99 = ordered[min(len(ordered) - 1, round(len(ordered) * 0.99))]
    print(
        f"{name:<34} p50 {statistics.median(ordered):8.0f} us   p99 {p99:8.0f} us   (n={len(ordered)})"
    )


def _rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000)
    calls = parser.parse_args().calls
    plugin_dir = Path(tempfile.mkdtemp(prefix="gc-bench-", dir="/tmp"))
    files = Path(tempfile.mkdtemp(prefix="gc-bench-files-"))
    config, fake = _write_inputs(files)
    kubelet = _Kubelet()
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    api_pb2_grpc.add_RegistrationServicer_to_server(kubelet, server)  # type: ignore[no-untyped-call]
    server.add_insecure_port(f"unix://{plugin_dir / 'kubelet.sock'}")
    server.start()
    command = [
        sys.executable, "-m", "gpuconf", "node", "run", "--config", str(config),
        "--node-name", "bench", "--plugin-dir", str(plugin_dir), "--nvml", f"fake:{fake}",
        "--metrics-port", "0",
    ]  # fmt: skip
    started = time.monotonic()
    process = subprocess.Popen(command, stderr=subprocess.DEVNULL)
    try:
        if not kubelet.registered.wait(30):
            print("the node runtime did not register within 30 s")
            return 1
        print(
            f"{'process start to registration':<34} {(kubelet.registered_at - started) * 1000:8.0f} ms"
        )
        socket = plugin_dir / ("gpuconf-" + RESOURCE.replace("/", "_") + ".sock")
        with grpc.insecure_channel(f"unix://{socket}") as channel:
            plugin = api_pb2_grpc.DevicePluginStub(channel)  # type: ignore[no-untyped-call]
            empty = api_pb2.Empty()
            allocate = api_pb2.AllocateRequest(
                container_requests=[api_pb2.ContainerAllocateRequest(devices_ids=[_uuid(3)])]
            )
            preferred = api_pb2.PreferredAllocationRequest(
                container_requests=[
                    api_pb2.ContainerPreferredAllocationRequest(
                        available_deviceIDs=[_uuid(i) for i in range(GPUS) if i != 1],
                        allocation_size=4,
                    )
                ]
            )
            _report(
                "GetDevicePluginOptions (empty)",
                _latencies(lambda: plugin.GetDevicePluginOptions(empty), calls),
            )
            _report("Allocate (1 GPU)", _latencies(lambda: plugin.Allocate(allocate), calls))
            _report(
                "GetPreferredAllocation (4 of 7)",
                _latencies(lambda: plugin.GetPreferredAllocation(preferred), calls),
            )
        print(f"{'resident memory (RSS)':<34} {_rss_mib(process.pid):8.1f} MiB")
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
        server.stop(0)
        shutil.rmtree(plugin_dir, ignore_errors=True)
        shutil.rmtree(files, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
