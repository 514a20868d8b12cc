"""One run reports shape errors and rule errors together: the items a shape error touches are set
aside, the rules check the rest where it is written, and nothing only the setting aside caused
is reported."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from builders import CATALOG, DECLARED_H20, check, cluster, errors, pool, run_cli
from pydantic import ValidationError

from gpuconf.api.cluster import Cluster
from gpuconf.api.shape_errors import diagnostics_from
from gpuconf.api.validators import validate_cluster
from gpuconf.compiler.validate import validate
from gpuconf.diagnostics import format_path
from gpuconf.formats.located_yaml import Located, parse_text
from gpuconf.formats.yaml_writer import dump

TWO_CLASSES = """\
apiVersion: gpuconf.dev/v1alpha2
kind: Cluster
metadata:
  name: t
spec:
  kubernetes:
    version: "1.34"
  nodePools:
    - name: t4
      runtime: {engine: docker}
      gpus: {model: Tesla-T4, count: 2}
      size: 2
    - name: l4
      runtime: {engine: containerd}
      gpus: {model: L4, count: 1}
      size: 2
  resourceClasses:
    - name: t4-shared
      select: {model: Tesla-T4}
      sharing: {strategy: time-slicing, replicas: "two"}
    - name: l4-whole
      select: {model: L4}
  quotas:
    - namespace: research
      classes: {l4-whole: 3}
