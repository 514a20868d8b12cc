"""The health state machine: XID classes, quiet-period recovery, resets, vanished GPUs, NVML errors."""

from __future__ import annotations

from dataclasses import replace

from gpuconf.gpus.xid import APPLICATION_XIDS, RESET_XIDS, XidClass, classify
from gpuconf.node.health import HealthPolicy, HealthTracker
from gpuconf.node.nvml.api import GpuInfo, MigDevice, XidEvent

GPU0 = GpuInfo(0, "GPU-0", "x", 1, "0000:01:00.0")
GPU1 = GpuInfo(
    1, "GPU-1", "x", 1, "0000:02:00.0", mig_enabled=True,
    mig_devices=(MigDevice("MIG-a", "1g.5gb", 1, 0), MigDevice("MIG-b", "1g.5gb", 2, 0)),
)  # fmt: skip
WORKLOAD_XID = 94
"""Contained memory error: the catalog says restart the application."""


def tracker(recover_after: float = 10.0) -> HealthTracker:
    policy = HealthPolicy(frozenset({13, 43}), recover_after, frozenset({48, 79, 119}))
    health = HealthTracker(policy)
    health.observe_inventory([GPU0, GPU1])
    return health


def test_the_catalog_classes_do_not_overlap_and_109_needs_a_reset() -> None:
    assert not set(APPLICATION_XIDS) & set(RESET_XIDS)
    assert classify(109, APPLICATION_XIDS, RESET_XIDS) is XidClass.RESET
    assert classify(13, APPLICATION_XIDS, RESET_XIDS) is XidClass.APPLICATION
    assert classify(WORKLOAD_XID, APPLICATION_XIDS, RESET_XIDS) is XidClass.WORKLOAD


def test_ignored_xids_change_nothing() -> None:
    health = tracker()
    verdict = health.record(XidEvent("GPU-0", 13), now=0)
    assert (verdict.xid_class, verdict.unit) == (XidClass.APPLICATION, None)
    assert health.is_healthy("GPU-0", None, now=1)


def test_a_workload_xid_quarantines_the_gpu_until_a_quiet_period_passes() -> None:
    health = tracker(recover_after=10)
    assert health.record(XidEvent("GPU-0", WORKLOAD_XID), now=100).unit == "GPU-0"
    assert not health.is_healthy("GPU-0", None, now=105)
    health.record(XidEvent("GPU-0", WORKLOAD_XID), now=108)  # a new XID restarts the quiet period
    assert not health.is_healthy("GPU-0", None, now=115)
    assert health.is_healthy("GPU-0", None, now=118)


def test_recover_after_zero_means_never() -> None:
    health = tracker(recover_after=0)
    health.record(XidEvent("GPU-0", WORKLOAD_XID), now=0)
    assert not health.is_healthy("GPU-0", None, now=1e9)


def test_a_reset_xid_outlasts_any_quiet_period_until_the_gpu_is_re_enumerated() -> None:
    health = tracker(recover_after=1)
    verdict = health.record(XidEvent("GPU-0", 48), now=0)
    assert (verdict.xid_class, verdict.unit) == (XidClass.RESET, "GPU-0")
    assert not health.is_healthy("GPU-0", None, now=1e9)
    assert health.awaiting_reset() == {"GPU-0"}
    health.observe_inventory([GPU0, GPU1])  # still there, nothing changed: no reset seen
    assert not health.is_healthy("GPU-0", None, now=1e9)
    health.observe_inventory([GPU1])
    health.observe_inventory([GPU0, GPU1])
    assert health.is_healthy("GPU-0", None, now=1e9)
    assert health.awaiting_reset() == frozenset()


def test_a_reset_xid_clears_when_the_pending_reset_nvml_reported_is_done() -> None:
    health = tracker()
    health.observe_inventory([replace(GPU0, reset_pending=True), GPU1])
    health.record(XidEvent("GPU-0", 119), now=0)
    health.observe_inventory([replace(GPU0, reset_pending=True), GPU1])
    assert not health.is_healthy("GPU-0", None, now=1)
    health.observe_inventory([GPU0, GPU1])
    assert health.is_healthy("GPU-0", None, now=2)


def test_a_reset_xid_on_one_gpu_instance_takes_down_the_whole_gpu() -> None:
    health = tracker()
    assert health.record(XidEvent("GPU-1", 48, gpu_instance_id=2), now=0).unit == "GPU-1"
    assert not health.is_healthy("GPU-1", "MIG-a", now=1)
    assert not health.is_healthy("GPU-1", "MIG-b", now=1)


def test_a_gpu_level_xid_takes_down_its_mig_devices_too() -> None:
    health = tracker()
    health.record(XidEvent("GPU-1", WORKLOAD_XID), now=0)
    assert not health.is_healthy("GPU-1", "MIG-a", now=1)
    assert not health.is_healthy("GPU-1", "MIG-b", now=1)


def test_a_workload_xid_for_one_gpu_instance_marks_only_that_mig_device() -> None:
    health = tracker()
    assert health.record(XidEvent("GPU-1", WORKLOAD_XID, gpu_instance_id=2), now=0).unit == "MIG-b"
    assert health.is_healthy("GPU-1", "MIG-a", now=1)
    assert not health.is_healthy("GPU-1", "MIG-b", now=1)
    health.record(XidEvent("MIG-a", WORKLOAD_XID), now=2)
    assert not health.is_healthy("GPU-1", "MIG-a", now=3)


def test_a_vanished_gpu_is_unhealthy_until_seen_again_and_comes_back_clean() -> None:
    health = tracker(recover_after=0)
    health.record(XidEvent("GPU-0", 79), now=0)
    health.observe_inventory([GPU1])
    assert not health.is_healthy("GPU-0", None, now=1)
    health.observe_inventory([GPU0, GPU1])
    assert health.is_healthy("GPU-0", None, now=2)


def test_nvml_failures_make_everything_unhealthy_while_they_last() -> None:
    health = tracker()
    health.set_source_failing("events", True)
    assert not health.is_healthy("GPU-0", None, now=0)
    health.set_source_failing("events", False)
    assert health.is_healthy("GPU-0", None, now=0)


def test_gpus_restored_as_awaiting_a_reset_stay_withheld_at_the_first_look() -> None:
    health = HealthTracker(HealthPolicy(frozenset(), 10, frozenset({48})))
    health.restore_awaiting_reset(frozenset({"GPU-0"}))
    health.observe_inventory([GPU0, GPU1])
    assert not health.is_healthy("GPU-0", None, now=1e9)
    assert health.is_healthy("GPU-1", None, now=0)
    health.observe_inventory([GPU1])
    health.observe_inventory([GPU0, GPU1])
    assert health.is_healthy("GPU-0", None, now=0)
