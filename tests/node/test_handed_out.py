"""What our plugins handed out counts as held until a poll begun after the answer names it, or
for RECORD_WAIT_SECONDS when none does, and Allocate is atomic with a decision
(gpuconf/node/kubelet/handed_out.py, plugin_server.py Allocate): an Allocate is either
recorded before the supervisor reads what is held, or checked against the views it publishes."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from dataclasses import replace
from types import TracebackType
from typing import Any

from builders import Clock, resource_settings
from grpclib.const import Status
from grpclib.exceptions import GRPCError

from gpuconf.node.devices import build_devices
from gpuconf.node.kubelet.handed_out import RECORD_WAIT_SECONDS, HandedOut
from gpuconf.node.kubelet.plugin_server import DevicePluginService
from gpuconf.node.kubelet.proto import api_pb2
from gpuconf.node.latest import Latest
from gpuconf.node.metrics import Metrics
from gpuconf.node.nvml.api import GpuInfo
from gpuconf.node.resource_view import ResourceView

WHOLE = "gpuconf.dev/x"
OTHER = "gpuconf.dev/y"
GPUS = {i: GpuInfo(i, f"GPU-{i}", "x", 1, f"0000:0{i}:00.0") for i in range(2)}


def view(*indices: int) -> ResourceView:
    settings = resource_settings(
        {"name": WHOLE, "class": "x", "gpus": {"default": [0, 1]}, "sharing": {"strategy": "none"}}
    )
    devices = build_devices(settings, GPUS, list(indices)).devices
    return ResourceView(settings, "envvar", devices, frozenset(d.id for d in devices))


class AllocateStream:
    """The kubelet's side of one Allocate call."""

    def __init__(self, *device_ids: str, sending: Callable[[], None] = lambda: None) -> None:
        container = api_pb2.ContainerAllocateRequest(devices_ids=list(device_ids))
        self.request = api_pb2.AllocateRequest(container_requests=[container])
        self.sent: list[Any] = []
        self._sending = sending

    async def recv_message(self) -> Any:
        return self.request

    async def send_message(self, message: Any) -> None:
        self._sending()
        self.sent.append(message)


