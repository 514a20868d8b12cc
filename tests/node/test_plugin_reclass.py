"""Day 2 over real sockets: a config change never takes a GPU from a container that holds it.

The kubelet stand-in serves PodResourcesLister/List on its own socket and says which device
IDs the test's pods hold; the node runtime must defer exactly the held GPUs' part of a change.
"""

from __future__ import annotations

import json
import re
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from builders import gpu_uuid, node_config, resource, run_cli
from kubelet_stub import Devices, KubeletStub
from plugin_process import (
    NodeProcess,
    allocate,
    assert_held_known,
    plain_gpu,
    serving,
    wait_until,
    write_atomically,
)

from gpuconf.node.kubelet.device_checkpoint import CHECKPOINT_FILE
from gpuconf.node.kubelet.handed_out import RECORD_WAIT_SECONDS
from gpuconf.node.kubelet.saved_grants import (
    FORMAT_VERSION,
    GRANTS_FILE,
    moment_now,
    read_boot_id,
)

WHOLE = "gpuconf.dev/h100"
SHARED = "gpuconf.dev/h100-shared"


def config(whole: list[int], shared: list[int], replicas: int) -> dict[str, Any]:
    sharing = {"strategy": "time-slicing", "replicas": replicas}
    return node_config(
        [resource("h100", whole), resource("h100-shared", shared, sharing=sharing)], gpus=4
    )


def replicas(gpu: int, count: int) -> list[str]:
    return [f"{gpu_uuid(gpu)}::{n}" for n in range(count)]


def hold(kubelet: KubeletStub, resource_name: str = "", *device_ids: str) -> None:
    """Hold devices, then wait until the runtime has stored a List answer that says so
    (a List that began after the hold has finished once the next one begins)."""
    if device_ids:
        kubelet.pod_resources.hold(resource_name, *device_ids)
    seen = kubelet.pod_resources.calls
    wait_until(lambda: kubelet.pod_resources.calls >= seen + 2, what="two PodResources polls")


def health(devices: Devices) -> dict[str, str]:
    return {device: state for device, (state, _) in devices.items()}


@pytest.fixture
def node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[NodeProcess, KubeletStub]]:
    process = NodeProcess(
        tmp_path_factory.mktemp("reclass"), config([0, 1], [2], 4), [plain_gpu(i) for i in range(4)]
    )
    with serving(process) as kubelet:
        kubelet.wait_devices(WHOLE, timeout=10)
        kubelet.wait_devices(SHARED, timeout=10)
        yield process, kubelet


def test_a_held_gpu_moves_to_another_class_only_after_it_is_released(
    node: tuple[NodeProcess, KubeletStub],
) -> None:
    process, kubelet = node
    hold(kubelet, WHOLE, gpu_uuid(1))
    process.write_config(config([0, 3], [1, 2], 4))  # GPU 1 to the shared class; GPU 3 added

    whole = kubelet.wait_devices(WHOLE, lambda d: gpu_uuid(3) in d, timeout=5)
    assert health(whole) == {
        gpu_uuid(0): "Healthy",
        gpu_uuid(1): "Unhealthy",  # still listed for its holder, offered to nobody new
        gpu_uuid(3): "Healthy",
    }
    assert sorted(kubelet.wait_devices(SHARED)) == replicas(2, 4)
    assert process.metric("gpuconf_node_pending_gpu_changes") == 1
    assert process.status() == {
        "pendingChanges": [
            {"gpu": 1, "held": [f"{WHOLE}/{gpu_uuid(1)}"], "current": [WHOLE], "wanted": [SHARED]}
        ]
    }
    checked = run_cli(
        "node", "check", "--config", str(process.config_path), "--node-name", "node-a",
        "--nvml", f"fake:{process.fake_path}",
        "--runtime-url", f"http://127.0.0.1:{process.metrics_port}",
    )  # fmt: skip
    assert (
        f"GPU 1: {WHOLE} -> {SHARED} waits for {WHOLE}/{gpu_uuid(1)} to be released"
    ) in checked.out

    kubelet.pod_resources.release_all()
    shared = kubelet.wait_devices(SHARED, lambda d: len(d) == 8, timeout=5)
    assert sorted(shared) == sorted(replicas(1, 4) + replicas(2, 4))
    whole = kubelet.wait_devices(WHOLE, lambda d: gpu_uuid(1) not in d, timeout=5)
    assert sorted(whole) == [gpu_uuid(0), gpu_uuid(3)]
    wait_until(lambda: process.metric("gpuconf_node_pending_gpu_changes") == 0)
    assert process.status() == {"pendingChanges": []}


