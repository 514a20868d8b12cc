"""Kueue: the sizes its CRDs and webhooks accept that a cluster file's values reach, checked on
the queues gpuconf plans (compiler/kueue/queues.py, as render builds its objects from them) and
refused at the file's own keys. Validate refuses here what render's check of the rendered
objects (compiler/kueue_check.py) would, without rendering them.

Reached, with the limits of compiler/kueue/limits.py (each names its Kueue source):
- a pool's ResourceFlavor: at most 8 nodeLabels (its nodeSelector, and kubernetes.io/arch where
  the pool has an architecture) and 8 tolerations (which also holds its nodeTaints, one per
  toleration naming a key and an effect, to their 8); no two nodeTaints with one key and effect;
- a ClusterQueue: at most 16 resourceGroups (classes that share no pool go in groups of their
  own), per group at most 16 (v0.13) or 64 covered resources and flavors (pools), and from v0.14
  the webhook's totals per queue;
- a lendingLimit: Kueue's webhook refuses one above its flavor's nominalQuota
  (pkg/webhooks/clusterqueue_webhook.go, validateLendingLimit). A class's lendingLimit counts in
  each pool, capped at the queue's quota there (compiler/kueue/queues.py derives each flavor's
  value, never above it); one above the queue's quota in every pool of the class limits nothing
  (read as a total, it would keep GPUs it never keeps): a warning.

What else Kueue refuses a cluster file cannot reach, or other rules refuse first: names are DNS
labels in the model (Kueue wants subdomains: cohort, flavors, ClusterQueue of a LocalQueue), and
quotas and limits whole numbers up to 1,000,000 (quantities); the toleration rules the flavor's
CEL rules repeat are pools.py's, the preemption rule kueue.py's; every queue joins a cohort
(limits need one); quotas within capacity (quotas.py) keep each flavor's nominal quotas within
its pool."""

from __future__ import annotations

from collections.abc import Callable, Iterator

from gpuconf.api.cluster import NodePool
from gpuconf.api.cluster.kueue import Kueue, KueueRelease
from gpuconf.compiler.kueue.flavors import node_taints
from gpuconf.compiler.kueue.limits import (
    FLAVOR_NODE_LABELS,
    FLAVOR_TOLERATIONS,
    QUEUE_LIMITS,
    QueueLimits,
)
from gpuconf.compiler.kueue.queues import (
    ClusterQueuePlan,
    KueuePlan,
    QueueResource,
    ResourceGroup,
    kueue_plan,
    queue_name,
    resource_groups,
)
from gpuconf.compiler.resolve.pool_selector import node_selector
from gpuconf.compiler.rules.context import RuleContext, pool_path, quota_path
from gpuconf.diagnostics import Diagnostic, KeyPath

KUEUE_QUEUES = ("spec", "kueue", "clusterQueues")
SPLIT_HINT = "spread the quotas over more ClusterQueues (a quota's clusterQueue)"


def _flavor(ctx: RuleContext, index: int, pool: NodePool) -> Iterator[Diagnostic]:
    flavor = f"the Kueue ResourceFlavor of pool {pool.name!r}"
    labels = node_selector(pool)
    if len(labels) > FLAVOR_NODE_LABELS:
        yield ctx.error(
            pool_path(index, "nodeSelector"),
            f"{flavor} would have {len(labels)} nodeLabels (the nodeSelector"
            + (", and kubernetes.io/arch" if len(labels) > len(pool.node_selector) else "")
            + f"); Kueue accepts at most {FLAVOR_NODE_LABELS}",
            f"select the pool's nodes with at most {FLAVOR_NODE_LABELS} labels",
        )
    if len(pool.tolerations) > FLAVOR_TOLERATIONS:
        yield ctx.error(
            pool_path(index, "tolerations", FLAVOR_TOLERATIONS),
            f"{flavor} would have {len(pool.tolerations)} tolerations; Kueue accepts at most "
            f"{FLAVOR_TOLERATIONS}",
            f"tolerate at most {FLAVOR_TOLERATIONS} taints in a pool Kueue's queues use",
        )
    # pkg/webhooks/resourceflavor_webhook.go, validateNodeTaints (v0.19.2 line 96, the
    # uniqueness line 111; v0.13.10 and v0.14.8 lines 100 and 115).
    first: dict[tuple[str, str], int] = {}
    for k, taint in node_taints(pool):
        pair = (taint["key"], taint["effect"])
        if first.setdefault(pair, k) != k:
            yield ctx.error(
                pool_path(index, "tolerations", k),
                f"{flavor} would carry the taint {pair[0]}:{pair[1]} twice (tolerations "
                f"{first[pair]} and {k}); Kueue refuses nodeTaints that repeat a key and effect",
                "keep one toleration per key and effect, or leave the effect out of one",
            )


def _quota_of(ctx: RuleContext, queue: ClusterQueuePlan, resource: QueueResource) -> KeyPath:
    """The first quota of the queue naming a class counted as `resource`: where a refusal
    points. It walks every quota, so it is called for a refusal only (for every group of every
    queue, validate would be quadratic in the quotas)."""
    for i, quota in enumerate(ctx.cluster.spec.quotas):
        if queue_name(quota) != queue.name:
            continue
        for name in resource.classes:
            if name in quota.classes:
                return quota_path(i, "classes", name)
    raise AssertionError(f"no quota of queue {queue.name} counts {resource.resource}")


def _classes(group: ResourceGroup) -> str:
    names = [c for r in group.resources for c in r.classes]
    if len(names) == 1:
        return f"class {names[0]}"
    shown = (
        f"{', '.join(names[:3])} and {len(names) - 3} more" if len(names) > 4 else ", ".join(names)
    )
    return f"classes {shown} (they share pools)"


