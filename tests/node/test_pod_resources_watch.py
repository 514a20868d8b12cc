"""What the runtime counts as held: PodResources List plus the kubelet's device checkpoint
(gpuconf/node/kubelet/pod_resources_watch.py), polled here without its thread."""

from __future__ import annotations

import json
import logging
import threading
from pathlib import Path

import pytest
from builders import gpu_uuid

from gpuconf.node.kubelet import pod_resources_watch
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


def watch_of(tmp_path: Path) -> tuple[PodResourcesWatch, Metrics]:
    metrics = Metrics()
    watch = PodResourcesWatch(
        tmp_path / "pod-resources.sock",
        tmp_path / "kubelet_internal_checkpoint",
        metrics,
        threading.Event(),
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
    assert watch.awaits_checkpoint({(WHOLE, gpu_uuid(1))})
    assert not watch.awaits_checkpoint({(WHOLE, gpu_uuid(0))})  # List explains it


def test_an_unreadable_checkpoint_leaves_held_to_list_and_awaits_no_write(
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
