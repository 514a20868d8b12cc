"""The runtime publishes its labels when they change, once, and retries a failed publish later."""

from __future__ import annotations

import time
from collections.abc import Mapping
from pathlib import Path

import pytest
from builders import gpu_uuid, node_config, read_node_config, resource

from gpuconf.node import in_cluster, label_watch, node_labels
from gpuconf.node.label_watch import LabelWatch
from gpuconf.node.node_labels import Published
from gpuconf.node.nvml.api import GpuInfo


class Driver:
    def driver_version(self) -> str:
        return "550.54.15"

    def cuda_driver_version(self) -> tuple[int, int] | None:
        return (12, 4)


def _gpus(count: int) -> list[GpuInfo]:
    return [GpuInfo(i, gpu_uuid(i), "Tesla T4", 15360, f"0000:{i:02x}:00.0") for i in range(count)]


class Recorder:
    def __init__(self) -> None:
        self.calls: list[dict[str, str]] = []
        self.outcome = Published.YES

    @property
    def ok(self) -> bool:
        return self.outcome is not Published.FAILED

    @ok.setter
    def ok(self, value: bool) -> None:
        self.outcome = Published.YES if value else Published.FAILED

    def publish(self, node: str, wanted: Mapping[str, str]) -> Published:
        self.calls.append(dict(wanted))
        return self.outcome


@pytest.fixture
def recorder(monkeypatch: pytest.MonkeyPatch) -> Recorder:
    recorder = Recorder()
    monkeypatch.setattr(node_labels, "publish_labels", recorder.publish)
    return recorder


def _settle(watch: LabelWatch) -> None:
    deadline = time.monotonic() + 5
    while watch._busy.locked() and time.monotonic() < deadline:
        time.sleep(0.01)


def test_labels_are_published_on_change_only_and_retried_after_a_failure(
    recorder: Recorder, tmp_path: Path
) -> None:
    published = recorder.calls
    config = read_node_config(
        node_config([resource("t4", [0, 1])], gpus=2, labels={"owner": "gpuconf"})
    )
    watch = LabelWatch("node-a", Driver(), tmp_path / "product_name")
    watch.update(config, _gpus(2))
    _settle(watch)
    watch.update(config, _gpus(2))
    _settle(watch)
    assert len(published) == 1
    assert published[0]["nvidia.com/gpu.count"] == "2"

    recorder.ok = False
    watch.update(config, _gpus(1))  # a GPU fell off the bus
    _settle(watch)
    assert published[-1]["nvidia.com/gpu.count"] == "1"
    watch.tick(time.monotonic())
    _settle(watch)
    assert len(published) == 2, "no retry before the retry interval"
    recorder.ok = True
    watch.tick(time.monotonic() + label_watch.RETRY_SECONDS + 1)
    _settle(watch)
    assert len(published) == 3
    watch.tick(time.monotonic() + 2 * label_watch.RETRY_SECONDS + 2)
    _settle(watch)
    assert len(published) == 3, "published: nothing more to do"


def _assert_logged_not_in_a_pod(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """A label watch's first publish logs that nothing was published, and why."""
    config = read_node_config(node_config([resource("t4", [0, 1])], gpus=2))
    watch = LabelWatch("node-a", Driver(), tmp_path / "product_name")
    with caplog.at_level("INFO"):
        watch.update(config, _gpus(2))
        _settle(watch)
    messages = [record.getMessage() for record in caplog.records]
    assert "node labels published" not in messages
    assert "node labels not published: not in a pod (`gpuconf node labels` prints them)" in messages


def test_away_from_a_cluster_the_log_does_not_claim_the_labels_were_published(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # `gpuconf node run --nvml fake:FILE` on a laptop: there is no Node to label.
    monkeypatch.delenv(in_cluster.HOST_ENV, raising=False)
    _assert_logged_not_in_a_pod(tmp_path, caplog)


def test_the_log_says_what_the_publish_decided_not_a_second_look_at_the_environment(
    recorder: Recorder,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    monkeypatch.setenv(in_cluster.HOST_ENV, "10.0.0.1")  # changed after publish looked
    recorder.outcome = Published.NOT_IN_A_POD
    _assert_logged_not_in_a_pod(tmp_path, caplog)
