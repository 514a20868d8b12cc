"""Every Kueue limit a cluster file reaches is refused by validate at the file's own key, and is
one render's check of the rendered objects (CRD schema, CEL rules, webhook refusals) refuses too:
validate of a Kueue cluster renders nothing, so the rules must say all that check would. A cluster
just inside each limit validates, and its Kueue objects render and pass that check."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import pytest
from builders import check, cluster, cluster_file, pool

import gpuconf.compiler.validate as validate_module
from gpuconf.compiler.kueue_check import kueue_problems
from gpuconf.compiler.plan.kueue import kueue_objects
from gpuconf.compiler.render import render
from gpuconf.compiler.rules import INVENTORY_RULES, kueue
from gpuconf.compiler.templating.engine import Templates
from gpuconf.compiler.validate import Validated
from gpuconf.diagnostics import Diagnostic, format_path

MODEL = "L4"


def _one_queue(
    pools: list[dict[str, Any]], classes: list[dict[str, Any]], version: str = "v0.19.2"
) -> dict[str, Any]:
    """One namespace with a quota of 1 of every class: one ClusterQueue counts them all."""
    return cluster(
        pools,
        classes,
        kueue={"version": version},
        quotas=[{"namespace": "team", "classes": {c["name"]: 1 for c in classes}}],
    )


def _labels(count: int, **fields: Any) -> dict[str, Any]:
    selector = {f"example.com/l{i}": "x" for i in range(count)}
    return _one_queue(
        [pool("p", MODEL, 1, nodeSelector=selector, **fields)],
        [{"name": "c", "select": {"model": MODEL}}],
    )


def _tolerations(tolerations: list[dict[str, Any]]) -> dict[str, Any]:
    return _one_queue(
        [pool("p", MODEL, 1, tolerations=tolerations)], [{"name": "c", "select": {"model": MODEL}}]
    )


def _tolerating(count: int) -> dict[str, Any]:
    return _tolerations(
        [
            {"key": f"example.com/t{i}", "operator": "Exists", "effect": "NoSchedule"}
            for i in range(count)
        ]
    )


def _same_taint(effect: str) -> dict[str, Any]:
    """Two tolerations naming one taint key with different values: with one effect, the flavor
    carries two taints of one key and effect."""
    taint = {"key": "example.com/gpu", "operator": "Equal"}
    return _tolerations(
        [{**taint, "value": "a", "effect": "NoSchedule"}, {**taint, "value": "b", "effect": effect}]
    )


def _disjoint(groups: int, pools_each: int = 1, version: str = "v0.19.2") -> dict[str, Any]:
    """`groups` classes, each over its own `pools_each` pools: a resourceGroup per class."""
    pools = [pool(f"p{g}-{i}", MODEL, 1) for g in range(groups) for i in range(pools_each)]
    classes = [
        {"name": f"c{g}", "select": {"pools": [f"p{g}-{i}" for i in range(pools_each)]}}
        for g in range(groups)
    ]
    return _one_queue(pools, classes, version)


def _sharing_pools(
    classes: int, pools: int = 1, version: str = "v0.19.2", groups: int = 1
) -> dict[str, Any]:
    """`groups` resourceGroups of `classes` classes each: every class of a group has one GPU
    index of each of the group's `pools` pools, so they share every pool."""
    return _one_queue(
        [pool(f"p{g}-{i}", MODEL, classes) for g in range(groups) for i in range(pools)],
        [
            {
                "name": f"c{g}-{k}",
                "select": {"pools": [f"p{g}-{i}" for i in range(pools)], "indices": [k]},
            }
            for g in range(groups)
            for k in range(classes)
        ],
        version,
    )