def health_of(device_id: str, wanted: str) -> Callable[[Devices], bool]:
    return lambda devices: devices.get(device_id, ("absent",))[0] == wanted


def first_list_after(kubelet: KubeletStub, resource_name: str, seen: int) -> Devices:
    """The first device list of a resource after the ``seen`` ones: a decision's, whatever
    later ones say."""

    def first() -> Devices | None:
        lists = kubelet.lists.get(resource_name, [])
        return lists[seen] if len(lists) > seen else None

    return kubelet.wait(first, 15, f"a new device list of {resource_name}")


def polls_begun_after(kubelet: KubeletStub, moment: float) -> None:
    """Wait until the runtime has stored a poll that began after ``moment`` (time.monotonic):
    one whose List call came after it might have begun before it; the next began once that
    one was stored, and is stored itself once a third one comes."""
    wait_until(lambda: time.monotonic() > moment, timeout=moment - time.monotonic() + 1)
    seen = kubelet.pod_resources.calls
    wait_until(lambda: kubelet.pod_resources.calls >= seen + 3, what="three PodResources polls")


def test_a_gpu_handed_out_keeps_its_class_until_list_names_its_pod_and_moves_once_it_ends(
    node: tuple[NodeProcess, KubeletStub],
) -> None:
    """The window a poll leaves: the last List said GPU 1 free, then the kubelet admitted a pod
    onto it through our Allocate, and the config moved it before a List named the pod (here
    none does until the test says so). What the plugin handed out holds GPU 1's part until a
    poll names it; from then on the polls hold it, so it moves once the pod ends, not when a
    wait for unnamed IDs runs out. The same change lowers GPU 2's replicas, which nothing
    holds: that part applies at once, as it does only while what is held is known."""
    process, kubelet = node
    hold(kubelet)  # stored: nothing held
    whole_seen, shared_seen = len(kubelet.lists[WHOLE]), len(kubelet.lists[SHARED])
    with process.plugin(WHOLE) as plugin:
        allocate(plugin, [gpu_uuid(1)])
    process.write_config(config([0], [1, 2], 2))
    process.reload()
    whole = first_list_after(kubelet, WHOLE, whole_seen)
    assert_held_known(process)
    assert health(whole) == {gpu_uuid(0): "Healthy", gpu_uuid(1): "Unhealthy"}
    shared = first_list_after(kubelet, SHARED, shared_seen)
    assert health(shared) == dict.fromkeys(replicas(2, 2), "Healthy")
    assert process.metric("gpuconf_node_pending_gpu_changes") == 1
    assert process.status() == {
        "pendingChanges": [
            {"gpu": 1, "held": [f"{WHOLE}/{gpu_uuid(1)}"], "current": [WHOLE], "wanted": [SHARED]}
        ]
    }
    # Withdrawn: a second pod asking for it now is refused, not handed it as well.
    with process.plugin(WHOLE) as plugin, pytest.raises(grpc.RpcError) as refused:
        allocate(plugin, [gpu_uuid(1)])
    assert refused.value.code() == grpc.StatusCode.FAILED_PRECONDITION

    hold(kubelet, WHOLE, gpu_uuid(1))  # polls that name the pod
    assert process.metric("gpuconf_node_pending_gpu_changes") == 1
    kubelet.pod_resources.release_all()  # the pod ended
    shared = kubelet.wait_devices(SHARED, lambda d: len(d) == 4, timeout=10)
    assert sorted(shared) == sorted(replicas(1, 2) + replicas(2, 2))
    assert sorted(kubelet.wait_devices(WHOLE, lambda d: len(d) == 1)) == [gpu_uuid(0)]
    wait_until(lambda: process.metric("gpuconf_node_pending_gpu_changes") == 0)
    assert process.status() == {"pendingChanges": []}