def _per_group_hint(limits: QueueLimits, size: int, fix: str) -> str:
    wider = max(q.per_group for q in QUEUE_LIMITS.values())
    if limits.per_group < size <= wider:
        newer = next(r for r, q in QUEUE_LIMITS.items() if q.per_group == wider)
        return f"{fix}; or install Kueue {newer} or later, which accepts {wider}"
    return fix


def _crossing(groups: list[ResourceGroup], size: Callable[[ResourceGroup], int], limit: int) -> int:
    """The index of the group whose size takes the running total past `limit`."""
    total = 0
    for i, group in enumerate(groups):
        total += size(group)
        if total > limit:
            return i
    raise AssertionError("the total is within the limit")


def _groups(
    ctx: RuleContext,
    queue: ClusterQueuePlan,
    groups: list[ResourceGroup],
    limits: QueueLimits,
    release: KueueRelease,
) -> Iterator[Diagnostic]:
    cq = f"ClusterQueue {queue.name!r}"
    accepts = f"Kueue {release} accepts at most"
    if len(groups) > limits.resource_groups:
        yield ctx.error(
            _quota_of(ctx, queue, groups[limits.resource_groups].resources[0]),
            f"{cq} would need {len(groups)} resourceGroups (classes that share no pool each "
            f"make one); {accepts} {limits.resource_groups}",
            SPLIT_HINT,
        )
    for group in groups:
        first = group.resources[0]
        of = f"{cq}: the resourceGroup of {_classes(group)}"
        if len(group.resources) > limits.per_group:
            yield ctx.error(
                _quota_of(ctx, queue, group.resources[limits.per_group]),
                f"{of} would count {len(group.resources)} resources; {accepts} {limits.per_group}",
                _per_group_hint(limits, len(group.resources), SPLIT_HINT),
            )
        if len(group.flavors) > limits.per_group:
            yield ctx.error(
                _quota_of(ctx, queue, first),
                f"{of} would span {len(group.flavors)} pools (ResourceFlavors); {accepts} "
                f"{limits.per_group}",
                _per_group_hint(
                    limits,
                    len(group.flavors),
                    "select fewer pools (nodes with the same GPUs and runtime can be one pool)",
                ),
            )
        pairs = len(group.resources) * len(group.flavors)
        if limits.group_combinations is not None and pairs > limits.group_combinations:
            yield ctx.error(
                _quota_of(ctx, queue, first),
                f"{of} would hold {pairs} flavor-resource pairs ({len(group.resources)} resources "
                f"× {len(group.flavors)} pools); {accepts} {limits.group_combinations}",
                SPLIT_HINT,
            )
    for size, limit, what in (
        (_flavor_count, limits.total_flavors, "ResourceFlavors (a pool counts once per group)"),
        (_resource_count, limits.total_covered, "resources"),
    ):
        total = sum(map(size, groups))
        if limit is not None and total > limit:
            crossing = groups[_crossing(groups, size, limit)]
            yield ctx.error(
                _quota_of(ctx, queue, crossing.resources[0]),
                f"{cq} would name {total} {what} in all its resourceGroups; {accepts} {limit}",
                SPLIT_HINT,
            )


def _flavor_count(group: ResourceGroup) -> int:
    return len(group.flavors)


def _resource_count(group: ResourceGroup) -> int:
    return len(group.resources)


def _lending(ctx: RuleContext, planned: KueuePlan, kueue: Kueue) -> Iterator[Diagnostic]:
    """A lendingLimit above the queue's quota of the class in every pool of the class limits
    nothing: it counts in each pool (the plan caps it at the quota there, as Kueue's webhook
    requires), not in all together, which is what such a limit usually meant."""
    queues = {q.name: q for q in planned.queues}
    class_pools = {resolved.name: set(resolved.pools) for resolved in ctx.classes}
    for index, settings in enumerate(kueue.cluster_queues):
        queue = queues[settings.name]
        for name, limit in (settings.lending_limit or {}).items():
            resource = next((r for r in queue.resources if name in r.classes), None)
            if resource is None or name not in class_pools:
                continue  # a class the queue holds no quota of, or one set aside: kueue.py says
            flavors = [f for f in resource.flavors if f.flavor in class_pools[name]]
            if not flavors:
                continue
            most = max(f.nominal for f in flavors)
            if limit > most:
                pools = ", ".join(f"{f.flavor}: {f.nominal}" for f in flavors)
                yield ctx.warning(
                    (*KUEUE_QUEUES, index, "lendingLimit", name),
                    f"lendingLimit {limit} is above the quota of class {name!r} ClusterQueue "
                    f"{queue.name!r} holds in each of its pools ({pools}), so it limits nothing: "
                    "the queue lends all of it",
                    f"lendingLimit counts in each pool, not in all together: at most {most} "
                    "keeps some back",
                )


def check(ctx: RuleContext) -> Iterator[Diagnostic]:
    kueue = ctx.cluster.spec.kueue
    if kueue is None:
        return
    planned = kueue_plan(ctx.cluster, ctx.classes)
    if not ctx.set_aside.quotas:  # without some quota, a queue may hold more than planned here
        yield from _lending(ctx, planned, kueue)
    pools = {p.name: i for i, p in enumerate(ctx.cluster.spec.node_pools)}
    for name in planned.flavors:
        yield from _flavor(ctx, pools[name], ctx.cluster.spec.node_pools[pools[name]])
    for queue in planned.queues:
        groups = resource_groups(queue, planned.flavors)
        yield from _groups(ctx, queue, groups, QUEUE_LIMITS[kueue.version], kueue.version)