def _bridged(classes: int) -> dict[str, Any]:
    """`classes` classes in one resourceGroup over two pools: c0 has GPU 0 of both, the others
    one GPU of either."""
    last = classes - 1
    return _one_queue(
        [pool("pa", MODEL, last), pool("pb", MODEL, 2)],
        [
            {"name": "c0", "select": {"pools": ["pa", "pb"], "indices": [0]}},
            *(
                {"name": f"c{k}", "select": {"pools": ["pa"], "indices": [k]}}
                for k in range(1, last)
            ),
            {"name": f"c{last}", "select": {"pools": ["pb"], "indices": [1]}},
        ],
    )


def _preemption(reclaim: str) -> dict[str, Any]:
    document = _disjoint(1)
    document["spec"]["kueue"]["clusterQueues"] = [
        {
            "name": "team",
            "preemption": {
                "reclaimWithinCohort": reclaim,
                "borrowWithinCohort": {"policy": "LowerPriority"},
            },
        }
    ]
    return document


class Limit(NamedTuple):
    build: Callable[[bool], dict[str, Any]]
    """The cluster just past the limit (True) or just inside it (False)."""
    path: str
    """Where validate refuses the one past it."""
    refusal: str
    """What render's check of the rendered objects says of it."""


LIMITS = {
    # apis/kueue/*/resourceflavor_types.go: nodeLabels MaxProperties=8.
    "flavor-node-labels": Limit(
        lambda past: _labels(9 if past else 8),
        "spec.nodePools[0].nodeSelector",
        "ResourceFlavor p: spec.nodeLabels: ",
    ),
    "flavor-node-labels-with-the-architecture": Limit(
        lambda past: _labels(8 if past else 7, architecture="amd64"),
        "spec.nodePools[0].nodeSelector",
        "ResourceFlavor p: spec.nodeLabels: ",
    ),
    # tolerations MaxItems=8 (and nodeTaints MaxItems=8, one per toleration here).
    "flavor-tolerations": Limit(
        lambda past: _tolerating(9 if past else 8),
        "spec.nodePools[0].tolerations[8]",
        "ResourceFlavor p: spec.tolerations: ",
    ),
    # pkg/webhooks/resourceflavor_webhook.go, validateNodeTaints.
    "flavor-taints-unique-by-key-and-effect": Limit(
        lambda past: _same_taint("NoSchedule" if past else "NoExecute"),
        "spec.nodePools[0].tolerations[1]",
        "ResourceFlavor p: spec.nodeTaints.1: taints must be unique by key and effect pair",
    ),
    # apis/kueue/*/clusterqueue_types.go: resourceGroups MaxItems=16.
    "queue-resource-groups": Limit(
        lambda past: _disjoint(17 if past else 16),
        "spec.quotas[0].classes.c16",
        "ClusterQueue team: spec.resourceGroups: ",
    ),
    # coveredResources MaxItems=16 in v0.13 (and each flavor's resources with them).
    "group-covered-resources-v0.13": Limit(
        lambda past: _sharing_pools(17 if past else 16, version="v0.13.10"),
        "spec.quotas[0].classes.c0-16",
        "ClusterQueue team: spec.resourceGroups.0.coveredResources: ",
    ),
    # flavors MaxItems=16 in v0.13.
    "group-flavors-v0.13": Limit(
        lambda past: _disjoint(1, 17 if past else 16, version="v0.13.10"),
        "spec.quotas[0].classes.c0",
        "ClusterQueue team: spec.resourceGroups.0.flavors: ",
    ),
    # coveredResources MaxItems=64 from v0.14 (a pool holds at most 64 GPUs a node: two pools).
    "group-covered-resources": Limit(
        lambda past: _bridged(65 if past else 64),
        "spec.quotas[0].classes.c64",
        "ClusterQueue team: spec.resourceGroups.0.coveredResources: ",
    ),
    # flavors MaxItems=64 from v0.14.
    "group-flavors": Limit(
        lambda past: _disjoint(1, 65 if past else 64),
        "spec.quotas[0].classes.c0",
        "ClusterQueue team: spec.resourceGroups.0.flavors: ",
    ),
    # pkg/webhooks/clusterqueue_webhook.go, validateFlavorResourceCombinations: ≤ 512 a group.
    "group-flavor-resource-pairs": Limit(
        lambda past: _sharing_pools(33 if past else 32, pools=16),
        "spec.quotas[0].classes.c0-0",
        "ClusterQueue team: spec.resourceGroups.0: 528 flavor-resource pairs, more than 512",
    ),
    # validateTotalFlavors: ≤ 256 in all of a queue's groups.
    "queue-total-flavors": Limit(
        lambda past: _disjoint(5 if past else 4, 52 if past else 64),
        "spec.quotas[0].classes.c4",
        "ClusterQueue team: spec.resourceGroups: 260 flavors in all, more than 256",
    ),
    # validateTotalCoveredResources: ≤ 256 in all of a queue's groups.
    "queue-total-covered-resources": Limit(
        lambda past: _sharing_pools(52 if past else 64, groups=5 if past else 4),
        "spec.quotas[0].classes.c4-0",
        "ClusterQueue team: spec.resourceGroups: 260 covered resources in all, more than 256",
    ),
    # The CRD's CEL rule on spec.preemption (and the webhook's validatePreemption).
    "preemption-while-borrowing-needs-reclaim": Limit(
        lambda past: _preemption("Never" if past else "LowerPriority"),
        "spec.kueue.clusterQueues[0].preemption.borrowWithinCohort.policy",
        "ClusterQueue team: spec.preemption: reclaimWithinCohort=Never and borrowWithinCohort.Policy!=Never",
    ),
}


