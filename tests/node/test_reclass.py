"""Day-2 re-class as pure data: what applies at once and what waits for its holders."""

from __future__ import annotations

from typing import Any

from builders import resource_settings

from gpuconf.api.node_config import ResourceSettings
from gpuconf.node.nvml.api import GpuInfo
from gpuconf.node.reclass import PendingChange, assignment_of, devices_by_resource, reclass

GPUS = {i: GpuInfo(i, f"GPU-{i}", "x", 1, f"0000:0{i}:00.0") for i in range(3)}


def settings(name: str, replicas: int = 1) -> ResourceSettings:
    sharing: dict[str, Any] = {"strategy": "time-slicing" if replicas > 1 else "none"}
    if replicas > 1:
        sharing["replicas"] = replicas
    return resource_settings(
        {"name": f"gpuconf.dev/{name}", "class": name, "gpus": {"default": []}, "sharing": sharing}
    )


WHOLE, SHARED = settings("whole"), settings("shared", 4)


def test_a_change_that_withdraws_nothing_held_applies_at_once() -> None:
    now = assignment_of([(WHOLE, [0, 1]), (SHARED, [2])])
    wanted = assignment_of([(WHOLE, [0]), (SHARED, [1, 2])])
    change = reclass(now, wanted, {"gpuconf.dev/shared": frozenset({"GPU-2::0"})}, GPUS)
    assert change.effective == wanted
    assert change.pending == ()
    assert change.draining == frozenset()


def test_a_held_gpu_keeps_its_class_and_drains_while_the_rest_moves() -> None:
    now = assignment_of([(WHOLE, [0, 1]), (SHARED, [2])])
    wanted = assignment_of([(SHARED, [0, 1, 2])])
    change = reclass(now, wanted, {"gpuconf.dev/whole": frozenset({"GPU-1"})}, GPUS)
    assert change.effective == {0: (SHARED,), 1: (WHOLE,), 2: (SHARED,)}
    assert change.draining == {("gpuconf.dev/whole", "GPU-1")}
    (pending,) = change.pending
    assert pending.as_text() == (
        "GPU 1: gpuconf.dev/whole -> gpuconf.dev/shared waits for gpuconf.dev/whole/GPU-1 "
        "to be released"
    )
    devices = devices_by_resource(change.effective, GPUS)
    assert [d.id for d in devices["gpuconf.dev/whole"].devices] == ["GPU-1"]
    assert len(devices["gpuconf.dev/shared"].devices) == 8


def test_fewer_replicas_wait_only_for_the_withdrawn_ids() -> None:
    now = assignment_of([(SHARED, [2])])
    wanted = assignment_of([(settings("shared", 2), [2])])
    low = {"gpuconf.dev/shared": frozenset({"GPU-2::0", "GPU-2::1"})}
    assert reclass(now, wanted, low, GPUS).effective == wanted
    high = {"gpuconf.dev/shared": frozenset({"GPU-2::3"})}
    change = reclass(now, wanted, high, GPUS)
    assert change.effective == now
    assert change.draining == {
        ("gpuconf.dev/shared", "GPU-2::2"),
        ("gpuconf.dev/shared", "GPU-2::3"),
    }


def test_unknown_holders_defer_every_withdrawal_and_every_addition() -> None:
    # An added GPU may be held by a container under what an earlier process offered.
    now = assignment_of([(WHOLE, [0])])
    wanted = assignment_of([(SHARED, [0]), (WHOLE, [1])])
    change = reclass(now, wanted, None, GPUS)
    assert change.effective == {0: (WHOLE,)}
    assert [p.gpu_index for p in change.pending] == [0, 1]


def test_a_gpu_that_left_the_config_goes_once_free() -> None:
    now = assignment_of([(WHOLE, [0, 1])])
    wanted = assignment_of([(WHOLE, [0])])
    assert reclass(now, wanted, {}, GPUS).effective == {0: (WHOLE,)}


def test_at_start_a_gpu_held_under_an_older_assignment_waits_for_its_holder() -> None:
    wanted = assignment_of([(SHARED, [0, 1])])
    held = {
        "gpuconf.dev/whole": frozenset({"GPU-1"}),
        "gpuconf.dev/shared": frozenset({"GPU-0::2"}),
    }
    change = reclass({}, wanted, held, GPUS)
    assert change.effective == {0: (SHARED,)}
    (pending,) = change.pending
    assert (pending.gpu_index, pending.current, pending.wanted) == (
        1,
        ("gpuconf.dev/whole",),
        ("gpuconf.dev/shared",),
    )
    assert reclass({}, wanted, {}, GPUS).effective == wanted
    # Unknown at start: a container may hold a GPU under its old class, so nothing is offered
    # until the kubelet answers.
    unknown = reclass({}, wanted, None, GPUS)
    assert unknown.effective == {}
    assert [p.gpu_index for p in unknown.pending] == [0, 1]
    assert "until the kubelet says which devices containers hold" in unknown.pending[0].as_text()


def test_a_pending_change_reads_back_from_status_by_resource_and_id_even_with_slashes() -> None:
    change = PendingChange(
        1,
        (
            ("gpuconf.dev/h100-1g", "MIG-GPU-abc/7/0"),  # a pre-470 driver's MIG device name
            ("nvidia.com/gpu", "GPU-abc"),
        ),
        ("gpuconf.dev/h100-1g",),
        (),
    )
    assert change.as_dict()["held"] == [
        "gpuconf.dev/h100-1g/MIG-GPU-abc/7/0",
        "nvidia.com/gpu/GPU-abc",
    ]
    assert PendingChange.from_dict(change.as_dict()) == change