def test_a_replica_only_the_checkpoint_names_holds_a_change_however_late_and_until_it_goes(
    node: tuple[NodeProcess, KubeletStub],
) -> None:
    """A plain init container: List never names it (podresources/server_v1.go skips init
    containers that are not restartable), the kubelet's checkpoint does once its write, with
    an fsync (util/store/filestore.go writeFile), has landed, however late. The replica handed
    out holds the change past any margin after the answer, then the checkpoint holds it; the
    entry gone (the pod ended, the file rewritten), the change applies at once, not when the
    wait for unnamed IDs runs out. GPU 0, which nothing holds, moves at once."""
    process, kubelet = node
    hold(kubelet)
    whole_seen, shared_seen = len(kubelet.lists[WHOLE]), len(kubelet.lists[SHARED])
    with process.plugin(SHARED) as plugin:
        allocate(plugin, [f"{gpu_uuid(2)}::3"])
    answered = time.monotonic()
    process.write_config(config([1], [0, 2], 2))
    process.reload()
    shared = first_list_after(kubelet, SHARED, shared_seen)
    assert_held_known(process)
    assert health(shared) == {
        **dict.fromkeys(replicas(0, 2), "Healthy"),
        f"{gpu_uuid(2)}::0": "Healthy",
        f"{gpu_uuid(2)}::1": "Healthy",
        f"{gpu_uuid(2)}::2": "Unhealthy",
        f"{gpu_uuid(2)}::3": "Unhealthy",
    }
    assert sorted(first_list_after(kubelet, WHOLE, whole_seen)) == [gpu_uuid(1)]
    pending = [{"gpu": 2, "held": [f"{SHARED}/{gpu_uuid(2)}::3"], "current": [SHARED],
                "wanted": [SHARED]}]  # fmt: skip
    assert process.status()["pendingChanges"] == pending

    polls_begun_after(kubelet, answered + 2.0)  # the margin gpuconf once gave the kubelet
    assert process.status()["pendingChanges"] == pending
    write_checkpoint(process, checkpoint_holding(SHARED, f"{gpu_uuid(2)}::3"))
    hold(kubelet)
    assert process.status()["pendingChanges"] == pending
    write_checkpoint(process, checkpoint_holding(SHARED))  # the pod ended; the file rewritten
    devices = kubelet.wait_devices(SHARED, lambda d: len(d) == 4, timeout=10)
    assert sorted(devices) == sorted(replicas(0, 2) + replicas(2, 2))
    wait_until(lambda: process.metric("gpuconf_node_pending_gpu_changes") == 0)


def test_lowering_replicas_withdraws_held_ids_only_after_release(
    node: tuple[NodeProcess, KubeletStub],
) -> None:
    process, kubelet = node
    hold(kubelet, SHARED, f"{gpu_uuid(2)}::3")
    process.write_config(config([0, 1], [2], 2))

    devices = kubelet.wait_devices(
        SHARED, lambda d: d[f"{gpu_uuid(2)}::3"][0] == "Unhealthy", timeout=5
    )
    assert health(devices) == {
        f"{gpu_uuid(2)}::0": "Healthy",
        f"{gpu_uuid(2)}::1": "Healthy",
        f"{gpu_uuid(2)}::2": "Unhealthy",
        f"{gpu_uuid(2)}::3": "Unhealthy",
    }
    kubelet.pod_resources.release_all()
    assert sorted(kubelet.wait_devices(SHARED, lambda d: len(d) == 2, timeout=5)) == replicas(2, 2)


