"""gpuconf's device plugin against the kubelet's own Go code, over real unix sockets.

kubelet_go/ runs k8s.io/kubernetes v1.34.4's pkg/kubelet/cm/devicemanager: the Registration
server (plugin/v1beta1/server.go, handler.go), its grpc-go client of each plugin (client.go)
and ManagerImpl (manager.go), which picks devices, calls GetPreferredAllocation, Allocate and
PreStartContainer, and turns the answers into what the container runtime gets (the `admit`
tests). The `preferred` and `allocate` cases call the plugin straight through the kubelet's
grpc-go client, not through ManagerImpl: they check that grpc-go and grpcio read the same
answers off the wire, not what the kubelet would ask.
"""

from __future__ import annotations

import itertools
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from builders import gpu_uuid, mig_uuid, node_config, nvlink_box, resource
from control_plane.cluster import ControlPlaneError
from go_kubelet import GoKubelet, KubeletRefused, build, devices_of, kubelet_for
from google.protobuf.json_format import MessageToDict
from kubelet_stub import Devices
from plugin_process import HELD_UNKNOWN, NodeProcess, allocate, held_known, plain_gpu, wait_until

from gpuconf.node.kubelet.device_checkpoint import CHECKPOINT_FILE, checkpointed_devices
from gpuconf.node.kubelet.pod_resources import held_devices
from gpuconf.node.kubelet.proto import api_pb2
from gpuconf.node.kubelet.registration import API_VERSION

WHOLE = "gpuconf.dev/h100"
SLICED = "gpuconf.dev/h100-sliced"
MPS = "gpuconf.dev/h100-mps"
MIG_1G = "gpuconf.dev/h100-1g"
MIG_3G = "gpuconf.dev/h100-3g"
RESOURCES = (WHOLE, SLICED, MPS, MIG_1G, MIG_3G)
CDI_VOID = {"NVIDIA_VISIBLE_DEVICES": "void"}


@pytest.fixture(scope="session")
def binary() -> Path:
    try:
        return build()
    except ControlPlaneError as error:  # no Go here, and none to fetch for this machine
        pytest.skip(f"the Go kubelet stand-in is built with Go: {error}")


def mig_gpu(index: int) -> dict[str, Any]:
    gpu = plain_gpu(index, numa_node=1)
    gpu["migEnabled"] = True
    gpu["migDevices"] = [
        {
            "uuid": mig_uuid(index, gi),
            "profile": "1g.10gb",
            "gpuInstanceId": gi,
            "computeInstanceId": 0,
        }
        for gi in (7, 8, 9)
    ] + [
        {
            "uuid": mig_uuid(index, 2),
            "profile": "3g.40gb",
            "gpuInstanceId": 2,
            "computeInstanceId": 0,
        }
    ]
    return gpu


@pytest.fixture(scope="module")
def node(
    tmp_path_factory: pytest.TempPathFactory, binary: Path
) -> Iterator[tuple[NodeProcess, GoKubelet]]:
    files = tmp_path_factory.mktemp("kubelet-go")
    config = node_config(
        [
            resource("h100", list(range(6))),
            resource(
                "h100-sliced",
                [6],
                sharing={
                    "strategy": "time-slicing",
                    "replicas": 4,
                    "failRequestsGreaterThanOne": True,
                },
            ),
            resource(
                "h100-mps",
                [7],
                sharing={
                    "strategy": "mps",
                    "replicas": 2,
                    "mpsPipeDirectory": str(files / "mps" / "pipe"),
                    "mpsShmDirectory": str(files / "mps" / "shm"),
                },
            ),
            resource("h100-1g", [8], migProfile="1g.10gb"),
            resource("h100-3g", [8], migProfile="3g.40gb"),
        ],
        gpus=9,
        deviceListStrategy="cdi",
    )
    config["inventory"]["default"][8]["mig"] = {"1g.10gb": 3, "3g.40gb": 1}
    process = NodeProcess(files, config, [*nvlink_box(), mig_gpu(8)])
    kubelet = kubelet_for(binary, process).start()
    process.start()
    try:
        for name in RESOURCES:
            kubelet.wait_devices(name)
        yield process, kubelet
    finally:
        process.cleanup()
        kubelet.stop()