class ContendedLock:
    """A lock that says when a second thread waits for it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.waited_for = threading.Event()

    def __enter__(self) -> None:
        if not self._lock.acquire(blocking=False):
            self.waited_for.set()
            self._lock.acquire()

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self._lock.release()


def allocate_on_a_thread(
    service: DevicePluginService, stream: AllocateStream
) -> tuple[threading.Thread, list[BaseException]]:
    """Allocate on a loop of its own (the I/O loop's stand-in); what it raised, once joined."""
    raised: list[BaseException] = []

    def run() -> None:
        try:
            asyncio.run(service.Allocate(stream))  # type: ignore[arg-type]
        except BaseException as error:  # handed to the test
            raised.append(error)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, raised


def test_an_allocate_arriving_during_a_decision_is_checked_against_the_views_it_publishes() -> None:
    handed_out = HandedOut()
    handed_out.decision = ContendedLock()  # type: ignore[assignment]
    views = Latest(view(0, 1))
    service = DevicePluginService(views, Metrics(), handed_out)
    stream = AllocateStream("GPU-1")
    with handed_out.decision:  # the supervisor deciding that GPU 1 moves
        thread, raised = allocate_on_a_thread(service, stream)
        assert handed_out.decision.waited_for.wait(5)  # type: ignore[attr-defined]
        views.publish(view(0))
    thread.join(5)
    assert not thread.is_alive()
    (error,) = raised
    assert isinstance(error, GRPCError)
    assert error.status == Status.INVALID_ARGUMENT
    assert "unknown device IDs for gpuconf.dev/x: GPU-1" in str(error.message)
    assert stream.sent == []
    assert handed_out.held() == {}


def test_an_allocate_s_ids_count_from_when_its_answer_went_out() -> None:
    """A poll that began while the answer was on its way read the kubelet's record from before
    it: it frees nothing, even naming the ID (an earlier pod's checkpoint entry, say)."""
    clock = Clock(100.0)
    handed_out = HandedOut(clock)
    service = DevicePluginService(Latest(view(0, 1)), Metrics(), handed_out)
    stream = AllocateStream("GPU-1", sending=lambda: setattr(clock, "now", 101.0))
    thread, raised = allocate_on_a_thread(service, stream)
    thread.join(5)
    assert raised == []
    assert len(stream.sent) == 1
    handed_out.seen_by_poll(100.5, {WHOLE: frozenset({"GPU-1"})})
    assert handed_out.held() == {WHOLE: frozenset({"GPU-1"})}
    handed_out.seen_by_poll(101.5, {WHOLE: frozenset({"GPU-1"})})
    assert handed_out.held() == {}


def test_an_allocate_refused_for_a_draining_id_records_nothing() -> None:
    handed_out = HandedOut()
    draining = replace(view(0, 1), healthy_ids=frozenset({"GPU-0"}))
    service = DevicePluginService(Latest(draining), Metrics(), handed_out)
    thread, raised = allocate_on_a_thread(service, AllocateStream("GPU-1"))
    thread.join(5)
    (error,) = raised
    assert isinstance(error, GRPCError)
    assert error.status == Status.FAILED_PRECONDITION
    assert handed_out.held() == {}


def test_a_poll_begun_before_the_answer_was_sent_frees_nothing() -> None:
    handed_out = HandedOut(Clock(100.0))
    grant = handed_out.record(WHOLE, ["GPU-1"])
    handed_out.seen_by_poll(1e9, {WHOLE: frozenset({"GPU-1"})})  # not sent yet
    assert handed_out.held() == {WHOLE: frozenset({"GPU-1"})}
    handed_out.sent(grant)
    handed_out.seen_by_poll(99.9 + RECORD_WAIT_SECONDS, {})  # stored late, begun in time
    handed_out.seen_by_poll(99.9, {WHOLE: frozenset({"GPU-1"})})
    assert handed_out.held() == {WHOLE: frozenset({"GPU-1"})}
    handed_out.seen_by_poll(100.1, {WHOLE: frozenset({"GPU-1"})})
    assert handed_out.held() == {}


def test_a_grant_for_several_containers_is_let_go_of_as_polls_name_its_ids() -> None:
    """The kubelet records each container on its own (manager.go Allocate, one call per
    container); an ID named once is the poll's to hold from then on."""
    handed_out = HandedOut(Clock(100.0))
    handed_out.sent(handed_out.record(WHOLE, ["GPU-0", "GPU-1"]))
    handed_out.seen_by_poll(101.0, {WHOLE: frozenset({"GPU-0"}), OTHER: frozenset({"GPU-1"})})
    assert handed_out.held() == {WHOLE: frozenset({"GPU-1"})}
    handed_out.seen_by_poll(102.0, {})
    assert handed_out.held() == {WHOLE: frozenset({"GPU-1"})}
    handed_out.seen_by_poll(103.0, {WHOLE: frozenset({"GPU-1"})})
    assert handed_out.held() == {}


def test_an_id_no_poll_names_is_held_until_a_poll_begun_the_record_wait_after_the_answer() -> None:
    """The kubelet never recorded it (an answer lost on the way, a pod gone before any poll saw
    it): only time frees it, and no less than a checkpoint write can take."""
    handed_out = HandedOut(Clock(100.0))
    handed_out.sent(handed_out.record(WHOLE, ["GPU-1"]))
    handed_out.seen_by_poll(100.0 + RECORD_WAIT_SECONDS - 0.01, {})
    assert handed_out.held() == {WHOLE: frozenset({"GPU-1"})}
    handed_out.seen_by_poll(100.0 + RECORD_WAIT_SECONDS, {})
    assert handed_out.held() == {}
