"""Benchmark `gpuconf node run` on a fake 8-GPU inventory, over its real unix socket.

Prints: time from process start to registration with a kubelet stand-in; Allocate and
GetPreferredAllocation latency (p50/p99) beside an empty round trip
(GetDevicePluginOptions) on the same socket; the write each Allocate waits on (saving what it
handed out, in this process, in the state folder's filesystem) beside the same bytes synced; Allocate's p99 with 12 extra ListAndWatch streams
open beside its floor (2x the idle p99); with a kubelet that accepts Register and never
answers, how long an XID takes to reach an open stream as Unhealthy (the fake NVML's 50 ms
poll included), beside its ceiling (100 ms); the process's resident memory beside its target
(40 MiB), NVIDIA's Go plugin (about 25 MiB) and this runtime before the footprint work (55.6
MiB, 2026-11-22), with how much of it is anonymous memory and mapped files; the same in a
cluster once its first Node patches are done (its labels and its drift annotation, over HTTPS
to a stand-in of the API server, as its pod's service account), beside the same run when those
patches loaded the Kubernetes client (before node/own_node_client.py). The kubelet
stand-in is grpcio, a different gRPC stack from the runtime's grpclib, as the kubelet's is.
Figures only: each verdict is printed, none fails the run (CPU time on a shared machine is
noisy).
Run: .venv/bin/python bench/node.py [--calls N] [--state-dir DIR]
"""

from __future__ import annotations

import argparse
import functools
import json
import os
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

from gpuconf.node.atomic_files import write_atomically
from gpuconf.node.kubelet.proto import (
    api_pb2,
    api_pb2_grpc,
    podresources_pb2,
    podresources_pb2_grpc,
)
from gpuconf.node.kubelet.saved_grants import GRANTS_FILE, SavedGrant, SavedGrants, moment_now
from gpuconf.node.metrics import Metrics

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO / "tests"), str(REPO / "tests" / "node")]
from node_api import NODE, NodeApi, make_pki  # noqa: E402  (the tests' HTTPS API stand-in)

GPUS = 8
RESOURCE = "gpuconf.dev/h100"
EXTRA_STREAMS = 12
XID_CEILING_MS = 100.0
RSS_TARGET_MIB = 40.0
NVIDIA_PLUGIN_RSS_MIB = 25.0
"""NVIDIA's k8s-device-plugin (Go), as issue 27 quotes it; not measured here (no GPU node)."""
RSS_BEFORE_MIB = 55.6
"""This bench on 2026-11-22 (README's Performance table), before grpcio (for grpclib),
prometheus_client, http.server and pydantic (the fake NVML's) left the runtime."""
RSS_IN_CLUSTER_BEFORE_MIB = 79.3
"""This bench's in-cluster row run on main at 5e537fa (2026-11-25), where the first Node patch
imported the Kubernetes client."""
POD_RESOURCES_SOCKET = "pod-resources.sock"
IN_POD = """\
import sys
from pathlib import Path

from gpuconf.node import in_cluster

in_cluster.SERVICE_ACCOUNT_DIR = Path(sys.argv.pop(1))  # the kubelet would mount it here
from gpuconf.cli import main

sys.exit(main(sys.argv[1:]))
"""
"""`gpuconf node run` with its service account folder where this bench writes it."""
WORKLOAD_XID = 94


class _HungKubelet(api_pb2_grpc.RegistrationServicer):
    """Accepts Register and never answers (until released at the end)."""

    def __init__(self) -> None:
        self.release = threading.Event()

    def Register(
        self, request: api_pb2.RegisterRequest, context: grpc.ServicerContext
    ) -> api_pb2.Empty:
        self.release.wait(60)
        return api_pb2.Empty()


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
    (folder / "xid.jsonl").touch()
    fake.write_text(json.dumps({"gpus": gpus, "events": "xid.jsonl"}))
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


def _p99(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(len(ordered) * 0.99))]


def _report(name: str, micros: list[float]) -> None:
    print(
        f"{name:<34} p50 {statistics.median(micros):8.0f} us   p99 {_p99(micros):8.0f} us"
        f"   (n={len(micros)})"
    )


