"""What the runtime counts as held: PodResources List plus the kubelet's device checkpoint
(gpuconf/node/kubelet/pod_resources_watch.py), polled here without its thread."""

from __future__ import annotations

import errno
import json
import logging
import threading
from collections.abc import Callable
from pathlib import Path

import pytest
from builders import Clock, gpu_uuid

from gpuconf.node.kubelet import pod_resources_watch
from gpuconf.node.kubelet.checkpoint_nudge import NudgeBackoff
from gpuconf.node.kubelet.handed_out import HandedOut
from gpuconf.node.kubelet.pod_resources import HeldDevices, PodResourcesUnavailable
from gpuconf.node.kubelet.pod_resources_watch import PodResourcesWatch
from gpuconf.node.metrics import Metrics

WHOLE = "gpuconf.dev/h100"
UNREADABLE = "cannot read the kubelet's device checkpoint"


class FakeList:
    """Stands in for pod_resources.held_devices: what List answers, or None for a failure."""

    def __init__(self, answer: HeldDevices | None) -> None:
        self.answer = answer

    def __call__(self, socket: Path) -> HeldDevices:
        if self.answer is None:
            raise PodResourcesUnavailable(f"{socket} does not exist")
        return self.answer


@pytest.fixture
def listed(monkeypatch: pytest.MonkeyPatch) -> FakeList:
    fake = FakeList({WHOLE: frozenset({gpu_uuid(0)})})
    monkeypatch.setattr(pod_resources_watch, "held_devices", fake)
    return fake


def watch_of(
    tmp_path: Path, handed_out: HandedOut | None = None, changed: threading.Event | None = None
) -> tuple[PodResourcesWatch, Metrics]:
    metrics = Metrics()
    watch = PodResourcesWatch(
        tmp_path / "pod-resources.sock",
        tmp_path / "kubelet_internal_checkpoint",
        metrics,
        changed or threading.Event(),
        handed_out or HandedOut(),
    )
    return watch, metrics


def readable(metrics: Metrics) -> float:
    """The exposition's value of gpuconf_node_device_checkpoint_readable."""
    (line,) = (
        line
        for line in metrics.registry.exposition().decode().splitlines()
        if line.startswith("gpuconf_node_device_checkpoint_readable ")
    )
    return float(line.split()[1])


def checkpoint_holding(*device_ids: str) -> str:
    entry = {"PodUID": "u", "ContainerName": "c", "ResourceName": WHOLE,
             "DeviceIDs": {"-1": list(device_ids)}, "AllocResp": ""}  # fmt: skip
    return json.dumps({"Data": {"PodDeviceEntries": [entry]}, "Checksum": 1})


def test_a_checkpointed_id_list_does_not_name_is_held_and_awaits_a_checkpoint_write(
    tmp_path: Path, listed: FakeList
) -> None:
    (tmp_path / "kubelet_internal_checkpoint").write_text(checkpoint_holding(gpu_uuid(1)))
    watch, _ = watch_of(tmp_path)
    watch.poll_once()
    assert watch.held() == {WHOLE: frozenset({gpu_uuid(0), gpu_uuid(1)})}
    both = {(WHOLE, gpu_uuid(0)), (WHOLE, gpu_uuid(1))}
    assert watch.awaits_checkpoint(both) == {(WHOLE, gpu_uuid(1))}  # List explains gpu 0


def test_a_checkpoint_the_kubelet_could_not_read_leaves_held_to_list_and_awaits_no_write(
    tmp_path: Path, listed: FakeList, caplog: pytest.LogCaptureFixture
) -> None:
    (tmp_path / "kubelet_internal_checkpoint").write_text(checkpoint_holding(gpu_uuid(1))[:30])
    watch, metrics = watch_of(tmp_path)
    with caplog.at_level(logging.WARNING, logger="gpuconf.node.pod-resources"):
        watch.poll_once()
    assert watch.held() == {WHOLE: frozenset({gpu_uuid(0)})}
    assert not watch.awaits_checkpoint({(WHOLE, gpu_uuid(0)), (WHOLE, gpu_uuid(1))})
    assert readable(metrics) == 0
    assert caplog.text.count(UNREADABLE) == 1


def failing_read(error: OSError) -> Callable[[Path], bytes]:
    def read_bytes(path: Path) -> bytes:
        raise error

    return read_bytes


@pytest.mark.parametrize(
    "error", [None, PermissionError(errno.EACCES, "Permission denied"), OSError(errno.EIO, "I/O")],
    ids=["a-directory", "no-permission", "io-error"],
)  # fmt: skip
def test_a_checkpoint_this_process_cannot_read_leaves_held_unknown_and_awaits_no_write(
    tmp_path: Path,
    listed: FakeList,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
    error: OSError | None,
) -> None:
    """The kubelet's record is likely whole: every move waits, as when List fails."""
    if error is None:
        (tmp_path / "kubelet_internal_checkpoint").mkdir()
    else:
        (tmp_path / "kubelet_internal_checkpoint").write_text(checkpoint_holding(gpu_uuid(1)))
        monkeypatch.setattr(Path, "read_bytes", failing_read(error))
    watch, metrics = watch_of(tmp_path)
    with caplog.at_level(logging.WARNING, logger="gpuconf.node.pod-resources"):
        watch.poll_once()
        watch.poll_once()
    assert watch.held() is None
    assert not watch.awaits_checkpoint({(WHOLE, gpu_uuid(0)), (WHOLE, gpu_uuid(1))})
    assert readable(metrics) == 0
    assert caplog.text.count(f"{UNREADABLE}; GPU moves wait") == 1