def test_a_kubelet_that_cannot_say_what_is_held_defers_every_move(
    node: tuple[NodeProcess, KubeletStub],
) -> None:
    process, kubelet = node
    assert kubelet.pod_resources_socket is not None
    kubelet.pod_resources_socket.unlink()  # List now fails: nothing is known to be free
    wait_until(lambda: process.metric("gpuconf_node_pod_resources_up") == 0)
    process.write_config(config([0], [1, 2], 4))
    whole = kubelet.wait_devices(WHOLE, lambda d: d[gpu_uuid(1)][0] == "Unhealthy", timeout=5)
    assert sorted(whole) == [gpu_uuid(0), gpu_uuid(1)]
    assert process.metric("gpuconf_node_pending_gpu_changes") == 1


def test_a_checkpoint_the_runtime_cannot_read_defers_every_move_and_sends_no_nudge(
    node: tuple[NodeProcess, KubeletStub],
) -> None:
    """A failing read here says nothing of the kubelet's record: moves wait, as when List fails,
    and a resend could not fix the read."""
    process, kubelet = node
    (process.plugin_dir / CHECKPOINT_FILE).mkdir()
    wait_until(lambda: process.metric("gpuconf_node_device_checkpoint_readable") == 0)
    process.write_config(config([0, 3], [1, 2], 4))
    whole = kubelet.wait_devices(WHOLE, lambda d: d[gpu_uuid(1)][0] == "Unhealthy", timeout=5)
    assert sorted(whole) == [gpu_uuid(0), gpu_uuid(1)]  # gpu 3, not offered yet, waits too
    assert process.metric("gpuconf_node_pending_gpu_changes") == 2
    # The change's own lists (each resource's) first; then nudges, 2 s apart at first, would
    # break a quiet spell of 3 s.
    quiet_for(kubelet, 1.0, timeout=5)
    sent = lists_sent(kubelet)
    time.sleep(3.0)
    assert lists_sent(kubelet) == sent
    assert nudge_rounds(process) == []
    assert process.log().count("cannot read the kubelet's device checkpoint; GPU moves wait") == 1


def test_a_restart_with_a_changed_config_keeps_held_gpus_out_of_their_new_class(
    node: tuple[NodeProcess, KubeletStub],
) -> None:
    process, kubelet = node
    hold(kubelet, WHOLE, gpu_uuid(1))
    assert process.stop() == 0
    process.write_config(config([0], [1, 2], 4))
    lists_before = len(kubelet.lists[SHARED])
    process.start()
    kubelet.wait(lambda: len(kubelet.lists[SHARED]) > lists_before, 10, "the new process's list")
    assert sorted(kubelet.wait_devices(SHARED)) == replicas(2, 4)
    wait_until(lambda: process.metric("gpuconf_node_pending_gpu_changes") == 1, timeout=10)
    kubelet.pod_resources.release_all()
    shared = kubelet.wait_devices(SHARED, lambda d: len(d) == 8, timeout=5)
    assert sorted(shared) == sorted(replicas(1, 4) + replicas(2, 4))


def test_a_restart_right_after_an_allocate_keeps_the_gpu_out_of_its_new_class(
    node: tuple[NodeProcess, KubeletStub],
) -> None:
    """A new image and a new config rolled out together, moments after a pod was admitted:
    neither List nor the checkpoint names GPU 1 yet (a plain init container's shows only on
    the checkpoint, however late its write lands), so only the grant the old process saved
    (kubelet/saved_grants.py) keeps the new one from offering GPU 1 in its new class. Once a
    poll names it, the poll holds it; the pod ended, it moves."""
    process, kubelet = node
    hold(kubelet)  # stored: nothing held
    with process.plugin(WHOLE) as plugin:
        allocate(plugin, [gpu_uuid(1)])
    assert process.stop() == 0
    (grant,) = json.loads(grants_file(process).read_text(encoding="utf-8"))["grants"]
    assert grant["ids"] == [gpu_uuid(1)]
    assert grant["answered"] is not None  # written at the latest as the process stopped
    process.write_config(config([0], [1, 2], 4))  # GPU 1 to the shared class
    whole_seen, shared_seen = len(kubelet.lists[WHOLE]), len(kubelet.lists[SHARED])
    process.start()
    assert sorted(first_list_after(kubelet, SHARED, shared_seen)) == replicas(2, 4)
    assert sorted(first_list_after(kubelet, WHOLE, whole_seen)) == [gpu_uuid(0)]
    assert_held_known(process)
    pending = [{"gpu": 1, "held": [f"{WHOLE}/{gpu_uuid(1)}"], "current": [WHOLE],
                "wanted": [SHARED]}]  # fmt: skip
    assert process.status()["pendingChanges"] == pending
    assert f"devices={WHOLE}/{gpu_uuid(1)}" in process.log()

    hold(kubelet, WHOLE, gpu_uuid(1))  # polls that name the pod
    assert process.status()["pendingChanges"] == pending
    kubelet.pod_resources.release_all()  # the pod ended
    shared = kubelet.wait_devices(SHARED, lambda d: len(d) == 8, timeout=10)
    assert sorted(shared) == sorted(replicas(1, 4) + replicas(2, 4))
    wait_until(lambda: process.metric("gpuconf_node_pending_gpu_changes") == 0)