def grpcio_devices(process: NodeProcess, name: str) -> dict[str, Any]:
    """The first ListAndWatch message, read with grpcio as kubelet_stub.py reads it."""
    with process.plugin(name) as plugin:
        stream = plugin.ListAndWatch(api_pb2.Empty(), timeout=5)
        try:
            return MessageToDict(next(stream), preserving_proto_field_name=True)
        finally:
            stream.cancel()


def grpcio_allocate(process: NodeProcess, name: str, *containers: list[str]) -> dict[str, Any]:
    with process.plugin(name) as plugin:
        return MessageToDict(allocate(plugin, *containers), preserving_proto_field_name=True)


def grpcio_preferred(
    process: NodeProcess, name: str, available: list[str], must_include: list[str], size: int
) -> dict[str, Any]:
    request = api_pb2.PreferredAllocationRequest(
        container_requests=[
            api_pb2.ContainerPreferredAllocationRequest(
                available_deviceIDs=available,
                must_include_deviceIDs=must_include,
                allocation_size=size,
            )
        ]
    )
    with process.plugin(name) as plugin:
        return MessageToDict(
            plugin.GetPreferredAllocation(request, timeout=5), preserving_proto_field_name=True
        )


def admit(
    kubelet: GoKubelet, pod: str, name: str, count: int, init: bool = False
) -> dict[str, Any]:
    """With init, a regular init container asks (main.go podAsking)."""
    result: dict[str, Any] = kubelet.call("admit", pod=pod, resource=name, count=count, init=init)
    return result


def test_every_resource_registers_and_the_kubelet_reads_its_options(
    node: tuple[NodeProcess, GoKubelet],
) -> None:
    process, kubelet = node
    ready = kubelet.event("ready")
    assert ready is not None
    assert API_VERSION in ready["versions"]  # else server.go Register refuses the plugin
    for name in RESOURCES:
        connected = kubelet.wait_connected(name)
        assert connected["endpoint"] == process.socket(name).name
        # proto3 JSON leaves false out: PreStartRequired is off, so the kubelet never calls
        # PreStartContainer (manager.go callPreStartContainerIfNeeded).
        assert connected["options"] == {"get_preferred_allocation_available": True}
    assert not [e for e in kubelet.events if e["event"] in ("refused", "disconnected")]


def test_device_lists_carry_ids_health_and_numa_nodes_as_grpcio_reads_them(
    node: tuple[NodeProcess, GoKubelet],
) -> None:
    process, kubelet = node
    assert kubelet.wait_devices(WHOLE) == {
        gpu_uuid(i): ("Healthy", (0 if i < 4 else 1,)) for i in range(6)
    }
    assert sorted(kubelet.wait_devices(SLICED)) == [f"{gpu_uuid(6)}::{n}" for n in range(4)]
    assert kubelet.wait_devices(MIG_1G) == {mig_uuid(8, gi): ("Healthy", (1,)) for gi in (7, 8, 9)}
    for name in RESOURCES:
        assert kubelet.wait_devices(name) == devices_of(grpcio_devices(process, name))


def test_the_kubelet_reports_capacity_and_allocatable_per_resource(
    node: tuple[NodeProcess, GoKubelet],
) -> None:
    _, kubelet = node
    counts = {WHOLE: 6, SLICED: 4, MPS: 2, MIG_1G: 3, MIG_3G: 1}
    assert kubelet.call("capacity") == {"capacity": counts, "allocatable": counts}


@pytest.mark.parametrize(
    ("name", "available", "must_include", "size"),
    [
        (WHOLE, [gpu_uuid(i) for i in (5, 3, 0, 4, 2, 1)], [], 4),
        (WHOLE, [gpu_uuid(i) for i in (0, 2, 3, 4, 5)], [gpu_uuid(5)], 2),
        (SLICED, [f"{gpu_uuid(6)}::{n}" for n in (3, 1, 2)], [], 1),
        (MIG_1G, [mig_uuid(8, gi) for gi in (9, 7)], [], 2),
    ],
    ids=["nvlink-four", "must-include", "replica", "mig"],
)
def test_preferred_allocations_through_grpc_go_equal_grpcio_s(
    node: tuple[NodeProcess, GoKubelet],
    name: str,
    available: list[str],
    must_include: list[str],
    size: int,
) -> None:
    process, kubelet = node
    through_go = kubelet.call(
        "preferred", resource=name, available=available, mustInclude=must_include, size=size
    )
    assert through_go == grpcio_preferred(process, name, available, must_include, size)
    assert len(through_go["container_responses"][0]["deviceIDs"]) == size