def _grant_writes(folder: Path, calls: int) -> None:
    """What an Allocate waits on besides its round trip: saving four one-GPU grants in
    ``folder`` (SavedGrants.save: the document, then its bytes replace the file unsynced),
    then those bytes alone replacing the file unsynced and synced."""
    saved = SavedGrants(folder / GRANTS_FILE, Metrics())
    answered = moment_now()
    grants = [SavedGrant(RESOURCE, frozenset({_uuid(i)}), answered) for i in range(4)]
    _report("  its write (SavedGrants.save, 4)", _latencies(lambda: saved.save(grants), calls))
    data = (folder / GRANTS_FILE).read_bytes()
    target = folder / f"bytes-{GRANTS_FILE}"
    for sync in (False, True):
        _report(
            f"    the bytes alone, {'synced' if sync else 'unsynced'}",
            _latencies(functools.partial(write_atomically, target, data, sync=sync), calls),
        )


class _Streams:
    """ListAndWatch streams, each drained on its own thread; remembers each device's health."""

    def __init__(self, socket: Path, count: int) -> None:
        self.channel = grpc.insecure_channel(f"unix://{socket}")
        stub = api_pb2_grpc.DevicePluginStub(self.channel)  # type: ignore[no-untyped-call]
        self.health: dict[str, str] = {}
        self.changed = threading.Condition()
        self.calls = [stub.ListAndWatch(api_pb2.Empty()) for _ in range(count)]
        for n, call in enumerate(self.calls):
            threading.Thread(target=self._drain, args=(call, n == 0), daemon=True).start()

    def _drain(self, call: Any, record: bool) -> None:
        try:
            for message in call:
                if record:
                    with self.changed:
                        self.health = {d.ID: d.health for d in message.devices}
                        self.changed.notify_all()
        except grpc.RpcError:
            return

    def wait(self, check: Callable[[dict[str, str]], bool], timeout: float) -> bool:
        with self.changed:
            return self.changed.wait_for(lambda: check(self.health), timeout)

    def close(self) -> None:
        for call in self.calls:
            call.cancel()
        self.channel.close()


def _start(
    config: Path,
    fake: Path,
    plugin_dir: Path,
    pod: tuple[Path, int] | None = None,
    state_dir: Path | None = None,
) -> subprocess.Popen[bytes]:
    """The node runtime; with `pod` (its service account folder, the API server's port on
    127.0.0.1), as in a pod of a cluster. Its state goes to `state_dir` (each Allocate writes
    what it handed out there), by default a folder beside its config, never the host's
    /run/gpuconf."""
    command = [
        "node", "run", "--config", str(config),
        "--node-name", "bench", "--plugin-dir", str(plugin_dir), "--nvml", f"fake:{fake}",
        "--pod-resources-socket", str(plugin_dir / POD_RESOURCES_SOCKET),
        "--state-dir", str(state_dir or config.parent / "state"),
        "--metrics-port", "0",
    ]  # fmt: skip
    env = {k: v for k, v in os.environ.items() if not k.startswith("KUBERNETES_SERVICE_")}
    if pod is None:
        command = [sys.executable, "-m", "gpuconf", *command]
    else:
        account, port = pod
        command = [sys.executable, "-c", IN_POD, str(account), *command]
        env |= {"KUBERNETES_SERVICE_HOST": "127.0.0.1", "KUBERNETES_SERVICE_PORT": str(port)}
    return subprocess.Popen(command, stderr=subprocess.DEVNULL, env=env)


def _stop(process: subprocess.Popen[bytes]) -> None:
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(10)
    except subprocess.TimeoutExpired:
        process.kill()


class _NothingHeld(podresources_pb2_grpc.PodResourcesListerServicer):
    """The kubelet's PodResources API on a node where no container holds a GPU: the runtime
    offers no GPU before it knows that."""

    def List(
        self, request: podresources_pb2.ListPodResourcesRequest, context: grpc.ServicerContext
    ) -> podresources_pb2.ListPodResourcesResponse:
        return podresources_pb2.ListPodResourcesResponse()