def _render_check(validated: Validated) -> list[str]:
    artifacts = kueue_objects(validated.cluster, validated.classes)[0]
    return [d.message for d in kueue_problems(validated, artifacts, render(artifacts, Templates()))]


@pytest.fixture
def without_kueue_rules(monkeypatch: pytest.MonkeyPatch) -> None:
    """Validate without the rules that hold Kueue's limits, to see what render would say."""
    monkeypatch.setattr(validate_module, "QUEUE_RULES", ())
    monkeypatch.setattr(
        validate_module,
        "INVENTORY_RULES",
        tuple(r for r in INVENTORY_RULES if r is not kueue.check),
    )


def _errors(document: dict[str, Any]) -> list[Diagnostic]:
    outcome = check(document)
    return [] if isinstance(outcome, Validated) else [d for d in outcome if d.is_error]


@pytest.mark.parametrize("name", LIMITS)
def test_validate_refuses_what_render_would_refuse(
    name: str, request: pytest.FixtureRequest
) -> None:
    limit = LIMITS[name]
    document = limit.build(True)
    (refused,) = _errors(document)
    assert format_path(refused.path) == limit.path, refused.as_text()
    request.getfixturevalue("without_kueue_rules")
    validated = check(document)
    assert isinstance(validated, Validated), validated
    found = _render_check(validated)
    assert any(limit.refusal in m for m in found), found


@pytest.mark.parametrize("name", LIMITS)
def test_a_cluster_just_inside_a_kueue_limit_validates_and_its_queues_render_cleanly(
    name: str,
) -> None:
    validated = check(LIMITS[name].build(False))
    assert isinstance(validated, Validated), [d.as_text() for d in validated]
    assert _render_check(validated) == []