@pytest.mark.parametrize(
    ("name", "containers"),
    [
        (WHOLE, [[gpu_uuid(0), gpu_uuid(3)], [gpu_uuid(5)]]),
        (SLICED, [[f"{gpu_uuid(6)}::2"]]),
        (MPS, [[f"{gpu_uuid(7)}::1"]]),
        (MIG_1G, [[mig_uuid(8, 9), mig_uuid(8, 7)]]),
    ],
    ids=["whole", "replica", "mps", "mig"],
)
def test_allocate_responses_through_grpc_go_equal_grpcio_s(
    node: tuple[NodeProcess, GoKubelet], name: str, containers: list[list[str]]
) -> None:
    process, kubelet = node
    through_go = kubelet.call("allocate", resource=name, containers=containers)
    assert through_go == grpcio_allocate(process, name, *containers)
    assert len(through_go["container_responses"]) == len(containers)


def test_a_refused_allocate_reaches_the_kubelet_with_its_code_and_message(
    node: tuple[NodeProcess, GoKubelet],
) -> None:
    _, kubelet = node
    with pytest.raises(KubeletRefused) as refused:
        kubelet.call("allocate", resource=WHOLE, containers=[[gpu_uuid(0), "GPU-not-here"]])
    assert "code = InvalidArgument" in str(refused.value)
    assert "unknown device IDs for gpuconf.dev/h100: GPU-not-here" in str(refused.value)


def test_the_kubelet_admits_whole_gpus_on_the_preferred_nvlink_set_as_cdi_devices(
    node: tuple[NodeProcess, GoKubelet],
) -> None:
    process, kubelet = node
    every = [gpu_uuid(i) for i in range(6)]
    preferred = grpcio_preferred(process, WHOLE, every, [], 4)["container_responses"][0][
        "deviceIDs"
    ]
    try:
        first = admit(kubelet, "pod-a", WHOLE, 4)
        assert first["devices"] == sorted(preferred)
        assert first["cdiDevices"] == sorted(f"nvidia.com/gpu={uuid}" for uuid in preferred)
        assert first["envs"] == CDI_VOID
        assert (first["mounts"], first["deviceSpecs"], first["annotations"]) == (None, None, {})
        # The two left, whatever the plugin prefers; then none.
        second = admit(kubelet, "pod-b", WHOLE, 2)
        assert second["devices"] == sorted(set(every) - set(preferred))
        with pytest.raises(KubeletRefused, match="requested number of devices unavailable"):
            admit(kubelet, "pod-c", WHOLE, 1)
    finally:
        for pod in ("pod-a", "pod-b"):
            kubelet.call("release", pod=pod)


def test_the_kubelet_admits_one_replica_and_refuses_a_pod_asking_two_with_gpuconf_s_reason(
    node: tuple[NodeProcess, GoKubelet],
) -> None:
    _, kubelet = node
    try:
        one = admit(kubelet, "pod-one", SLICED, 1)
        assert len(one["devices"]) == 1
        assert one["devices"][0].startswith(f"{gpu_uuid(6)}::")
        assert one["cdiDevices"] == [f"nvidia.com/gpu={gpu_uuid(6)}"]
        with pytest.raises(KubeletRefused) as refused:
            admit(kubelet, "pod-two", SLICED, 2)
        assert "code = InvalidArgument" in str(refused.value)
        assert "allow at most 1 per container" in str(refused.value)
    finally:
        kubelet.call("release", pod="pod-one")


