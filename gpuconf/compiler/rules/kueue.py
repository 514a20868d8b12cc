"""Kueue: queues that name what exists, a preemption Kueue accepts, and DRA only on a release
that counts devices (deviceClassMappings, from Kueue v0.14.0). Limits against the quota the
plan places in each pool are rules/kueue_limits.py's."""

from __future__ import annotations

from collections.abc import Iterator

from gpuconf.api.cluster.kueue import ClusterQueueSettings, Kueue
from gpuconf.compiler.rules.context import RuleContext, quota_path
from gpuconf.diagnostics import Diagnostic, KeyPath
from gpuconf.hints import did_you_mean

KUEUE = ("spec", "kueue")


def _queue_path(index: int, *rest: str | int) -> KeyPath:
    return (*KUEUE, "clusterQueues", index, *rest)


def _release(ctx: RuleContext, kueue: Kueue) -> Iterator[Diagnostic]:
    if ctx.cluster.spec.allocation != "dra":
        return
    from gpuconf.compiler.kueue.releases import NEWEST, facts

    release = facts(kueue.version)
    gate = release.dra_gate
    if gate is None:
        yield ctx.error(
            (*KUEUE, "version"),
            f"Kueue {kueue.version} cannot count DRA devices: deviceClassMappings came in v0.14.0",
            f"use Kueue {NEWEST}, whose KueueDRAIntegration gate is on by default",
        )
        return
    declared = kueue.feature_gates.get(gate)
    if declared is False or (declared is None and not release.dra_gate_on_by_default):
        default = "on" if release.dra_gate_on_by_default else "off"
        yield ctx.error(
            (*KUEUE, "featureGates") if declared is not None else (*KUEUE, "version"),
            f"Kueue {kueue.version} counts DRA devices only with its feature gate {gate} on "
            f"({default} by default{', declared off' if declared is False else ''})",
            f"install Kueue with {gate}=true and declare it: spec.kueue.featureGates: {{{gate}: true}}"
            + ("" if kueue.version == NEWEST else f"; or use Kueue {NEWEST}"),
        )


def _settings(ctx: RuleContext, index: int, queue: ClusterQueueSettings) -> Iterator[Diagnostic]:
    # Imported here, as in _release: a cluster without Kueue checks its quotas without loading
    # the queue plan's module (its NamedTuples are a Kueue-less render's needless import).
    from gpuconf.compiler.kueue.queues import queue_name

    quotas = [q for q in ctx.cluster.spec.quotas if queue_name(q) == queue.name]
    if ctx.set_aside.quotas:
        # A quota set aside for its shape error may be what this queue lacks here.
        yield from _preemption(ctx, index, queue)
        return
    if not quotas:
        yield ctx.error(
            _queue_path(index, "name"),
            f"no quota joins ClusterQueue {queue.name!r}",
            "name it in a quota's clusterQueue, or give it the name of a quota's namespace",
        )
        return
    held = sorted({name for quota in quotas for name in quota.classes})
    for key, limits in (
        ("borrowingLimit", queue.borrowing_limit),
        ("lendingLimit", queue.lending_limit),
    ):
        for name in limits or {}:
            if name not in held:
                hint = did_you_mean(name, held, otherwise="its classes: " + ", ".join(held))
                yield ctx.error(
                    _queue_path(index, key, name),
                    f"ClusterQueue {queue.name!r} has no quota of class {name!r}",
                    hint,
                )
    yield from _preemption(ctx, index, queue)


def _preemption(ctx: RuleContext, index: int, queue: ClusterQueueSettings) -> Iterator[Diagnostic]:
    preemption = queue.preemption
    borrow = preemption.borrow_within_cohort
    if (
        preemption.reclaim_within_cohort == "Never"
        and borrow is not None
        and borrow.policy != "Never"
    ):
        yield ctx.error(
            _queue_path(index, "preemption", "borrowWithinCohort", "policy"),
            "Kueue refuses preemption while borrowing when reclaimWithinCohort is Never",
            "set reclaimWithinCohort to LowerPriority or Any, or borrowWithinCohort.policy to Never",
        )


def check(ctx: RuleContext) -> Iterator[Diagnostic]:
    kueue = ctx.cluster.spec.kueue
    quotas = ctx.cluster.spec.quotas
    if kueue is None:
        for i, quota in enumerate(quotas):
            if quota.cluster_queue is not None:
                yield ctx.error(
                    quota_path(i, "clusterQueue"),
                    "clusterQueue needs spec.kueue: no Kueue queues are rendered without it",
                    "declare the Kueue release in spec.kueue, or remove clusterQueue",
                )
        return
    yield from _release(ctx, kueue)
    first: dict[str, int] = {}
    for i, queue in enumerate(kueue.cluster_queues):
        if first.setdefault(queue.name, i) != i:
            yield ctx.error(
                _queue_path(i, "name"),
                f"ClusterQueue {queue.name!r} is already declared",
                "names must be unique",
            )
            continue
        yield from _settings(ctx, i, queue)
    for i, quota in enumerate(quotas):
        if quota.cluster_queue is not None and quota.cluster_queue not in first:
            hint = did_you_mean(
                quota.cluster_queue,
                first,
                otherwise="declare it in spec.kueue.clusterQueues, or leave clusterQueue out "
                "for a ClusterQueue of the namespace's own",
            )
            yield ctx.error(
                quota_path(i, "clusterQueue"),
                f"no ClusterQueue is named {quota.cluster_queue!r} in spec.kueue.clusterQueues",
                hint,
            )