def grants_file(process: NodeProcess) -> Path:
    return process.files / "state" / GRANTS_FILE


def test_a_grant_no_poll_names_lets_its_gpu_move_once_what_is_left_of_its_wait_passes(
    node: tuple[NodeProcess, KubeletStub],
) -> None:
    """The kubelet never recorded it (an answer lost on the way): the new process holds it
    for the rest of its wait, counted from the answer's time on the clocks the old process
    wrote (the wall clock, and the boot clock under the same boot ID), then the change applies
    with no poll naming it: GPU 1 reaches its new class, and not before its wait ends. (A
    start slower than what is left of the wait finds the grant gone, and the GPU moves later
    still.)"""
    process, kubelet = node
    assert process.stop() == 0
    left = 10.0
    wait_ends = time.monotonic() + left  # read first: the runtime's wait ends no earlier
    answered = moment_now()
    answered = answered._replace(
        wall=answered.wall - (RECORD_WAIT_SECONDS - left),
        boot=answered.boot - (RECORD_WAIT_SECONDS - left),
    )
    grant = {"resource": WHOLE, "ids": [gpu_uuid(1)], "answered": answered._asdict()}
    document = {"version": FORMAT_VERSION, "bootId": read_boot_id(), "grants": [grant]}
    grants_file(process).parent.mkdir(exist_ok=True)
    write_atomically(grants_file(process), json.dumps(document))
    process.write_config(config([0], [1, 2], 4))
    shared_seen = len(kubelet.lists[SHARED])
    process.start()
    shared = kubelet.wait_devices(SHARED, lambda d: len(d) == 8, timeout=left + 30)
    assert sorted(shared) == sorted(replicas(1, 4) + replicas(2, 4))
    lists = kubelet.timed_lists(SHARED)
    moved_at = next(at for at, devices in lists[shared_seen:] if len(devices) == 8)
    assert moved_at >= wait_ends
    # The record is saved after the grant is let go (handed_out.py), so not before the move.
    wait_until(
        lambda: json.loads(grants_file(process).read_text(encoding="utf-8"))["grants"] == [],
        timeout=15,
        what="the saved grants to hold none",
    )


def write_checkpoint(process: NodeProcess, content: str) -> None:
    """Stand in for the kubelet writing its device checkpoint (beside kubelet.sock)."""
    write_atomically(process.plugin_dir / CHECKPOINT_FILE, content)


def checkpoint_holding(resource_name: str, *device_ids: str) -> str:
    """A checkpoint in the shape manager.go writes (data/kubelet_internal_checkpoint)."""
    entries = [
        {
            "PodUID": "pod-uid",
            "ContainerName": "main",
            "ResourceName": resource_name,
            "DeviceIDs": {"0": list(device_ids)},
            "AllocResp": "",
        }
    ]
    data = {"PodDeviceEntries": entries if device_ids else None, "RegisteredDevices": {}}
    return json.dumps({"Data": data, "Checksum": 1})