def test_the_kubelet_gives_an_mps_container_the_daemon_pipe_and_shm_mounts(
    node: tuple[NodeProcess, GoKubelet],
) -> None:
    process, kubelet = node
    pipe = str(process.files / "mps" / "pipe")
    try:
        admitted = admit(kubelet, "pod-mps", MPS, 1)
    finally:
        kubelet.call("release", pod="pod-mps")
    assert admitted["envs"] == {**CDI_VOID, "CUDA_MPS_PIPE_DIRECTORY": pipe}
    assert admitted["mounts"] == [
        {
            "containerPath": "/dev/shm",
            "hostPath": str(process.files / "mps" / "shm"),
            "readOnly": False,
        },
        {"containerPath": pipe, "hostPath": pipe, "readOnly": False},
    ]
    assert admitted["cdiDevices"] == [f"nvidia.com/gpu={gpu_uuid(7)}"]


def test_the_kubelet_admits_mig_devices_as_cdi_devices_named_by_mig_uuid(
    node: tuple[NodeProcess, GoKubelet],
) -> None:
    _, kubelet = node
    try:
        admitted = admit(kubelet, "pod-mig", MIG_3G, 1)
    finally:
        kubelet.call("release", pod="pod-mig")
    assert admitted["devices"] == [mig_uuid(8, 2)]
    assert admitted["cdiDevices"] == [f"nvidia.com/gpu={mig_uuid(8, 2)}"]


@pytest.fixture
def small_node(tmp_path: Path, binary: Path) -> Iterator[tuple[NodeProcess, GoKubelet]]:
    config = node_config([resource("h100", [0, 1, 2, 3])], gpus=4, deviceListStrategy="envvar")
    process = NodeProcess(tmp_path, config, nvlink_box(4))
    kubelet = kubelet_for(binary, process).start()
    process.start()
    try:
        kubelet.wait_devices(WHOLE)
        yield process, kubelet
    finally:
        process.cleanup()
        kubelet.stop()


def test_an_xid_reaches_the_kubelet_as_an_unhealthy_device_it_no_longer_allocates(
    small_node: tuple[NodeProcess, GoKubelet],
) -> None:
    process, kubelet = small_node
    process.send_xid(gpu_uuid(2), 79)  # fallen off the bus
    devices = kubelet.wait_devices(WHOLE, lambda d: d[gpu_uuid(2)][0] == "Unhealthy", timeout=5)
    assert [d for d, (health, _) in devices.items() if health != "Healthy"] == [gpu_uuid(2)]
    assert kubelet.call("capacity") == {"capacity": {WHOLE: 4}, "allocatable": {WHOLE: 3}}
    with pytest.raises(KubeletRefused, match="requested number of devices unavailable"):
        admit(kubelet, "pod-all", WHOLE, 4)
    assert gpu_uuid(2) not in admit(kubelet, "pod-three", WHOLE, 3)["devices"]


def test_after_a_kubelet_restart_the_plugin_serves_again_and_re_registers(
    small_node: tuple[NodeProcess, GoKubelet], binary: Path
) -> None:
    process, old = small_node
    old.stop(
        signal.SIGTERM
    )  # the sockets stay; the new kubelet wipes them (CleanupPluginDirectory)
    new = kubelet_for(binary, process).start()
    try:
        connected = new.wait_connected(WHOLE, timeout=5)
        assert connected["endpoint"] == process.socket(WHOLE).name
        assert len(new.wait_devices(WHOLE, timeout=5)) == 4
        assert new.call("capacity")["allocatable"] == {WHOLE: 4}
        admitted = admit(new, "pod-after", WHOLE, 2)
        assert admitted["devices"] == [gpu_uuid(0), gpu_uuid(1)]  # doubly NVLinked
        assert set(admitted["envs"]["NVIDIA_VISIBLE_DEVICES"].split(",")) == set(
            admitted["devices"]
        )
    finally:
        new.stop()
    assert process.alive()


def test_a_resource_removed_from_the_config_is_disconnected_and_no_longer_allocatable(
    small_node: tuple[NodeProcess, GoKubelet],
) -> None:
    process, kubelet = small_node
    process.write_config(node_config([resource("h100-extra", [0, 1, 2, 3])], gpus=4))
    kubelet.wait(lambda: kubelet.event("disconnected", WHOLE), timeout=5, what="h100 dropped")
    kubelet.wait_devices("gpuconf.dev/h100-extra")
    # ManagerImpl.PluginDisconnected marks the devices unhealthy; the capacity goes after
    # the endpoint's grace period (endpointStopGracePeriod, five minutes).
    assert kubelet.call("capacity")["allocatable"] == {WHOLE: 0, "gpuconf.dev/h100-extra": 4}
    with pytest.raises(KubeletRefused, match="no healthy devices present"):
        admit(kubelet, "pod-stale", WHOLE, 1)