def _kubelet_server(kubelet: object, plugin_dir: Path, workers: int) -> grpc.Server:
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=workers))
    api_pb2_grpc.add_RegistrationServicer_to_server(kubelet, server)  # type: ignore[no-untyped-call]
    podresources_pb2_grpc.add_PodResourcesListerServicer_to_server(  # type: ignore[no-untyped-call]
        _NothingHeld(), server
    )
    server.add_insecure_port(f"unix://{plugin_dir / 'kubelet.sock'}")
    server.add_insecure_port(f"unix://{plugin_dir / POD_RESOURCES_SOCKET}")
    server.start()
    return server


def _socket(plugin_dir: Path) -> Path:
    return plugin_dir / ("gpuconf-" + RESOURCE.replace("/", "_") + ".sock")


def _xid_with_hung_kubelet(files: Path) -> list[float]:
    """Milliseconds from an XID appended to NVML's events to Unhealthy on an open stream."""
    plugin_dir = Path(tempfile.mkdtemp(prefix="gc-bench-hung-", dir="/tmp"))
    config, fake = _write_inputs(files)
    kubelet = _HungKubelet()
    server = _kubelet_server(kubelet, plugin_dir, workers=4)
    process = _start(config, fake, plugin_dir)
    latencies: list[float] = []
    try:
        deadline = time.monotonic() + 30
        while not _socket(plugin_dir).exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        streams = _Streams(_socket(plugin_dir), 1)
        try:
            streams.wait(lambda health: len(health) == GPUS, 10)
            time.sleep(1.0)  # registration is now hung inside the kubelet
            for index in range(GPUS):
                uuid = _uuid(index)

                def unhealthy(health: dict[str, str], uuid: str = uuid) -> bool:
                    return health.get(uuid) == "Unhealthy"

                with (files / "xid.jsonl").open("a") as events:
                    events.write(json.dumps({"uuid": uuid, "xid": WORKLOAD_XID}) + "\n")
                sent = time.perf_counter()
                if not streams.wait(unhealthy, 5):
                    latencies.append(float("inf"))
                    continue
                latencies.append((time.perf_counter() - sent) * 1000)
        finally:
            streams.close()
    finally:
        kubelet.release.set()
        _stop(process)
        server.stop(0)
        shutil.rmtree(plugin_dir, ignore_errors=True)
    return latencies


def _rss_mib(pid: int, field: str = "VmRSS") -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _mapped_mib(pid: int, name_part: str) -> float:
    """Resident KiB of the process's mappings whose file name holds ``name_part``, in MiB."""
    total = 0
    mapped = False
    for line in Path(f"/proc/{pid}/smaps").read_text().splitlines():
        if line[:1].isdigit() or line[:1] in "abcdef":
            mapped = name_part in line
        elif mapped and line.startswith("Rss:"):
            total += int(line.split()[1])
    return total / 1024


def _memory_report(pid: int) -> None:
    rss = _rss_mib(pid)
    verdict = "ok" if rss <= RSS_TARGET_MIB else "OVER"
    print(
        f"{'resident memory (RSS)':<34} {rss:8.1f} MiB <= {RSS_TARGET_MIB:.0f} MiB {verdict}; "
        f"NVIDIA's plugin ~{NVIDIA_PLUGIN_RSS_MIB:.0f} MiB; before {RSS_BEFORE_MIB} MiB"
    )
    print(
        f"{'  of which':<34} anonymous {_rss_mib(pid, 'RssAnon'):.1f}, files "
        f"{_rss_mib(pid, 'RssFile'):.1f} (libpython {_mapped_mib(pid, 'libpython'):.1f}, "
        f"libcrypto for asyncio's ssl {_mapped_mib(pid, 'libcrypto'):.1f}, pydantic-core "
        f"{_mapped_mib(pid, 'pydantic_core'):.1f})"
    )


