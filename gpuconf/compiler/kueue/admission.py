"""What Kueue refuses or mis-counts that its CRD schemas cannot say, checked over the rendered
objects together.

Kueue's ClusterQueue webhook (pkg/webhooks/clusterqueue_webhook.go, validateResourceGroups and
validateFlavorQuotas) refuses a resource or flavor named in two resourceGroups, a flavor whose
quotas do not name the covered resources in order, a lendingLimit above the nominalQuota,
limits without a cohort, and (from v0.14) more flavors, covered resources or flavor-resource pairs
than its totals allow (compiler/kueue/limits.py); its ResourceFlavor webhook
(pkg/webhooks/resourceflavor_webhook.go, validateNodeTaints) refuses two nodeTaints with the same
key and effect. Beyond them: every flavor a ClusterQueue names exists, every LocalQueue
points at a ClusterQueue that admits its namespace, and the nominal quotas on each flavor add up
to no more than its pool holds unless the class allows oversubscription."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, NamedTuple

from gpuconf.compiler.kueue.limits import QueueLimits


class Refusal(NamedTuple):
    object: str
    """Kind and name, e.g. ClusterQueue research."""
    path: str
    message: str


class Capacity(NamedTuple):
    devices: int
    oversubscribed: bool
    """The class declares overcommit: true."""


def _cluster_queue(queue: dict[str, Any], flavors: set[str]) -> Iterator[tuple[str, str]]:
    spec = queue["spec"]
    has_cohort = bool(spec.get("cohort") or spec.get("cohortName"))
    seen_resources: set[str] = set()
    seen_flavors: set[str] = set()
    for i, group in enumerate(spec.get("resourceGroups", [])):
        covered = group["coveredResources"]
        for name in covered:
            if name in seen_resources:
                yield f"spec.resourceGroups.{i}", f"resource {name!r} is in two resourceGroups"
            seen_resources.add(name)
        for j, flavor in enumerate(group["flavors"]):
            where = f"spec.resourceGroups.{i}.flavors.{j}"
            if flavor["name"] in seen_flavors:
                yield where, f"flavor {flavor['name']!r} is in two resourceGroups"
            seen_flavors.add(flavor["name"])
            if flavor["name"] not in flavors:
                yield where, f"no ResourceFlavor is named {flavor['name']!r}"
            named = [r["name"] for r in flavor["resources"]]
            if named != covered:
                yield where, f"quotas name {named}, not the covered resources {covered} in order"
            for k, quota in enumerate(flavor["resources"]):
                lend = quota.get("lendingLimit")
                if lend is not None and lend > quota["nominalQuota"]:
                    yield f"{where}.resources.{k}.lendingLimit", "must be at most the nominalQuota"
                if not has_cohort and ("borrowingLimit" in quota or lend is not None):
                    yield f"{where}.resources.{k}", "limits need a cohort"


def _totals(queue: dict[str, Any], limits: QueueLimits) -> Iterator[tuple[str, str]]:
    groups = queue["spec"].get("resourceGroups", [])
    flavors = sum(len(g["flavors"]) for g in groups)
    covered = sum(len(g["coveredResources"]) for g in groups)
    if limits.total_flavors is not None and flavors > limits.total_flavors:
        yield "spec.resourceGroups", f"{flavors} flavors in all, more than {limits.total_flavors}"
    if limits.total_covered is not None and covered > limits.total_covered:
        yield (
            "spec.resourceGroups",
            f"{covered} covered resources in all, more than {limits.total_covered}",
        )
    for i, group in enumerate(groups):
        pairs = sum(len(f["resources"]) for f in group["flavors"])
        if limits.group_combinations is not None and pairs > limits.group_combinations:
            yield (
                f"spec.resourceGroups.{i}",
                f"{pairs} flavor-resource pairs, more than {limits.group_combinations}",
            )


def _repeated_taints(flavor: dict[str, Any]) -> Iterator[tuple[str, str]]:
    seen: set[tuple[str, str]] = set()
    for i, taint in enumerate(flavor["spec"].get("nodeTaints") or []):
        pair = (taint.get("key", ""), taint.get("effect", ""))
        if pair in seen:
            yield f"spec.nodeTaints.{i}", "taints must be unique by key and effect pair"
        seen.add(pair)


def _admits(queue: dict[str, Any], namespace: str) -> bool:
    selector = queue["spec"].get("namespaceSelector")
    if selector is None:
        return False
    return all(
        e["operator"] == "In" and namespace in e["values"]
        for e in selector.get("matchExpressions", [])
    )


def refusals(
    objects: list[dict[str, Any]],
    capacity: Mapping[tuple[str, str], Capacity],
    limits: QueueLimits,
) -> Iterator[Refusal]:
    """`capacity`: (resource, flavor) -> what the flavor's pool holds of the resource; `limits`:
    the release's."""
    flavors = {o["metadata"]["name"] for o in objects if o["kind"] == "ResourceFlavor"}
    for obj in objects:
        if obj["kind"] == "ResourceFlavor":
            for path, message in _repeated_taints(obj):
                yield Refusal(f"ResourceFlavor {obj['metadata']['name']}", path, message)
    queues = {o["metadata"]["name"]: o for o in objects if o["kind"] == "ClusterQueue"}
    nominal: dict[tuple[str, str], int] = {}
    for name, queue in queues.items():
        for path, message in [*_cluster_queue(queue, flavors), *_totals(queue, limits)]:
            yield Refusal(f"ClusterQueue {name}", path, message)
        for group in queue["spec"].get("resourceGroups", []):
            for flavor in group["flavors"]:
                for quota in flavor["resources"]:
                    key = (quota["name"], flavor["name"])
                    nominal[key] = nominal.get(key, 0) + quota["nominalQuota"]
    for obj in objects:
        if obj["kind"] != "LocalQueue":
            continue
        target = obj["spec"]["clusterQueue"]
        namespace = obj["metadata"]["namespace"]
        where = f"LocalQueue {namespace}/{obj['metadata']['name']}"
        if target not in queues:
            yield Refusal(where, "spec.clusterQueue", f"no ClusterQueue is named {target!r}")
        elif not _admits(queues[target], namespace):
            yield Refusal(
                where,
                "spec.clusterQueue",
                f"ClusterQueue {target} does not admit namespace {namespace!r}",
            )
    for (resource, flavor), total in sorted(nominal.items()):
        held = capacity.get((resource, flavor), Capacity(0, False))
        if total > held.devices and not held.oversubscribed:
            yield Refusal(
                f"ResourceFlavor {flavor}",
                "",
                f"nominal quotas of {resource} add up to {total}, more than the {held.devices} its pool holds",
            )