def test_a_plugin_serving_anew_on_a_deleted_socket_is_connected_again_and_stays(
    small_node: tuple[NodeProcess, GoKubelet],
) -> None:
    process, kubelet = small_node
    seen = len(kubelet.events)
    process.socket(WHOLE).unlink()
    kubelet.wait_connected(WHOLE, after=seen, timeout=5)
    kinds = [e["event"] for e in kubelet.events[seen:] if e.get("resource") == WHOLE]
    # The old stream's end is handled before the new registration (handler.go runClient
    # disconnects whichever client holds the name when a stream ends).
    assert kinds[:2] == ["disconnected", "connected"]
    assert len(kubelet.wait_devices(WHOLE, after=seen)) == 4
    assert kubelet.call("capacity")["allocatable"] == {WHOLE: 4}
    assert len(admit(kubelet, "pod-again", WHOLE, 1)["devices"]) == 1


def test_a_gpu_a_pod_holds_moves_class_only_after_the_kubelet_lists_it_released(
    small_node: tuple[NodeProcess, GoKubelet],
) -> None:
    """gpuconf reads the kubelet's pod-resources List, which names one device per entry
    (pkg/kubelet/cm/container_manager.go containerDevicesFromResourceDeviceInstances)."""
    process, kubelet = small_node
    held = admit(kubelet, "pod-holding", WHOLE, 2)["devices"]
    assert held == [gpu_uuid(0), gpu_uuid(1)]  # doubly NVLinked
    lists = kubelet.call("lists")
    wait_until(lambda: kubelet.call("lists") >= lists + 2, what="two pod-resources polls")
    sharing = {"strategy": "time-slicing", "replicas": 2}
    moved = [resource("h100", [0, 2, 3]), resource("h100-shared", [1], sharing=sharing)]
    process.write_config(node_config(moved, gpus=4, deviceListStrategy="envvar"))
    whole = kubelet.wait_devices(WHOLE, lambda d: d[gpu_uuid(1)][0] == "Unhealthy")
    assert sorted(whole) == [gpu_uuid(i) for i in range(4)]  # still listed for its holder
    assert process.status()["pendingChanges"][0]["held"] == [f"{WHOLE}/{gpu_uuid(1)}"]

    kubelet.call("release", pod="pod-holding")
    shared = kubelet.wait_devices("gpuconf.dev/h100-shared", lambda d: len(d) == 2)
    assert sorted(shared) == [f"{gpu_uuid(1)}::{n}" for n in range(2)]
    assert sorted(kubelet.wait_devices(WHOLE, lambda d: len(d) == 3)) == [
        gpu_uuid(i) for i in (0, 2, 3)
    ]


SHARED = "gpuconf.dev/h100-shared"


def offered(kubelet: GoKubelet, name: str) -> Devices:
    event = kubelet.event("devices", name)
    return devices_of(event["response"]) if event else {}


