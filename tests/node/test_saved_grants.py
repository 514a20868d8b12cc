"""What Allocate handed out survives a restart (gpuconf/node/kubelet/saved_grants.py, and
handed_out.py's restore and save): each grant is on disk before its answer goes out, a new
process holds what is saved for what is left of its wait or until a poll of its own names it,
a clock step only ever holds longer, and a file it cannot read holds every move for one wait
and never stops it."""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from builders import Clock
from test_handed_out import WHOLE, AllocateStream, allocate_on_a_thread, view
from test_small_files import NOT_STATE_FILES, returning

from gpuconf.node.kubelet.handed_out import RECORD_WAIT_SECONDS, HandedOut
from gpuconf.node.kubelet.plugin_server import DevicePluginService
from gpuconf.node.kubelet.saved_grants import (
    FORMAT_VERSION,
    GRANTS_FILE,
    Moment,
    SavedGrant,
    SavedGrants,
)
from gpuconf.node.latest import Latest
from gpuconf.node.metrics import Metrics

BOOT = "3f0c5e9a-0b9e-4f4e-9a51-6f1d2f7c1a01"
GPU_1 = {WHOLE: frozenset({"GPU-1"})}


class Clocks:
    """One fake time read three ways: the process's monotonic clock (a new one in each
    process), the wall clock and the boot clock; ``advance`` moves all three."""

    def __init__(self) -> None:
        self.monotonic = Clock(100.0)
        self.wall = 1_800_000_000.0
        self.boot = 5_000.0

    def advance(self, seconds: float) -> None:
        self.monotonic.now += seconds
        self.wall += seconds
        self.boot += seconds

    def moment(self) -> Moment:
        return Moment(self.wall, self.boot)

    def new_process(self) -> float:
        """A monotonic clock of a new process, which counts from elsewhere; its reading now."""
        self.monotonic = Clock(7.0)
        return self.monotonic.now


class CountingSavedGrants(SavedGrants):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.writes = 0

    def save(self, grants: Any) -> bool:
        self.writes += 1
        return super().save(grants)


def process(
    path: Path, clocks: Clocks, boot_id: str | None = BOOT, metrics: Metrics | None = None
) -> HandedOut:
    """A process's record of what it handed out, restored from ``path`` as at its start."""
    saved = SavedGrants(path, metrics or Metrics(), clocks.moment, lambda: boot_id)
    handed_out = HandedOut(clocks.monotonic, saved)
    handed_out.restore()
    return handed_out


def answered(handed_out: HandedOut, *ids: str) -> None:
    """What Allocate does (record, save, answer), then the save of the poll that follows."""
    grant = handed_out.record(WHOLE, ids)
    handed_out.save(grant)
    handed_out.sent(grant)
    handed_out.save()