def test_a_gpu_on_the_kubelet_s_checkpoint_waits_though_list_names_no_pod(
    node: tuple[NodeProcess, KubeletStub],
) -> None:
    """Right after a kubelet restart List names no pod yet; the checkpoint still has them."""
    process, kubelet = node
    write_checkpoint(process, checkpoint_holding(WHOLE, gpu_uuid(1)))
    hold(kubelet)  # no device: two polls that read the checkpoint
    process.write_config(config([0], [1, 2], 4))
    kubelet.wait_devices(WHOLE, lambda d: d[gpu_uuid(1)][0] == "Unhealthy", timeout=5)
    assert process.status()["pendingChanges"][0]["held"] == [f"{WHOLE}/{gpu_uuid(1)}"]
    assert sorted(kubelet.wait_devices(SHARED)) == replicas(2, 4)

    write_checkpoint(process, checkpoint_holding(WHOLE))  # the kubelet let the pod go
    shared = kubelet.wait_devices(SHARED, lambda d: len(d) == 8, timeout=5)
    assert sorted(shared) == sorted(replicas(1, 4) + replicas(2, 4))


def test_an_unreadable_checkpoint_leaves_held_to_list_alone_at_start_and_on_a_change(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """The kubelet goes on with no allocation on record when it cannot read its checkpoint
    (manager.go Start), so gpuconf goes by List alone: no GPU waits on the file."""
    process = NodeProcess(
        tmp_path_factory.mktemp("unreadable"),
        config([0, 1], [2], 4),
        [plain_gpu(i) for i in range(4)],
    )
    every_gpu = checkpoint_holding(WHOLE, *(gpu_uuid(i) for i in range(4)))
    write_checkpoint(process, every_gpu[:60])  # cut short
    kubelet = KubeletStub(process.plugin_dir, process.pod_resources_socket)
    kubelet.pod_resources.hold(WHOLE, gpu_uuid(1))
    with serving(process, kubelet):
        # At start every GPU is offered: none is held under another resource by List.
        whole = kubelet.wait_devices(WHOLE, lambda d: len(d) == 2, timeout=10)
        assert health(whole) == {gpu_uuid(0): "Healthy", gpu_uuid(1): "Healthy"}
        assert sorted(kubelet.wait_devices(SHARED, lambda d: len(d) == 4)) == replicas(2, 4)

        # GPU 0 (free) and GPU 1 (held by List's pod) to the shared class; GPU 3 newly added.
        process.write_config(config([3], [0, 1, 2], 4))
        whole = kubelet.wait_devices(WHOLE, lambda d: gpu_uuid(3) in d, timeout=5)
        assert health(whole) == {gpu_uuid(1): "Unhealthy", gpu_uuid(3): "Healthy"}
        shared = kubelet.wait_devices(SHARED, lambda d: len(d) == 8, timeout=5)
        assert sorted(shared) == sorted(replicas(0, 4) + replicas(2, 4))
        assert process.status()["pendingChanges"] == [
            {"gpu": 1, "held": [f"{WHOLE}/{gpu_uuid(1)}"], "current": [WHOLE], "wanted": [SHARED]}
        ]

        # Nothing but List holds the change up: no device list is sent again to nudge the
        # kubelet (a nudge would go out within 2 s), and the file is warned about once.
        sent = {name: len(kubelet.lists[name]) for name in (WHOLE, SHARED)}
        for _ in range(3):
            hold(kubelet)
        assert {name: len(kubelet.lists[name]) for name in (WHOLE, SHARED)} == sent
        assert process.log().count("cannot read the kubelet's device checkpoint") == 1
        assert process.metric("gpuconf_node_device_checkpoint_readable") == 0

        kubelet.pod_resources.release_all()
        shared = kubelet.wait_devices(SHARED, lambda d: len(d) == 12, timeout=5)
        assert sorted(shared) == sorted(replicas(0, 4) + replicas(1, 4) + replicas(2, 4))
        assert sorted(kubelet.wait_devices(WHOLE, lambda d: len(d) == 1)) == [gpu_uuid(3)]
        assert process.alive()


NUDGE_ROUND = re.compile(r'msg="having the kubelet rewrite its device checkpoint" .*\bround=(\d+)')


def nudge_rounds(process: NodeProcess) -> list[int]:
    """Each checkpoint nudge's place in its schedule, as the runtime logged them: 1 where the
    schedule started over (gpuconf/node/kubelet/checkpoint_nudge.py)."""
    return [int(found) for found in NUDGE_ROUND.findall(process.log())]


def lists_sent(kubelet: KubeletStub) -> int:
    return sum(len(lists) for lists in kubelet.lists.values())


def quiet_for(kubelet: KubeletStub, seconds: float, timeout: float) -> None:
    """Wait until no device list has reached the kubelet for this long."""
    deadline = time.monotonic() + timeout
    count, since = lists_sent(kubelet), time.monotonic()
    while time.monotonic() - since < seconds:
        assert time.monotonic() < deadline, f"device lists kept coming for {timeout} s"
        time.sleep(0.05)
        if lists_sent(kubelet) != count:
            count, since = lists_sent(kubelet), time.monotonic()


def test_a_kubelet_restart_starts_checkpoint_nudges_over(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """The restarted kubelet prunes its record anew once it has seen its pod sources, so the
    nudges do not wait out their backoff though what the checkpoint alone holds is unchanged
    (List stays up across this restart)."""
    process = NodeProcess(
        tmp_path_factory.mktemp("restart"), config([0, 1], [2], 4), [plain_gpu(i) for i in range(4)]
    )
    write_checkpoint(process, checkpoint_holding(WHOLE, gpu_uuid(1)))  # never rewritten here
    pods_dir = Path(tempfile.mkdtemp(prefix="gc-", dir="/tmp"))
    pods = KubeletStub(pods_dir, process.pod_resources_socket).start()
    new: KubeletStub | None = None
    try:
        with serving(process, KubeletStub(process.plugin_dir)) as old:
            old.wait_devices(WHOLE, timeout=10)
            old.wait_devices(SHARED, timeout=10)
            process.write_config(config([0], [1, 2], 4))
            wait_until(lambda: process.metric("gpuconf_node_pending_gpu_changes") == 1)
            # Nudges at 0, 2 and 6 s; the next waits 8 s more.
            quiet_for(old, 4.5, timeout=15)
            before = len(nudge_rounds(process))
            old.stop()
            for name in (WHOLE, SHARED):
                process.socket(name).unlink()  # the kubelet wipes the plugin sockets at start
            new = KubeletStub(process.plugin_dir).start()
            new.wait_devices(WHOLE, timeout=3)
            new.wait_devices(SHARED, timeout=3)
            # Each registration's first list, then a nudge of a schedule started over: not the
            # fourth of the old one, which waits its 8 s out.
            wait_until(lambda: lists_sent(new) >= 3, timeout=15, what="a nudge")
            wait_until(lambda: 1 in nudge_rounds(process)[before:], timeout=15, what="round 1")
    finally:
        if new is not None:
            new.stop()
        pods.stop()
        shutil.rmtree(pods_dir, ignore_errors=True)


def test_a_pod_that_ends_starts_checkpoint_nudges_over(
    node: tuple[NodeProcess, KubeletStub],
) -> None:
    """A regular init container's entry keeps the nudges backing off while its pod lives; a pod
    that ends beside it (List drops its GPU, the checkpoint still names it) is nudged for at
    once, not after the backoff's wait."""
    process, kubelet = node
    write_checkpoint(process, checkpoint_holding(WHOLE, gpu_uuid(0), gpu_uuid(1)))
    hold(kubelet, WHOLE, gpu_uuid(0))  # gpu 1: only the init container's entry holds it
    process.write_config(config([3], [0, 1, 2], 4))
    wait_until(lambda: process.metric("gpuconf_node_pending_gpu_changes") == 2)
    quiet_for(kubelet, 4.5, timeout=15)  # nudges at 0, 2 and 6 s; the next waits 8 s more
    before = len(nudge_rounds(process))
    kubelet.pod_resources.release_all()
    # The first nudge of a schedule started over, not the next of the one that waits 8 s more.
    wait_until(lambda: 1 in nudge_rounds(process)[before:], timeout=15, what="a nudge")