def test_after_a_kubelet_restart_a_gpu_on_its_checkpoint_moves_only_once_its_pod_is_gone(
    small_node: tuple[NodeProcess, GoKubelet], binary: Path
) -> None:
    """A restarted kubelet serves pod-resources List before it has learnt its pods again
    (cmd/kubelet/app/server.go startKubelet; List walks the pod manager), while its device
    manager still counts the checkpointed allocations taken until it has seen every pod source
    (manager.go readCheckpoint, UpdateAllocatedDevices): a change in that window must wait."""
    process, old = small_node
    held = admit(old, "pod-holding", WHOLE, 2)["devices"]
    assert held == [gpu_uuid(0), gpu_uuid(1)]  # doubly NVLinked
    checkpoint = process.plugin_dir / CHECKPOINT_FILE
    assert checkpointed_devices(checkpoint) == {WHOLE: frozenset(held)}  # as manager.go wrote it
    old.stop()
    new = kubelet_for(binary, process, sources_late=True).start()
    try:
        new.wait_connected(WHOLE, timeout=5)
        assert held_devices(process.pod_resources_socket) == {}  # the window: List names no pod
        lists = new.call("lists")
        wait_until(lambda: new.call("lists") >= lists + 2, what="two pod-resources polls")
        sharing = {"strategy": "time-slicing", "replicas": 2}
        moved = [resource("h100", [0, 2, 3]), resource("h100-shared", [1], sharing=sharing)]
        process.write_config(node_config(moved, gpus=4, deviceListStrategy="envvar"))
        wait_until(
            lambda: process.status()["pendingChanges"] or offered(new, SHARED),
            what="the change applied or deferred",
        )
        assert offered(new, SHARED) == {}
        assert process.status()["pendingChanges"][0]["held"] == [f"{WHOLE}/{gpu_uuid(1)}"]
        whole = new.wait_devices(WHOLE, lambda d: d[gpu_uuid(1)][0] == "Unhealthy")
        assert sorted(whole) == [gpu_uuid(i) for i in range(4)]

        # The kubelet rewrites its checkpoint on the runtime's nudges (a device list sent
        # again), keeping the pod it has not pruned: the change still waits.
        written = checkpoint.stat().st_mtime_ns
        wait_until(lambda: checkpoint.stat().st_mtime_ns != written, what="a checkpoint write")
        new.call("learn", pod="pod-holding", resource=WHOLE, count=2)
        new.call("sources-ready")
        assert held_devices(process.pod_resources_socket) == {WHOLE: frozenset(held)}
        lists = new.call("lists")
        wait_until(lambda: new.call("lists") >= lists + 2, what="two pod-resources polls")
        assert offered(new, SHARED) == {}
        # List names the holder now, so no nudge is due for it (test_pod_resources_watch.py).

        # Pruned now, on disk until the next write: List dropping it starts the nudges over.
        new.call("release", pod="pod-holding")
        shared = new.wait_devices(SHARED, lambda d: len(d) == 2)
        assert sorted(shared) == [f"{gpu_uuid(1)}::{n}" for n in range(2)]
        assert checkpointed_devices(checkpoint) == {}
        assert process.status()["pendingChanges"] == []
    finally:
        new.stop()


def first_devices(kubelet: GoKubelet, name: str, after: int) -> Devices:
    """The first device list of a resource among events[after:]: a decision's, whatever later
    ones say."""

    def first() -> Devices | None:
        lists = (e for e in kubelet.events[after:] if e["event"] == "devices")
        return next((devices_of(e["response"]) for e in lists if e["resource"] == name), None)

    return kubelet.wait(first, 10, f"a new device list of {name}")