"""


def _said(document: dict[str, Any]) -> list[tuple[str, str]]:
    outcome = check(document)
    assert isinstance(outcome, list), "expected diagnostics, the cluster validated"
    return [(format_path(d.path), d.message) for d in outcome]


def _t4_and_l4(classes: list[dict[str, Any]], **spec: Any) -> dict[str, Any]:
    return cluster([pool("t4", "Tesla-T4", 2), pool("l4", "L4", 1)], classes, **spec)


def test_a_shape_error_and_a_rule_error_are_reported_in_one_run_where_they_are_written(
    tmp_path: Path,
) -> None:
    (tmp_path / "t.yaml").write_text(TWO_CLASSES)
    result = run_cli("validate", "t.yaml", cwd=tmp_path)
    assert result.code == 1
    assert result.err.splitlines() == [
        "t.yaml:20:41: spec.resourceClasses[0].sharing.replicas: should be an integer, not 'two'",
        "t.yaml:21:7: spec.resourceClasses[1].name: quotas for class 'l4-whole' add up to 3, more "
        "than its capacity of 2 (2 devices × 1 replicas) (hint: lower the quotas, add GPUs, or "
        "set overcommit: true on the class if that is intended)",
        "2 errors, 0 warnings",
    ]


def test_a_combined_report_still_exits_1_and_writes_nothing(tmp_path: Path) -> None:
    (tmp_path / "t.yaml").write_text(TWO_CLASSES)
    result = run_cli("render", "t.yaml", "-o", str(tmp_path / "out"), cwd=tmp_path)
    assert result.code == 1
    assert "should be an integer" in result.err
    assert "more than its capacity" in result.err
    assert not (tmp_path / "out").exists()


def test_an_unknown_key_and_a_rule_error_are_reported_together() -> None:
    document = _t4_and_l4(
        [
            {"name": "t4-whole", "descripton": "Whole T4s", "select": {"model": "Tesla-T4"}},
            {"name": "l4-whole", "select": {"model": "L4"}},
        ],
        quotas=[{"namespace": "research", "classes": {"t4-whole": 1, "l4-whole": 2}}],
    )
    assert _said(document) == [
        ("spec.resourceClasses[0].descripton", "unknown key 'descripton'"),
        (
            "spec.resourceClasses[1].name",
            "quotas for class 'l4-whole' add up to 2, more than its capacity of 1 "
            "(1 devices × 1 replicas)",
        ),
    ]


def test_a_class_with_a_typo_is_set_aside_whole_so_a_default_misleads_no_rule() -> None:
    # Dropping only the typo would leave overcommit false: "quotas add up to 4, more than 2".
    document = _t4_and_l4(
        [{"name": "t4-whole", "overcomit": True, "select": {"model": "Tesla-T4"}}],
        quotas=[{"namespace": "research", "classes": {"t4-whole": 4}}],
    )
    assert _said(document) == [("spec.resourceClasses[0].overcomit", "unknown key 'overcomit'")]


def test_a_quota_naming_a_set_aside_class_does_not_call_it_unknown() -> None:
    document = _t4_and_l4(
        [{"name": "t4-shared", "select": {"model": "Tesla-T4"}, "overcommit": "maybe"}],
        quotas=[{"namespace": "research", "classes": {"t4-shared": 1}}],
    )
    assert [path for path, _ in _said(document)] == ["spec.resourceClasses[0].overcommit"]


def test_a_quota_naming_a_class_that_exists_nowhere_is_still_unknown() -> None:
    document = _t4_and_l4(
        [{"name": "t4-shared", "select": {"model": "Tesla-T4"}, "overcommit": "maybe"}],
        quotas=[{"namespace": "research", "classes": {"t4-sharde": 1}}],
    )
    assert ("spec.quotas[0].classes.t4-sharde", "no class is named 't4-sharde'") in _said(document)


def test_gpus_no_kept_class_selects_are_not_called_unclassified_when_a_class_was_set_aside() -> (
    None
):
    document = _t4_and_l4(
        [
            {"name": "t4-shared", "select": {"model": "Tesla-T4"}, "overcommit": "maybe"},
            {"name": "l4-whole", "select": {"model": "L4"}},
        ]
    )
    outcome = check(document)
    assert isinstance(outcome, list)
    assert [format_path(d.path) for d in outcome] == ["spec.resourceClasses[0].overcommit"]


def test_rule_warnings_are_reported_beside_a_shape_error() -> None:
    document = _t4_and_l4(
        [{"name": "t4-shared", "select": {"model": "Tesla-T4"}, "overcommit": "maybe"}],
        node={"deviceListStrategy": "envvar"},
    )
    outcome = check(document)
    assert isinstance(outcome, list)
    assert [(format_path(d.path), d.is_error) for d in outcome] == [
        ("spec.resourceClasses[0].overcommit", True),
        ("spec.node.deviceListStrategy", False),
    ]


def test_a_broken_pool_still_gets_the_document_rules_over_the_other_pools() -> None:
    document = cluster(
        [pool("t4", "Tesla-T4", "two"), pool("l4", "L4", 1), pool("l4", "L4", 1)],
        [{"name": "l4-whole", "select": {"model": "L4"}}],
    )
    found = errors(document)
    assert [(format_path(d.path), d.message) for d in found] == [
        ("spec.nodePools[0].gpus.count", "should be an integer, not 'two'"),
        ("spec.nodePools[2].name", "pool name 'l4' is already used"),
    ]
    first_l4 = _located(document).position(("spec", "nodePools", 1, "name"))[0]
    assert found[1].hint == f"first used on line {first_l4}; names must be unique"


def test_a_broken_pool_leaves_no_consequence_in_classes_or_quotas() -> None:
    document = cluster(
        [pool("t4", "Tesla-T4", "two"), pool("l4", "L4", 1)],
        [
            {"name": "t4-whole", "select": {"model": "Tesla-T4"}},
            {"name": "t4-picked", "select": {"pools": ["t4"]}},
            {"name": "l4-whole", "select": {"model": "L4"}},
        ],
        quotas=[{"namespace": "research", "classes": {"t4-whole": 2, "l4-whole": 1}}],
    )
    assert _said(document) == [("spec.nodePools[0].gpus.count", "should be an integer, not 'two'")]


def test_a_pool_using_a_set_aside_gpu_model_is_not_told_the_model_is_unknown() -> None:
    broken = {**DECLARED_H20, "memoryMiB": "lots"}
    document = cluster(
        [pool("h20", "H20", 8), pool("t4", "Tesla-T5", 1)],
        [],
        gpuModels=[broken],
    )
    assert [path for path, _ in _said(document)] == [
        "spec.gpuModels[0].memoryMiB",
        "spec.nodePools[1].gpus.model",
    ]


def test_a_declared_model_twice_names_the_first_declaration_as_written() -> None:
    document = cluster(
        [pool("h20", "H20", 8)],
        [{"name": "h20-whole", "select": {"model": "H20"}}],
        gpuModels=[
            {**DECLARED_H20, "name": "B200", "memoryMiB": "lots"},
            DECLARED_H20,
            DECLARED_H20,
        ],
    )
    (twice,) = [d for d in errors(document) if "declared twice" in d.message]
    assert format_path(twice.path) == "spec.gpuModels[2].name"
    assert twice.hint == "spec.gpuModels[1] declares it first; keep one"


def test_an_error_outside_the_lists_gives_exactly_the_shape_errors_as_before() -> None:
    document = _t4_and_l4(
        [{"name": "t4-shared", "select": {"model": "Tesla-T4"}}],
        quotas=[{"namespace": "research", "classes": {"t4-shared": 99, "nothing": 1}}],
    )
    document["metadata"]["name"] = "Not_A_Name"
    located = _located(document)
    with pytest.raises(ValidationError) as shape:
        validate_cluster(located.data)
    assert validate(located, CATALOG) == diagnostics_from(shape.value, located, Cluster)
    assert [format_path(d.path) for d in diagnostics_from(shape.value, located, Cluster)] == [
        "metadata.name"
    ]


def test_setting_aside_the_only_pool_gives_the_shape_errors_alone() -> None:
    document = cluster(
        [pool("t4", "Tesla-T4", "two")],
        [{"name": "t4-whole", "select": {"model": "Tesla-T4"}}],
        quotas=[{"namespace": "kube-system", "classes": {"t4-whole": 1}}],
    )
    assert _said(document) == [("spec.nodePools[0].gpus.count", "should be an integer, not 'two'")]


def test_an_item_without_a_readable_name_sets_nothing_aside() -> None:
    document = _t4_and_l4(
        [
            {"name": 7, "select": {"model": "Tesla-T4"}},
            {"name": "l4-whole", "select": {"model": "L4"}},
        ],
        quotas=[{"namespace": "research", "classes": {"l4-whole": 3}}],
    )
    assert [path for path, _ in _said(document)] == ["spec.resourceClasses[0].name"]


def _located(document: dict[str, Any]) -> Located:
    return parse_text(dump(document), "cluster.yaml")


@pytest.mark.parametrize(
    "queue",
    [
        {"name": "research"},
        {"name": "research", "borrowingLimit": {"l4-whole": 1}, "lendingLimit": {"l4-whole": 1}},
    ],
    ids=["its-only-quota", "the-quota-of-its-limited-class"],
)
def test_a_kueue_queue_whose_quota_was_set_aside_is_not_told_it_has_none(
    queue: dict[str, Any],
) -> None:
    document = _t4_and_l4(
        [
            {"name": "t4-whole", "select": {"model": "Tesla-T4"}},
            {"name": "l4-whole", "select": {"model": "L4"}},
        ],
        quotas=[
            {"namespace": "research", "classes": {"l4-whole": "one"}},
            {"namespace": "other", "classes": {"t4-whole": 1}},
        ],
        kueue={"version": "v0.19.2", "clusterQueues": [queue]},
    )
    assert _said(document) == [
        ("spec.quotas[0].classes.l4-whole", "should be an integer, not 'one'")
    ]
