"""The Kueue queues a cluster's quotas become: one ClusterQueue per tenant, its nominal quota per
class resource and ResourceFlavor (pool), its limits, and what it may borrow from the cohort.

A quota is per class, a ClusterQueue's quota per flavor: each class's capacity is filled pool by
pool (in pool order) with the quotas in file order, so the quotas on one pool never exceed what
that pool holds while the class's quotas stay within its capacity. Oversubscription the class
declares (overcommit: true) lands on its last pool."""

from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple

from gpuconf.api.cluster import Cluster, Quota
from gpuconf.api.cluster.kueue import ClusterQueueSettings
from gpuconf.compiler.resolve.class_selection import ResolvedClass

UNLIMITED = None


class FlavorQuota(NamedTuple):
    flavor: str
    """The ResourceFlavor: the pool's name."""
    nominal: int
    borrowing_limit: int | None
    lending_limit: int | None


class QueueResource(NamedTuple):
    resource: str
    """The resource Kueue counts: the class's extended resource, or its DRA deviceClassMapping."""
    classes: tuple[str, ...]
    flavors: tuple[FlavorQuota, ...]


class ClusterQueuePlan(NamedTuple):
    name: str
    namespaces: tuple[str, ...]
    settings: ClusterQueueSettings
    resources: tuple[QueueResource, ...]


class KueuePlan(NamedTuple):
    cohort: str
    flavors: tuple[str, ...]
    """Every pool some queue has quota on, in pool order."""
    queues: tuple[ClusterQueuePlan, ...]

    def borrowable(
        self, queue: ClusterQueuePlan, resource: QueueResource, pools: Iterable[str]
    ) -> int:
        """What `queue` may borrow of `resource` on these pools: in each flavor, what the other
        queues lend, up to the queue's borrowing limit there."""
        total = 0
        wanted = set(pools)
        for own in resource.flavors:
            if own.flavor not in wanted:
                continue
            lent = sum(
                lendable(other)
                for q in self.queues
                if q.name != queue.name
                for r in q.resources
                if r.resource == resource.resource
                for other in r.flavors
                if other.flavor == own.flavor
            )
            limit = own.borrowing_limit
            total += lent if limit is UNLIMITED else min(limit, lent)
        return total


def lendable(quota: FlavorQuota) -> int:
    return quota.nominal if quota.lending_limit is UNLIMITED else quota.lending_limit


def queue_name(quota: Quota) -> str:
    return quota.cluster_queue or quota.namespace


def split_by_pool(resolved: ResolvedClass, quotas: Iterable[Quota]) -> dict[str, dict[str, int]]:
    """Namespace -> pool -> the part of its quota of this class placed on that pool."""
    # Members are in inventory order, which is the pools' order in the file.
    order = dict.fromkeys(m.group.pool for m in resolved.members)
    pools = [(pool, resolved.capacity_in(pool)) for pool in order]
    free = [capacity for _, capacity in pools]
    placed: dict[str, dict[str, int]] = {}
    for quota in quotas:
        wanted = quota.classes.get(resolved.name)
        if wanted is None:
            continue
        parts = placed.setdefault(quota.namespace, {})
        for i, (pool, _) in enumerate(pools):
            last = i == len(pools) - 1
            take = wanted if last else min(wanted, free[i])
            if take or last:
                parts[pool] = parts.get(pool, 0) + take
            free[i] -= take
            wanted -= take
            if not wanted:
                break
    return placed