def saved(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def test_a_grant_is_on_disk_before_its_answer_goes_out_and_its_answer_time_after(
    tmp_path: Path,
) -> None:
    """A process that dies before the write never answers: nothing the kubelet received can
    be missing from the file. The time is written once the answer is out."""
    path = tmp_path / GRANTS_FILE
    clocks = Clocks()
    handed_out = process(path, clocks)
    on_disk_when_answering: list[Any] = []
    stream = AllocateStream("GPU-1", sending=lambda: on_disk_when_answering.append(saved(path)))
    service = DevicePluginService(Latest(view(0, 1)), Metrics(), handed_out)
    thread, raised = allocate_on_a_thread(service, stream)
    thread.join(5)
    assert raised == []
    assert len(stream.sent) == 1
    grant = {"resource": WHOLE, "ids": ["GPU-1"], "answered": None}
    assert on_disk_when_answering == [
        {"version": FORMAT_VERSION, "bootId": BOOT, "grants": [grant]}
    ]
    assert saved(path)["grants"] == [grant]
    handed_out.save()  # as the next poll does
    time = {"wall": clocks.wall, "boot": clocks.boot}
    assert saved(path)["grants"] == [{**grant, "answered": time}]


def test_a_restarted_process_holds_a_saved_grant_until_a_poll_of_its_own_names_it(
    tmp_path: Path,
) -> None:
    path = tmp_path / GRANTS_FILE
    clocks = Clocks()
    answered(process(path, clocks), "GPU-1")
    clocks.advance(2.0)
    started = clocks.new_process()
    restarted = process(path, clocks)
    assert restarted.held() == GPU_1
    restarted.seen_by_poll(started, {})
    assert restarted.held() == GPU_1
    restarted.seen_by_poll(started + 1.0, GPU_1)
    assert restarted.held() == {}
    restarted.save()  # as the poll does once stored: the grant leaves the file
    assert saved(path)["grants"] == []


def test_a_saved_grant_is_held_for_what_is_left_of_its_wait(tmp_path: Path) -> None:
    path = tmp_path / GRANTS_FILE
    clocks = Clocks()
    answered(process(path, clocks), "GPU-1")
    clocks.advance(10.0)
    started = clocks.new_process()
    restarted = process(path, clocks)
    restarted.seen_by_poll(started + RECORD_WAIT_SECONDS - 10.01, {})
    assert restarted.held() == GPU_1
    restarted.seen_by_poll(started + RECORD_WAIT_SECONDS - 10.0, {})
    assert restarted.held() == {}


def test_a_grant_whose_wait_has_passed_is_not_restored_and_leaves_the_file(
    tmp_path: Path,
) -> None:
    path = tmp_path / GRANTS_FILE
    clocks = Clocks()
    answered(process(path, clocks), "GPU-1")
    clocks.advance(RECORD_WAIT_SECONDS)
    clocks.new_process()
    restarted = process(path, clocks)
    assert restarted.held() == {}
    restarted.save()
    assert saved(path)["grants"] == []


def test_a_grant_saved_before_its_answer_went_out_is_held_a_full_wait_from_the_restart(
    tmp_path: Path,
) -> None:
    """The process died between the write and the answer, or before writing the answer's
    time: if the answer went out, it did before the new process started."""
    path = tmp_path / GRANTS_FILE
    clocks = Clocks()
    first = process(path, clocks)
    first.record(WHOLE, ["GPU-1"])
    first.save()
    clocks.advance(20.0)
    started = clocks.new_process()
    restarted = process(path, clocks)
    restarted.seen_by_poll(started + RECORD_WAIT_SECONDS - 0.01, {})
    assert restarted.held() == GPU_1
    restarted.save()  # written with the restart as its time: a third process counts from it
    assert saved(path)["grants"][0]["answered"] == {"wall": clocks.wall, "boot": clocks.boot}
    restarted.seen_by_poll(started + RECORD_WAIT_SECONDS, {})
    assert restarted.held() == {}


def test_a_wall_clock_stepped_back_holds_a_grant_no_more_than_a_full_wait(tmp_path: Path) -> None:
    path = tmp_path / GRANTS_FILE
    clocks = Clocks()
    answered(process(path, clocks), "GPU-1")
    clocks.advance(5.0)
    clocks.wall -= 3600.0  # the answer's time is an hour ahead of the wall clock now
    clocks.boot = 3.0  # and a reboot left nothing to compare (/run survived, say)
    started = clocks.new_process()
    restarted = process(path, clocks, boot_id="another boot")
    restarted.seen_by_poll(started + RECORD_WAIT_SECONDS - 0.01, {})
    assert restarted.held() == GPU_1
    restarted.seen_by_poll(started + RECORD_WAIT_SECONDS, {})
    assert restarted.held() == {}


def test_a_wall_clock_stepped_forward_is_caught_by_the_boot_clock(tmp_path: Path) -> None:
    path = tmp_path / GRANTS_FILE
    clocks = Clocks()
    answered(process(path, clocks), "GPU-1")
    clocks.advance(5.0)
    clocks.wall += 3600.0  # the wall clock says the answer is an hour old
    started = clocks.new_process()
    restarted = process(path, clocks)
    restarted.seen_by_poll(started + RECORD_WAIT_SECONDS - 5.01, {})
    assert restarted.held() == GPU_1
    restarted.seen_by_poll(started + RECORD_WAIT_SECONDS - 5.0, {})
    assert restarted.held() == {}


def test_under_another_boot_id_the_wall_clock_alone_says_a_grant_s_age(tmp_path: Path) -> None:
    """The boot clock starts over at a reboot: its reading from before means nothing."""
    path = tmp_path / GRANTS_FILE
    clocks = Clocks()
    answered(process(path, clocks), "GPU-1")
    clocks.advance(5.0)
    clocks.boot = 10.0
    started = clocks.new_process()
    restarted = process(path, clocks, boot_id="another boot")
    restarted.seen_by_poll(started + RECORD_WAIT_SECONDS - 5.01, {})
    assert restarted.held() == GPU_1
    restarted.seen_by_poll(started + RECORD_WAIT_SECONDS - 5.0, {})
    assert restarted.held() == {}


@pytest.mark.parametrize(
    ("writer_boot", "reader_boot"),
    [(None, None), (BOOT, None), (None, BOOT)],
    ids=["neither", "the new process's", "the old process's"],
)
def test_where_a_boot_id_is_unknown_a_grant_s_age_is_unknown_and_it_is_held_a_full_wait(
    tmp_path: Path, writer_boot: str | None, reader_boot: str | None
) -> None:
    """With no boot ID to trust the boot clock under, the wall clock alone could have
    stepped forward: an hour's step must not drop a grant a moment old."""
    path = tmp_path / GRANTS_FILE
    clocks = Clocks()
    answered(process(path, clocks, boot_id=writer_boot), "GPU-1")
    clocks.advance(5.0)
    clocks.wall += 3600.0
    started = clocks.new_process()
    restarted = process(path, clocks, boot_id=reader_boot)
    restarted.seen_by_poll(started + RECORD_WAIT_SECONDS - 0.01, {})
    assert restarted.held() == GPU_1
    restarted.seen_by_poll(started + RECORD_WAIT_SECONDS, {})
    assert restarted.held() == {}


UNREADABLE = {
    "not JSON": b'{"version": 1, "grants": [{"resou',
    "not a list of grants": b'{"version": 1, "grants": "GPU-1"}',
    "IDs not a list": b'{"version": 1, "grants": [{"resource": "r", "ids": "GPU-1", "answered": null}]}',
    "a time that is not one": b'{"version": 1, "grants": [{"resource": "r", "ids": [], "answered": {"wall": "now", "boot": 1}}]}',
    "another version's": b'{"version": 2, "grants": []}',
    "nested past what json reads": b"[" * 100_000,
}


@pytest.mark.parametrize("content", list(UNREADABLE.values()), ids=list(UNREADABLE))
def test_a_file_that_cannot_be_read_holds_every_move_for_one_wait_and_is_replaced(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, content: bytes
) -> None:
    """Nothing says what it held: what is held is unknown (every move waits, and a GPU not
    offered yet waits too) until a poll begun one wait after the start; never a crash."""
    path = tmp_path / GRANTS_FILE
    path.write_bytes(content)
    clocks = Clocks()
    with caplog.at_level(logging.ERROR, logger="gpuconf.node.handed-out"):
        handed_out = process(path, clocks)
    assert "cannot read what Allocate handed out before this start" in caplog.text
    assert handed_out.held() is None
    handed_out.seen_by_poll(clocks.monotonic.now + RECORD_WAIT_SECONDS - 0.01, {})
    assert handed_out.held() is None
    handed_out.seen_by_poll(clocks.monotonic.now + RECORD_WAIT_SECONDS, {})
    assert handed_out.held() == {}
    handed_out.save()
    assert saved(path) == {"version": FORMAT_VERSION, "bootId": BOOT, "grants": []}


@pytest.mark.parametrize("make", list(NOT_STATE_FILES.values()), ids=list(NOT_STATE_FILES))
def test_something_else_at_the_path_holds_every_move_for_one_wait_and_never_stops_the_start(
    tmp_path: Path, make: Callable[[Path], None]
) -> None:
    """A FIFO is never waited on (the start would hang), /dev/zero never read to its end."""
    make(tmp_path / GRANTS_FILE)
    clocks = Clocks()
    handed_out = returning(lambda: process(tmp_path / GRANTS_FILE, clocks))
    assert handed_out.held() is None
    handed_out.seen_by_poll(clocks.monotonic.now + RECORD_WAIT_SECONDS, {})
    assert handed_out.held() == {}


def save_failing(metrics: Metrics) -> str:
    return metrics.handed_out_save_failing.text().splitlines()[-1]


def test_a_write_that_fails_is_logged_once_and_allocate_still_answers(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A full or read-only state folder must not stop pods from starting: this process still
    holds what it handed out; only a restart would forget it, and the metric says so."""
    path = tmp_path / "state" / GRANTS_FILE
    metrics = Metrics()
    handed_out = process(path, Clocks(), metrics=metrics)
    (tmp_path / "state").write_text("a file where the state folder goes")
    service = DevicePluginService(Latest(view(0, 1)), Metrics(), handed_out)
    with caplog.at_level(logging.INFO, logger="gpuconf.node.handed-out"):
        for device in ("GPU-0", "GPU-1"):
            stream = AllocateStream(device)
            thread, raised = allocate_on_a_thread(service, stream)
            thread.join(5)
            assert raised == []
            assert len(stream.sent) == 1
        assert handed_out.held() == {WHOLE: frozenset({"GPU-0", "GPU-1"})}
        assert caplog.text.count("cannot save what Allocate handed out") == 1
        assert save_failing(metrics) == "gpuconf_node_handed_out_save_failing 1.0"

        (tmp_path / "state").unlink()
        handed_out.save()
    assert "what Allocate handed out is saved again" in caplog.text
    assert save_failing(metrics) == "gpuconf_node_handed_out_save_failing 0.0"
    assert sorted(grant["ids"][0] for grant in saved(path)["grants"]) == ["GPU-0", "GPU-1"]


def test_a_save_with_nothing_new_writes_nothing(tmp_path: Path) -> None:
    """Every poll asks for a save; only one that let go of something writes."""
    clocks = Clocks()
    counting = CountingSavedGrants(tmp_path / GRANTS_FILE, Metrics(), clocks.moment, lambda: BOOT)
    handed_out = HandedOut(clocks.monotonic, counting)
    answered(handed_out, "GPU-1")
    assert counting.writes == 2
    handed_out.seen_by_poll(clocks.monotonic.now + 1.0, {})
    handed_out.save()
    assert counting.writes == 2
    handed_out.seen_by_poll(clocks.monotonic.now + 1.0, GPU_1)
    handed_out.save()
    assert counting.writes == 3


def test_allocates_waiting_on_one_write_go_with_the_next(tmp_path: Path) -> None:
    clocks = Clocks()
    counting = CountingSavedGrants(tmp_path / GRANTS_FILE, Metrics(), clocks.moment, lambda: BOOT)
    handed_out = HandedOut(clocks.monotonic, counting)
    first, second = handed_out.record(WHOLE, ["GPU-0"]), handed_out.record(WHOLE, ["GPU-1"])
    handed_out.save(first)
    handed_out.save(second)  # already written with the first
    assert counting.writes == 1
    assert [grant["ids"] for grant in saved(tmp_path / GRANTS_FILE)["grants"]] == [
        ["GPU-0"],
        ["GPU-1"],
    ]


class HeldUpSavedGrants(SavedGrants):
    """Once ``hold_up_next`` is set, its next write waits for ``release`` once it has begun
    (``writing``), as a write on a slow disk does."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.hold_up_next = False
        self.writing = threading.Event()
        self.release = threading.Event()

    def save(self, grants: Any) -> bool:
        if self.hold_up_next:
            self.hold_up_next = False
            self.writing.set()
            self.release.wait()
        return super().save(grants)


def test_a_grant_recorded_while_a_write_is_under_way_waits_for_a_write_of_its_own(
    tmp_path: Path,
) -> None:
    """A write holds the grants as they stood when it began: one recorded meanwhile is not in
    it, so its Allocate must not answer on that write."""
    clocks = Clocks()
    saving = HeldUpSavedGrants(tmp_path / GRANTS_FILE, Metrics(), clocks.moment, lambda: BOOT)
    handed_out = HandedOut(clocks.monotonic, saving)
    answered(handed_out, "GPU-0")
    saving.hold_up_next = True
    handed_out.record(WHOLE, ["GPU-2"])  # a change for the poll's write to carry
    polls_write = threading.Thread(target=handed_out.save)
    polls_write.start()
    assert saving.writing.wait(30)
    second = handed_out.record(WHOLE, ["GPU-1"])
    allocates_write = threading.Thread(target=handed_out.save, args=(second,))
    allocates_write.start()
    saving.release.set()
    for thread in (polls_write, allocates_write):
        thread.join(30)
        assert not thread.is_alive()
    assert sorted(
        id for grant in saved(tmp_path / GRANTS_FILE)["grants"] for id in grant["ids"]
    ) == [
        "GPU-0",
        "GPU-1",
        "GPU-2",
    ]


def test_an_id_handed_out_again_is_held_by_its_latest_answer_alone(tmp_path: Path) -> None:
    """A pod that failed admission and came back: the earlier answer's wait ends first and a
    poll that frees the later one frees it too, so the file keeps one entry per ID."""
    clocks = Clocks()
    handed_out = process(tmp_path / GRANTS_FILE, clocks)
    answered(handed_out, "GPU-0", "GPU-1")
    clocks.advance(20.0)
    answered(handed_out, "GPU-1")
    grants = saved(tmp_path / GRANTS_FILE)["grants"]
    assert [(grant["ids"], grant["answered"]["wall"]) for grant in grants] == [
        (["GPU-0"], clocks.wall - 20.0),
        (["GPU-1"], clocks.wall),
    ]
    handed_out.seen_by_poll(clocks.monotonic.now + RECORD_WAIT_SECONDS - 20.0, {})
    assert handed_out.held() == GPU_1


def test_saved_grants_round_trip_with_their_ages(tmp_path: Path) -> None:
    clocks = Clocks()
    saved_grants = SavedGrants(tmp_path / GRANTS_FILE, Metrics(), clocks.moment, lambda: BOOT)
    saved_grants.save(
        [
            SavedGrant(WHOLE, frozenset({"GPU-0", "GPU-1"}), clocks.moment()),
            SavedGrant(WHOLE, frozenset({"GPU-2"}), None),
        ]
    )
    clocks.advance(4.0)
    loaded = saved_grants.load(clocks.moment())
    assert [(g.resource, sorted(g.ids), g.age) for g in loaded] == [
        (WHOLE, ["GPU-0", "GPU-1"], 4.0),
        (WHOLE, ["GPU-2"], 0.0),
    ]


def test_a_temporary_a_dead_writer_left_is_removed_at_the_next_start(tmp_path: Path) -> None:
    clocks = Clocks()
    answered(process(tmp_path / GRANTS_FILE, clocks), "GPU-1")
    (tmp_path / f".{GRANTS_FILE}.k2x9q1").write_bytes(b'{"version": 1, "gra')
    (tmp_path / "awaiting-reset.json").write_text("{}")
    clocks.new_process()
    assert process(tmp_path / GRANTS_FILE, clocks).held() == GPU_1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["awaiting-reset.json", GRANTS_FILE]