def test_a_gpu_the_kubelet_admits_a_pod_onto_between_two_polls_moves_only_once_it_is_gone(
    small_node: tuple[NodeProcess, GoKubelet],
) -> None:
    """The runtime's last List said GPU 1 free; the kubelet's device manager then admits a pod
    onto it through our Allocate (manager.go allocateContainerResources), and the config moves
    it before the next List answers (here it hangs). What the plugin handed out holds GPU 1's
    part until a List names the pod, and that List's successors until the pod is gone. The
    same change moves GPU 3, which nothing holds: that part applies at once, as it does only
    while what is held is known (a List that timed out would make every move wait)."""
    process, kubelet = small_node
    sharing = {"strategy": "time-slicing", "replicas": 2}
    moved = [resource("h100", [0, 2]), resource("h100-shared", [1, 3], sharing=sharing)]
    lists = kubelet.call("lists")
    wait_until(lambda: kubelet.call("lists") >= lists + 2, what="two pod-resources polls")
    kubelet.call("hang-lists")
    try:
        wait_until(lambda: kubelet.call("hanging") > 0, what="a List call hanging")
        seen = len(kubelet.events)
        held = admit(kubelet, "pod-window", WHOLE, 2)["devices"]
        process.write_config(node_config(moved, gpus=4, deviceListStrategy="envvar"))
        process.reload()
        whole = first_devices(kubelet, WHOLE, seen)
        if not held_known(process):
            # The hang outlasted the runtime's List timeout (2 s) before it decided: only a
            # starved machine gets here, and the stub tests in test_plugin_reclass.py, which
            # need no hang, cover the rule there.
            pytest.skip(HELD_UNKNOWN)
        assert held == [gpu_uuid(0), gpu_uuid(1)]  # doubly NVLinked
        assert {device: health for device, (health, _) in whole.items()} == {
            gpu_uuid(0): "Healthy",
            gpu_uuid(1): "Unhealthy",  # still listed for its holder
            gpu_uuid(2): "Healthy",
        }
        assert sorted(first_devices(kubelet, SHARED, seen)) == [
            f"{gpu_uuid(3)}::{n}" for n in range(2)
        ]
        assert process.status()["pendingChanges"][0]["held"] == [f"{WHOLE}/{gpu_uuid(1)}"]
    finally:
        kubelet.call("answer-lists")

    lists = kubelet.call("lists")
    wait_until(lambda: kubelet.call("lists") >= lists + 2, what="two pod-resources polls")
    assert held_devices(process.pod_resources_socket) == {WHOLE: frozenset(held)}
    assert len(offered(kubelet, SHARED)) == 2
    kubelet.call("release", pod="pod-window")
    shared = kubelet.wait_devices(SHARED, lambda d: len(d) == 4)
    assert sorted(shared) == [f"{gpu_uuid(i)}::{n}" for i in (1, 3) for n in range(2)]
    assert process.status()["pendingChanges"] == []


def checkpoint_writes(checkpoint: Path, seconds: float) -> list[float]:
    """When, over the next ``seconds``, the kubelet rewrote its checkpoint."""
    writes: list[float] = []
    written = checkpoint.stat().st_mtime_ns
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        time.sleep(0.05)
        now = checkpoint.stat().st_mtime_ns
        if now != written:
            written = now
            writes.append(time.monotonic())
    return writes


def test_a_gpu_a_regular_init_container_holds_waits_and_the_runtime_s_nudges_back_off(
    small_node: tuple[NodeProcess, GoKubelet],
) -> None:
    """The kubelet keeps a regular init container's devices allocated while its pod lives
    (manager.go Allocate) and List leaves the container out (server_v1.go lists only
    restartable init containers): only the checkpoint knows, for as long as the pod lives."""
    process, kubelet = small_node
    (device,) = admit(kubelet, "pod-init", WHOLE, 1, init=True)["devices"]
    checkpoint = process.plugin_dir / CHECKPOINT_FILE
    assert checkpointed_devices(checkpoint) == {WHOLE: frozenset({device})}
    assert device not in held_devices(process.pod_resources_socket).get(WHOLE, frozenset())
    # The runtime reads the checkpoint after each List poll: a change before it has read it
    # once would find nothing held, as for a pod admitted between two polls.
    lists = kubelet.call("lists")
    wait_until(lambda: kubelet.call("lists") >= lists + 2, what="two pod-resources polls")
    index = next(i for i in range(4) if gpu_uuid(i) == device)
    sharing = {"strategy": "time-slicing", "replicas": 2}
    moved = [
        resource("h100", [i for i in range(4) if i != index]),
        resource("h100-shared", [index], sharing=sharing),
    ]
    process.write_config(node_config(moved, gpus=4, deviceListStrategy="envvar"))
    wait_until(lambda: process.status()["pendingChanges"], what="the change deferred")
    assert process.status()["pendingChanges"][0]["held"] == [f"{WHOLE}/{device}"]

    # Nudges at about 0, 2, 6 and 14 s: each one makes the kubelet write its checkpoint again
    # (the pod is live, so the entry stays), each wait twice the one before.
    time.sleep(0.5)
    writes = checkpoint_writes(checkpoint, 7.0)
    assert len(writes) >= 2, writes
    gaps = [later - earlier for earlier, later in itertools.pairwise(writes)]
    assert all(gap > 3.0 for gap in gaps), gaps  # 2 s apart without the backoff
    assert offered(kubelet, SHARED) == {}
    assert checkpointed_devices(checkpoint) == {WHOLE: frozenset({device})}
