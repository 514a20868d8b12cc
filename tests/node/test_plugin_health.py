"""Device health over the ListAndWatch stream: XIDs, recovery, GPUs falling off the bus."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from builders import gpu_uuid, node_config, nvlink_box, resource
from kubelet_stub import KubeletStub
from plugin_process import NodeProcess, allocate, serving, wait_until

WHOLE = "gpuconf.dev/h100"
RECOVER_AFTER_SECONDS = 1


@pytest.fixture(scope="module")
def node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[NodeProcess, KubeletStub]]:
    config = node_config(
        [
            resource("h100", [0, 1, 2, 3, 4, 5]),
            resource("h100-shared", [6, 7], sharing={"strategy": "time-slicing", "replicas": 2}),
        ],
        health={
            "ignoredXids": [13, 43],
            "resetXids": [48, 95],
            "recoverAfterSeconds": RECOVER_AFTER_SECONDS,
        },
    )
    process = NodeProcess(tmp_path_factory.mktemp("health"), config, nvlink_box())
    with serving(process) as kubelet:
        kubelet.wait_devices(WHOLE, timeout=10)
        yield process, kubelet


def health(devices: dict[str, tuple[str, tuple[int, ...]]], device_id: str) -> str:
    return devices[device_id][0]


def test_a_workload_xid_makes_a_gpu_unhealthy_until_a_quiet_period_passes(
    node: tuple[NodeProcess, KubeletStub],
) -> None:
    process, kubelet = node
    process.send_xid(gpu_uuid(3), 13)  # ignored
    process.send_xid(gpu_uuid(2), 94)  # contained ECC error: recovers with the workload
    marked = time.monotonic()
    sick = kubelet.wait_devices(WHOLE, lambda d: health(d, gpu_uuid(2)) == "Unhealthy", timeout=5)
    assert health(sick, gpu_uuid(3)) == "Healthy"
    kubelet.wait_devices(WHOLE, lambda d: health(d, gpu_uuid(2)) == "Healthy", timeout=5)
    assert time.monotonic() - marked >= RECOVER_AFTER_SECONDS - 0.1


def test_an_xid_makes_every_replica_of_the_gpu_unhealthy(
    node: tuple[NodeProcess, KubeletStub],
) -> None:
    process, kubelet = node
    process.send_xid(gpu_uuid(7), 94)
    devices = kubelet.wait_devices(
        "gpuconf.dev/h100-shared",
        lambda d: health(d, f"{gpu_uuid(7)}::0") == "Unhealthy",
        timeout=5,
    )
    assert health(devices, f"{gpu_uuid(7)}::1") == "Unhealthy"
    assert health(devices, f"{gpu_uuid(6)}::0") == "Healthy"


def test_a_gpu_that_falls_off_the_bus_is_unhealthy_and_returns_when_seen_again(
    node: tuple[NodeProcess, KubeletStub],
) -> None:
    process, kubelet = node
    box = nvlink_box()
    process.write_gpus([g for g in box if g["index"] != 5])
    gone = kubelet.wait_devices(WHOLE, lambda d: health(d, gpu_uuid(5)) == "Unhealthy", timeout=5)
    assert sorted(gone) == sorted(gpu_uuid(i) for i in range(6)), "still listed, as unhealthy"
    assert process.metric("gpuconf_node_inventory_drift") == 1
    # The GpuLost alert compares these two.
    assert process.metric("gpuconf_node_gpus_present") == 7
    assert process.metric("gpuconf_node_gpus_declared") == 8
    process.write_gpus(box)
    kubelet.wait_devices(WHOLE, lambda d: health(d, gpu_uuid(5)) == "Healthy", timeout=5)
    assert process.metric("gpuconf_node_inventory_drift") == 0
    assert process.metric("gpuconf_node_gpus_present") == 8


def test_a_reset_xid_keeps_the_gpu_unhealthy_until_nvml_shows_it_reset(
    node: tuple[NodeProcess, KubeletStub],
) -> None:
    process, kubelet = node
    box = nvlink_box()
    process.send_xid(gpu_uuid(4), 95)
    kubelet.wait_devices(WHOLE, lambda d: health(d, gpu_uuid(4)) == "Unhealthy", timeout=5)
    before = process.metric("gpuconf_node_xid_events_total", **{"class": "reset"})
    assert before >= 1
    time.sleep(RECOVER_AFTER_SECONDS + 0.5)  # a quiet period forgives workload XIDs, not this
    assert health(kubelet.wait_devices(WHOLE), gpu_uuid(4)) == "Unhealthy"
    assert process.metric("gpuconf_node_gpus_awaiting_reset") == 1
    pending = [dict(g, resetPending=True) if g["index"] == 4 else g for g in box]
    process.write_gpus(pending)  # NVML: row remapping waits for a reset
    wait_until(lambda: "reset_pending=4" in process.log(), what="the runtime seeing it")
    assert health(kubelet.wait_devices(WHOLE), gpu_uuid(4)) == "Unhealthy"
    process.write_gpus(box)  # the reset happened
    kubelet.wait_devices(WHOLE, lambda d: health(d, gpu_uuid(4)) == "Healthy", timeout=5)
    assert process.metric("gpuconf_node_gpus_awaiting_reset") == 0


def _two_gpu_node(folder: Path) -> tuple[NodeProcess, Path]:
    """A node whose XID 48 needs a reset, and where it keeps the GPUs awaiting one."""
    config = node_config([resource("h100", [0, 1])], gpus=2, health={
        "ignoredXids": [13], "resetXids": [48], "recoverAfterSeconds": 1,
    })  # fmt: skip
    process = NodeProcess(folder, config, nvlink_box(2))
    return process, process.files / "state" / "awaiting-reset.json"


def test_allocate_refuses_a_gpu_that_turned_unhealthy_after_the_kubelet_chose_it(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    process, _ = _two_gpu_node(tmp_path_factory.mktemp("allocate-unhealthy"))
    with serving(process) as kubelet:
        kubelet.wait_devices(WHOLE, timeout=10)
        process.send_xid(gpu_uuid(1), 48)
        kubelet.wait_devices(WHOLE, lambda d: health(d, gpu_uuid(1)) == "Unhealthy", timeout=5)
        with process.plugin(WHOLE) as plugin:
            with pytest.raises(grpc.RpcError) as raised:
                allocate(plugin, [gpu_uuid(0), gpu_uuid(1)])
            assert allocate(plugin, [gpu_uuid(0)]).container_responses
        assert raised.value.code() == grpc.StatusCode.FAILED_PRECONDITION
        assert raised.value.details() == (
            f"{WHOLE} device(s) turned unhealthy before Allocate: {gpu_uuid(1)}; "
            "not handed out (the pod is to be placed again)"
        )
        assert process.metric("gpuconf_node_allocate_errors_total", resource=WHOLE) == 1


def test_a_gpu_awaiting_a_reset_stays_withheld_across_a_restart(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    box = nvlink_box(2)
    process, state = _two_gpu_node(tmp_path_factory.mktemp("reset-restart"))
    with serving(process) as kubelet:
        kubelet.wait_devices(WHOLE, timeout=10)
        process.send_xid(gpu_uuid(1), 48)
        kubelet.wait_devices(WHOLE, lambda d: health(d, gpu_uuid(1)) == "Unhealthy", timeout=5)
        wait_until(lambda: state.exists() and gpu_uuid(1) in state.read_text(), what="the state")
        assert process.stop() == 0
        lists_before = len(kubelet.lists[WHOLE])
        process.start()
        kubelet.wait(lambda: len(kubelet.lists[WHOLE]) > lists_before, 10, "a new list")
        devices = kubelet.wait_devices(WHOLE)
        assert (health(devices, gpu_uuid(0)), health(devices, gpu_uuid(1))) == (
            "Healthy",
            "Unhealthy",
        )
        process.write_gpus(box[:1])
        wait_until(lambda: "vanished=1" in process.log(), what="GPU 1 gone")
        process.write_gpus(box)  # re-enumerated: reset
        kubelet.wait_devices(WHOLE, lambda d: health(d, gpu_uuid(1)) == "Healthy", timeout=5)
        wait_until(lambda: gpu_uuid(1) not in state.read_text(), what="the state cleared")


def test_a_reset_state_that_cannot_be_saved_is_reported_once_and_saved_when_it_can(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    process, state = _two_gpu_node(tmp_path_factory.mktemp("reset-unsaved"))
    state.mkdir(parents=True)  # a folder where the file goes: every save fails
    with serving(process) as kubelet:
        kubelet.wait_devices(WHOLE, timeout=10)
        process.send_xid(gpu_uuid(1), 48)
        wait_until(lambda: "cannot save the reset state" in process.log(), what="the error")
        time.sleep(1)  # five ticks of the publish loop, each retrying the save
        assert process.log().count("cannot save the reset state") == 1
        state.rmdir()
        wait_until(lambda: state.is_file() and gpu_uuid(1) in state.read_text(), what="saved")
        # The runtime logs after the file is in place: on a loaded machine the log line trails.
        wait_until(lambda: "reset state saved again" in process.log(), what="the saved log line")