def _in_cluster_rss(files: Path) -> float | None:
    """The runtime's RSS in MiB once its labels and drift annotation are patched onto its Node,
    over HTTPS to the tests' API stand-in with a CA of its own; None when they never came."""
    pki = make_pki(files / "pki")
    account = files / "serviceaccount"
    account.mkdir()
    (account / "token").write_text("bench-token", encoding="utf-8")
    (account / "ca.crt").write_bytes((pki / "ca.crt").read_bytes())
    plugin_dir = Path(tempfile.mkdtemp(prefix="gc-bench-pod-", dir="/tmp"))
    config, fake = _write_inputs(files)
    node = {**NODE, "metadata": {**NODE["metadata"], "name": "bench"}}
    server = _kubelet_server(_Kubelet(), plugin_dir, workers=2)
    with NodeApi(node, pki) as api:
        process = _start(config, fake, plugin_dir, (account, api.port))
        try:
            deadline = time.monotonic() + 30
            while sum(seen.method == "PATCH" for seen in api.seen) < 2:
                if time.monotonic() > deadline or process.poll() is not None:
                    return None
                time.sleep(0.05)
            time.sleep(1.0)  # the patch threads finish and let go of what they held
            return _rss_mib(process.pid)
        finally:
            _stop(process)
            server.stop(0)
            shutil.rmtree(plugin_dir, ignore_errors=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument(
        "--state-dir",
        type=Path,
        help="where the runtime writes its state (Allocate saves each grant there; a node's "
        "/run/gpuconf is tmpfs: try a folder under /dev/shm); default: a temporary folder",
    )
    arguments = parser.parse_args()
    calls = arguments.calls
    plugin_dir = Path(tempfile.mkdtemp(prefix="gc-bench-", dir="/tmp"))
    files = Path(tempfile.mkdtemp(prefix="gc-bench-files-"))
    config, fake = _write_inputs(files)
    kubelet = _Kubelet()
    server = _kubelet_server(kubelet, plugin_dir, workers=2)
    started = time.monotonic()
    process = _start(config, fake, plugin_dir, state_dir=arguments.state_dir)
    try:
        if not kubelet.registered.wait(30):
            print("the node runtime did not register within 30 s")
            return 1
        print(
            f"{'process start to registration':<34} {(kubelet.registered_at - started) * 1000:8.0f} ms"
        )
        socket = _socket(plugin_dir)
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
            idle = _latencies(lambda: plugin.Allocate(allocate), calls)
            _report("Allocate (1 GPU)", idle)
            writes = Path(tempfile.mkdtemp(prefix="gc-bench-grants-", dir=arguments.state_dir))
            try:
                _grant_writes(writes, calls)
            finally:
                shutil.rmtree(writes, ignore_errors=True)
            _report(
                "GetPreferredAllocation (4 of 7)",
                _latencies(lambda: plugin.GetPreferredAllocation(preferred), calls),
            )
            streams = _Streams(socket, EXTRA_STREAMS)
            try:
                busy = _latencies(lambda: plugin.Allocate(allocate), calls)
            finally:
                streams.close()
            _report(f"Allocate, {EXTRA_STREAMS} extra streams open", busy)
            floor = 2 * _p99(idle)
            verdict = "ok" if _p99(busy) <= floor else "OVER"
            print(
                f"{'  p99 beside its floor (2x idle)':<34} {_p99(busy):8.0f} us <= {floor:.0f} us "
                f"{verdict}"
            )
        _memory_report(process.pid)
    finally:
        _stop(process)
        server.stop(0)
        shutil.rmtree(plugin_dir, ignore_errors=True)
    try:
        in_cluster = _in_cluster_rss(files)
        xid = _xid_with_hung_kubelet(files)
    finally:
        shutil.rmtree(files, ignore_errors=True)
    if in_cluster is None:
        print("in a cluster: the node runtime did not patch its Node within 30 s")
    else:
        print(
            f"{'  in a cluster, Node patched':<34} {in_cluster:8.1f} MiB; with the Kubernetes "
            f"client (before) {RSS_IN_CLUSTER_BEFORE_MIB} MiB"
        )
    # The fake NVML hands events over on its own 50 ms poll, included here: the figure is an
    # upper bound on gpuconf's own share.
    worst = max(xid)
    verdict = "ok" if worst <= XID_CEILING_MS else "OVER"
    print(
        f"{'XID to stream, kubelet hung':<34} p50 {statistics.median(xid):8.1f} ms   "
        f"max {worst:8.1f} ms <= {XID_CEILING_MS:.0f} ms {verdict}   (n={len(xid)})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