def test_the_readable_gauge_comes_from_the_first_read_even_while_list_fails(
    tmp_path: Path, listed: FakeList
) -> None:
    (tmp_path / "kubelet_internal_checkpoint").write_text("{")
    listed.answer = None
    watch, metrics = watch_of(tmp_path)
    assert readable(metrics) == 0  # never 1 before a read said so
    watch.poll_once()
    assert readable(metrics) == 0
    (tmp_path / "kubelet_internal_checkpoint").write_text(checkpoint_holding())
    watch.poll_once()
    assert watch.held() is None
    assert readable(metrics) == 1


def test_a_pod_that_ends_while_the_checkpoint_holds_it_starts_the_nudges_over(
    tmp_path: Path, listed: FakeList
) -> None:
    """What is awaited from the checkpoint alone keys the backoff: an init container's entry
    (gpu 1) has it at a minute; the pod on gpu 0 ends, its entry not rewritten yet."""
    (tmp_path / "kubelet_internal_checkpoint").write_text(
        checkpoint_holding(gpu_uuid(0), gpu_uuid(1))
    )
    blocking = {(WHOLE, gpu_uuid(0)), (WHOLE, gpu_uuid(1))}
    watch, _ = watch_of(tmp_path)
    watch.poll_once()
    backoff = NudgeBackoff()
    assert nudge_times(backoff, watch.awaits_checkpoint(blocking), 0, 100)[-1] == 62
    listed.answer = {}
    watch.poll_once()
    assert nudge_times(backoff, watch.awaits_checkpoint(blocking), 100, 103) == [100, 102]


def nudge_times(backoff: NudgeBackoff, awaited: object, start: int, until: int) -> list[int]:
    """The seconds, on a 1 s tick, at which the supervisor would nudge."""
    sent = []
    for now in range(start, until):
        if backoff.due(awaited, now):
            backoff.nudged(now)
            sent.append(now)
    return sent


def test_an_unreadable_checkpoint_is_warned_about_once_through_a_list_outage(
    tmp_path: Path, listed: FakeList, caplog: pytest.LogCaptureFixture
) -> None:
    checkpoint = tmp_path / "kubelet_internal_checkpoint"
    checkpoint.write_text("{")
    watch, metrics = watch_of(tmp_path)
    with caplog.at_level(logging.INFO, logger="gpuconf.node.pod-resources"):
        watch.poll_once()
        listed.answer = None  # List fails for a while
        watch.poll_once()
        assert watch.held() is None
        watch.poll_once()
        listed.answer = {}
        watch.poll_once()
        watch.poll_once()
        assert caplog.text.count(UNREADABLE) == 1
        assert readable(metrics) == 0

        checkpoint.write_text(checkpoint_holding(gpu_uuid(2)))
        watch.poll_once()
        assert "the kubelet's device checkpoint reads again" in caplog.text
        assert readable(metrics) == 1
        checkpoint.write_text("{")  # a new spell: said again
        watch.poll_once()
    assert caplog.text.count(UNREADABLE) == 2


def test_a_handed_out_id_is_held_until_list_names_it_and_then_by_list_alone(
    tmp_path: Path, listed: FakeList
) -> None:
    """An app container: List names it once the kubelet has recorded our answer
    (devicemanager/manager.go allocateContainerResources, podDevices.insert). From the poll
    that names it on, the poll holds it, so its pod ending frees it at once; a failed poll in
    between frees nothing. The poll that frees it wakes the supervisor."""
    clock = Clock(100.0)
    handed_out = HandedOut(clock)
    changed = threading.Event()
    watch, _ = watch_of(tmp_path, handed_out, changed)
    listed.answer = {}
    watch.poll_once()
    handed_out.sent(handed_out.record(WHOLE, [gpu_uuid(1)]))
    clock.now += 0.5
    watch.poll_once()  # the kubelet has not recorded it yet
    assert watch.held() == {WHOLE: frozenset({gpu_uuid(1)})}
    listed.answer = {WHOLE: frozenset({gpu_uuid(1)})}
    clock.now += 1
    watch.poll_once()
    assert handed_out.held() == {}  # the poll holds it now
    assert watch.held() == {WHOLE: frozenset({gpu_uuid(1)})}
    listed.answer = None
    watch.poll_once()
    assert watch.held() is None
    listed.answer = {}  # the pod ended
    changed.clear()
    clock.now += 1
    watch.poll_once()
    assert watch.held() == {}
    assert changed.is_set()


def test_a_handed_out_id_only_the_checkpoint_names_is_held_however_late_the_write_comes(
    tmp_path: Path, listed: FakeList
) -> None:
    """A plain init container: List never names it (podresources/server_v1.go skips
    containers that are not restartable init containers), the checkpoint does once the
    kubelet's write, an fsync, has landed (util/store/filestore.go writeFile)."""
    clock = Clock(100.0)
    handed_out = HandedOut(clock)
    watch, _ = watch_of(tmp_path, handed_out)
    listed.answer = {}
    checkpoint = tmp_path / "kubelet_internal_checkpoint"
    handed_out.sent(handed_out.record(WHOLE, [gpu_uuid(1)]))
    clock.now += 10  # a slow disk
    watch.poll_once()
    assert watch.held() == {WHOLE: frozenset({gpu_uuid(1)})}
    checkpoint.write_text(checkpoint_holding(gpu_uuid(1)))
    clock.now += 1
    watch.poll_once()
    assert handed_out.held() == {}
    assert watch.held() == {WHOLE: frozenset({gpu_uuid(1)})}
    assert watch.awaits_checkpoint({(WHOLE, gpu_uuid(1))}) == {(WHOLE, gpu_uuid(1))}
    checkpoint.write_text(checkpoint_holding())  # the pod ended, the kubelet rewrote the file
    clock.now += 1
    watch.poll_once()
    assert watch.held() == {WHOLE: frozenset()}