def test_a_cluster_within_every_limit_looks_up_no_quota_s_place(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Finding where a refusal points walks every quota: done for each group of each queue, it
    # made validate quadratic in the quotas (1.2 s for 4,000 namespaces).
    from builders import cluster_file

    from gpuconf.compiler.rules import kueue_limits

    def refused(*_: object) -> None:
        raise AssertionError("a quota's place looked up with nothing refused")

    monkeypatch.setattr(kueue_limits, "_quota_of", refused)
    assert isinstance(check(cluster_file("training-fleet")), Validated)


def _lending(team_a: int) -> dict[str, Any]:
    """One class over two pools (4 GPUs each): team-a's quota of 6 fills pool pa and takes 2 of
    pb, team-b's 2 take the rest of pb."""
    return cluster(
        [pool("pa", MODEL, 4), pool("pb", MODEL, 4)],
        [{"name": "c", "select": {"model": MODEL}}],
        kueue={
            "version": "v0.19.2",
            "clusterQueues": [{"name": "team-a", "lendingLimit": {"c": team_a}}],
        },
        quotas=[
            {"namespace": "team-a", "classes": {"c": 6}},
            {"namespace": "team-b", "classes": {"c": 2}},
        ],
    )


def _lending_limits(validated: Validated) -> dict[str, Any]:
    """Flavor -> team-a's lendingLimit there, as rendered (None: none written)."""
    artifacts = kueue_objects(validated.cluster, validated.classes)[0]
    (queue,) = [
        a.values
        for a in artifacts
        if a.kind == "ClusterQueue" and a.values["meta"]["name"] == "team-a"
    ]
    return {
        flavor["name"]: flavor["resources"][0].get("lendingLimit")
        for group in queue["resource_groups"]
        for flavor in group["flavors"]
    }


def _lending_warnings(document: dict[str, Any]) -> tuple[Validated, list[str]]:
    validated = check(document)
    assert isinstance(validated, Validated), [d.as_text() for d in validated]
    texts = [d.as_text() for d in validated.warnings if "lendingLimit" in format_path(d.path)]
    return validated, texts


def test_a_lending_limit_above_the_queues_quota_in_every_pool_warns_at_its_key_and_lends_all() -> (
    None
):
    validated, warned = _lending_warnings(_lending(5))
    assert warned == [
        "cluster.yaml:11:9: spec.kueue.clusterQueues[0].lendingLimit.c: warning: lendingLimit 5 is "
        "above the quota of class 'c' ClusterQueue 'team-a' holds in each of its pools (pa: 4, "
        "pb: 2), so it limits nothing: the queue lends all of it (hint: lendingLimit counts in "
        "each pool, not in all together: at most 4 keeps some back)"
    ]
    assert _lending_limits(validated) == {"pa": 4, "pb": 2}
    assert _render_check(validated) == []


def test_a_lending_limit_is_weighed_against_its_own_class_s_pools_only() -> None:
    """With NVIDIA's plugin, classes on different pools share nvidia.com/gpu, one resource of
    the queue: another class's bigger pool must not make a limit look like it limits."""
    document = cluster(
        [pool("pa", MODEL, 4), pool("pb", "Tesla-T4", 8)],
        [
            {"name": "a", "select": {"pools": ["pa"]}},
            {"name": "b", "select": {"pools": ["pb"]}},
        ],
        plugin="nvidia",
        kueue={
            "version": "v0.19.2",
            "clusterQueues": [{"name": "team-a", "lendingLimit": {"a": 6}}],
        },
        quotas=[{"namespace": "team-a", "classes": {"a": 4, "b": 8}}],
    )
    _, warned = _lending_warnings(document)
    assert len(warned) == 1
    assert "lendingLimit 6 is above the quota of class 'a'" in warned[0]
    assert "(pa: 4)" in warned[0]


def test_a_lending_limit_is_capped_at_the_queues_quota_in_each_pool_and_kueue_accepts_it() -> None:
    validated = check(_lending(3))
    assert isinstance(validated, Validated), [d.as_text() for d in validated]
    assert _lending_limits(validated) == {"pa": 3, "pb": 2}
    assert _render_check(validated) == []


def test_a_lending_limit_of_a_class_set_aside_for_another_error_is_left_to_that_error() -> None:
    """Found by test_bad_input_never_crashes: a class whose own field is wrong is set aside, and
    the queue's lendingLimit of it must not make the Kueue rules crash."""
    document = cluster_file("training-fleet")
    document["spec"]["resourceClasses"][0]["description"] = None
    (refused,) = _errors(document)
    assert format_path(refused.path) == "spec.resourceClasses[0].description"