def kueue_plan(cluster: Cluster, classes: tuple[ResolvedClass, ...]) -> KueuePlan:
    """The queues of a cluster whose spec.kueue is set and whose quotas passed the rules."""
    kueue = cluster.spec.kueue
    assert kueue is not None
    spec = cluster.spec
    declared = {s.name: s for s in kueue.cluster_queues}
    placed = {c.name: split_by_pool(c, spec.quotas) for c in classes}
    members: dict[str, list[Quota]] = {}
    for quota in spec.quotas:
        members.setdefault(queue_name(quota), []).append(quota)
    pool_order = [p.name for p in spec.node_pools]
    queues = []
    for name, quotas in members.items():
        settings = declared.get(name) or ClusterQueueSettings(name=name)
        per_resource: dict[str, dict[str, int]] = {}
        owners: dict[str, list[str]] = {}
        limits: dict[tuple[str, str], tuple[int | None, int | None]] = {}
        asked = {c for q in quotas for c in q.classes}
        # Class order, not the quotas' key order: the same cluster gives the same bytes.
        for resolved in (c for c in classes if c.name in asked):
            class_name = resolved.name
            resource = resolved.resource_name
            owners.setdefault(resource, []).append(class_name)
            flavors = per_resource.setdefault(resource, {})
            for quota in quotas:
                for pool, count in placed[class_name].get(quota.namespace, {}).items():
                    flavors[pool] = flavors.get(pool, 0) + count
            for pool in resolved.pools:
                flavors.setdefault(pool, 0)
                limits[resource, pool] = (
                    (settings.borrowing_limit or {}).get(class_name),
                    (settings.lending_limit or {}).get(class_name),
                )
        resources = []
        for resource, flavors in per_resource.items():
            quotas_by_flavor = []
            for pool in sorted(flavors, key=pool_order.index):
                borrow, lend = limits[resource, pool]
                nominal = flavors[pool]
                # A class's lendingLimit counts in each pool, capped at the queue's quota there:
                # Kueue refuses one above the nominalQuota (rules/kueue_limits.py refuses one
                # above the quota in every pool, which would limit nothing).
                lend = None if lend is None else min(lend, nominal)
                quotas_by_flavor.append(FlavorQuota(pool, nominal, borrow, lend))
            resources.append(
                QueueResource(resource, tuple(owners[resource]), tuple(quotas_by_flavor))
            )
        queues.append(
            ClusterQueuePlan(name, tuple(q.namespace for q in quotas), settings, tuple(resources))
        )
    used = {f.flavor for q in queues for r in q.resources for f in r.flavors}
    return KueuePlan(
        kueue.cohort or cluster.metadata.name,
        tuple(p for p in pool_order if p in used),
        tuple(queues),
    )


class ResourceGroup(NamedTuple):
    resources: tuple[QueueResource, ...]
    flavors: tuple[str, ...]


def resource_groups(queue: ClusterQueuePlan, flavor_order: tuple[str, ...]) -> list[ResourceGroup]:
    """Kueue lets a flavor appear in one resourceGroup of a ClusterQueue only, and makes every
    flavor of a group give a quota for each of the group's resources: resources that share a
    pool go in one group."""
    groups: list[tuple[list[QueueResource], set[str]]] = []
    for resource in queue.resources:
        flavors = {f.flavor for f in resource.flavors}
        joined = [g for g in groups if g[1] & flavors]
        merged: tuple[list[QueueResource], set[str]] = ([], set(flavors))
        for group in joined:
            merged[0].extend(group[0])
            merged[1].update(group[1])
            groups.remove(group)
        merged[0].append(resource)
        groups.append(merged)
    order = {r.resource: i for i, r in enumerate(queue.resources)}
    return [
        ResourceGroup(
            tuple(sorted(found, key=lambda r: order[r.resource])),
            tuple(f for f in flavor_order if f in flavors),
        )
        for found, flavors in groups
    ]


def flavor_capacity(classes: tuple[ResolvedClass, ...]) -> dict[tuple[str, str], tuple[int, bool]]:
    """(resource, pool) -> the devices the pool holds of the resource, and whether a class
    behind it allows oversubscription."""
    held: dict[tuple[str, str], tuple[int, bool]] = {}
    for resolved in classes:
        for pool in resolved.pools:
            devices, over = held.get((resolved.resource_name, pool), (0, False))
            held[resolved.resource_name, pool] = (
                devices + resolved.capacity_in(pool),
                over or resolved.spec.overcommit,
            )
    return held


def admitted_per_namespace(
    plan: KueuePlan, classes: tuple[ResolvedClass, ...]
) -> dict[tuple[str, str], int]:
    """(namespace, class) -> what Kueue may admit of the class for the namespace: its queue's
    nominal quota of the class plus what the queue may borrow (any namespace of a queue may use
    all of it)."""
    admitted = {}
    for resolved in classes:
        pools = resolved.pools
        for queue in plan.queues:
            for resource in queue.resources:
                if resolved.name not in resource.classes:
                    continue
                nominal = sum(f.nominal for f in resource.flavors if f.flavor in pools)
                total = nominal + plan.borrowable(queue, resource, pools)
                for namespace in queue.namespaces:
                    admitted[namespace, resolved.name] = total
    return admitted
