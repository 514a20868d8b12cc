"""Selectors DRA cannot express, and CEL that would select other GPUs, stop compilation with a located error."""

from __future__ import annotations

from typing import Any

import pytest
from builders import CATALOG, errors, heterogeneous, pool, valid

from gpuconf.compiler.dra.cel_proof import CelError, selected_devices
from gpuconf.compiler.dra.devices import DraDevice, cluster_devices
from gpuconf.compiler.dra.selector import CelSelector, cel_selector
from gpuconf.compiler.rules import dra_selectors
from gpuconf.diagnostics import format_path
from gpuconf.gpus.dra_attributes import attribute_set


def _two_l40s_pools(classes: list[dict[str, Any]]) -> dict[str, Any]:
    document = heterogeneous(classes)
    document["spec"]["nodePools"].append(pool("l40s-b", "L40S", 4, size=1))
    return document


def test_a_pool_told_apart_by_its_model_alone_is_expressible() -> None:
    validated = valid(heterogeneous([{"name": "l40s", "select": {"pools": ["l40s"]}}]))
    expression = cel_selector(validated.classes[0], CATALOG, attribute_set("v25.12.0")).expression
    assert expression.endswith("device.attributes['gpu.nvidia.com'].productName == 'NVIDIA L40S'")


def test_pool_with_undeclared_nodes_is_reported_on_select_pools() -> None:
    found = errors(_two_l40s_pools([{"name": "l40s", "select": {"pools": ["l40s"]}}]))
    assert [format_path(d.path) for d in found] == ["spec.resourceClasses[0].select.pools"]
    assert "DRA cannot express select.pools" in found[0].message
    assert "no node or pool attribute" in found[0].message
    assert "pool 'l40s'" in found[0].message
    assert "by model alone it would also select pool 'l40s-b' GPU 0 (L40S)" in found[0].message
    assert "uuid" in found[0].hint
    assert found[0].line > 1


def test_nodes_without_uuids_are_reported_on_select_nodes() -> None:
    cluster = heterogeneous([{"name": "h", "select": {"pools": ["h100"], "nodes": ["h100-a"]}}])
    del cluster["spec"]["nodePools"][0]["nodes"][0]["gpus"][3]["uuid"]
    found = errors(cluster)
    assert sorted(format_path(d.path) for d in found) == [
        "spec.resourceClasses[0].select.nodes",
        "spec.resourceClasses[0].select.pools",
    ]
    assert all("node 'h100-a'" in d.message for d in found)


def test_same_selectors_compile_in_device_plugin_mode() -> None:
    cluster = heterogeneous([{"name": "l40s", "select": {"pools": ["l40s"]}}])
    cluster["spec"]["allocation"] = "device-plugin"
    valid(cluster)


def test_checker_reports_a_class_whose_cel_disagrees(monkeypatch: pytest.MonkeyPatch) -> None:
    # A deliberately wrong translation: > instead of >= misses GPUs with exactly 46068 MiB.
    def wrong(resolved: object, catalog: object, names: object) -> CelSelector:
        return CelSelector(
            "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'gpu'"
            " && device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('46068Mi')) > 0"
        )

    monkeypatch.setattr(dra_selectors, "cel_selector", wrong)
    found = errors(heterogeneous([{"name": "roomy", "select": {"memoryAtLeast": "46068"}}]))
    assert len(found) == 1
    assert format_path(found[0].path) == "spec.resourceClasses[0].select"
    assert "class 'roomy' would not select the class's GPUs" in found[0].message
    assert "misses pool 'l40s' GPU 0 (L40S)" in found[0].message


def test_checker_reports_gpus_a_wrong_cel_adds(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(
        dra_selectors,
        "cel_selector",
        lambda resolved, catalog, names: CelSelector("device.driver == 'gpu.nvidia.com'"),
    )
    found = errors(heterogeneous([{"name": "l4", "select": {"model": "L4"}}]))
    assert "also selects node 'h100-a' GPU 0 (H100-SXM5-80GB)" in found[0].message
    assert found[0].message.endswith(" more")


def test_syntax_error_never_reaches_the_cluster(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(
        dra_selectors,
        "cel_selector",
        lambda resolved, catalog, names: CelSelector("device.driver == "),
    )
    found = errors(heterogeneous([{"name": "l4", "select": {"model": "L4"}}]))
    assert "class 'l4': the CEL selector does not parse" in found[0].message


def _l4_cluster_devices() -> list[DraDevice]:
    validated = valid(heterogeneous([{"name": "l4", "select": {"model": "L4"}}]))
    return cluster_devices(validated.cluster, validated.inventory).devices


def test_runtime_error_on_any_device_is_a_failure() -> None:
    # profile exists only on MIG devices: unguarded, the scheduler would fail the claim.
    devices = _l4_cluster_devices()
    outcome = selected_devices("device.attributes['gpu.nvidia.com'].profile == '1g.10gb'", devices)
    assert isinstance(outcome, CelError)
    assert "fails on" in outcome.message


def test_non_bool_result_is_a_failure() -> None:
    devices = _l4_cluster_devices()
    outcome = selected_devices("device.attributes['gpu.nvidia.com'].productName", devices)
    assert isinstance(outcome, CelError)
    assert "not a bool" in outcome.message
