"""What a class's claim asks (spec.resourceClasses[].claim): something some node can give, on a
Kubernetes version that has it, with attributes the driver publishes, and that Kueue can count."""

from __future__ import annotations

from collections.abc import Iterator

from gpuconf.compiler.dra.kubernetes_gates import EXTENDED_RESOURCE, PRIORITIZED_LIST
from gpuconf.compiler.resolve.class_selection import ResolvedClass
from gpuconf.compiler.rules.context import RuleContext, class_path, quota_path
from gpuconf.compiler.rules.dra_kubernetes import gate_problem
from gpuconf.diagnostics import Diagnostic
from gpuconf.gpus.dra_attributes import DRIVER, attribute_set, qualified_name
from gpuconf.hints import did_you_mean


def most_on_one_node(resolved: ResolvedClass) -> int:
    """The most devices of the class any one node holds: a claim's devices share a node."""
    per_group: dict[int, int] = {}
    for member in resolved.members:
        per_group[id(member.group)] = per_group.get(id(member.group), 0) + member.units
    return max(per_group.values(), default=0)


def _published(ctx: RuleContext, resolved: ResolvedClass) -> set[str]:
    names = attribute_set(ctx.cluster.spec.dra.driver_version)
    mig = resolved.spec.select.mig_profile is not None
    return {qualified_name(n) for n in names.published(mig)}


def _claim(ctx: RuleContext, resolved: ResolvedClass) -> Iterator[Diagnostic]:
    claim = resolved.spec.claim
    assert claim is not None
    path = class_path(resolved.index, "claim")
    by_name = {c.name: c for c in ctx.classes}
    if claim.allocation_mode == "All" and claim.count > 1:
        yield ctx.error(
            (*path, "count"),
            "allocationMode All takes every device of the class on the node; count says how many otherwise",
            "remove count, or allocationMode",
        )
    wanted = [resolved.name, *(claim.first_available or [])]
    for i, name in enumerate(claim.first_available or []):
        where = (*path, "firstAvailable", i)
        fallback = by_name.get(name)
        if fallback is None:
            yield ctx.error(
                where, f"no class is named {name!r}", did_you_mean(name, by_name, otherwise="")
            )
        elif name in wanted[: i + 1]:
            yield ctx.error(where, f"class {name!r} is already asked for earlier in the list")
    if claim.first_available:
        yield from gate_problem(ctx, PRIORITIZED_LIST, (*path, "firstAvailable"), "firstAvailable")
    if claim.extended_resource:
        yield from gate_problem(
            ctx, EXTENDED_RESOURCE, (*path, "extendedResource"), "extendedResource"
        )
    if claim.allocation_mode == "ExactCount":
        for name in dict.fromkeys(wanted):
            asked = by_name.get(name)
            if asked is None or not asked.taken:
                continue
            most = most_on_one_node(asked)
            if claim.count > most:
                yield ctx.error(
                    (*path, "count"),
                    f"no node has {claim.count} devices of class {name!r} (at most {most} on one "
                    "node): a claim's devices are all on the node its pod runs on",
                    f"ask for {most} or fewer",
                )
    if claim.match_attribute is not None:
        published = _published(ctx, resolved)
        if qualified_name(claim.match_attribute) not in published:
            release = ctx.cluster.spec.dra.driver_version
            yield ctx.error(
                (*path, "matchAttribute"),
                f"NVIDIA's DRA driver {release} publishes no attribute {claim.match_attribute!r} "
                "on these devices (and none for NVLink)",
                "it publishes "
                + ", ".join(sorted(n.removeprefix(f"{DRIVER}/") for n in published)),
            )
    kueue = ctx.cluster.spec.kueue
    if kueue is not None and (claim.first_available or claim.allocation_mode == "All"):
        what = "firstAvailable" if claim.first_available else "allocationMode All"
        yield ctx.error(
            (*path, "firstAvailable" if claim.first_available else "allocationMode"),
            f"Kueue {kueue.version} refuses claims with {what}: it counts only an exact number "
            "of devices per request (its pkg/dra/claims.go)",
            "ask for a count, or leave this class out of spec.kueue's quotas",
        )


def check(ctx: RuleContext) -> Iterator[Diagnostic]:
    dra = ctx.cluster.spec.allocation == "dra"
    for resolved in ctx.classes:
        claim = resolved.spec.claim
        if claim is None:
            continue
        if not dra:
            yield ctx.error(
                class_path(resolved.index, "claim"),
                "claim shapes a DRA ResourceClaim; with allocation: device-plugin a pod asks for "
                "a count of the class's resource itself",
                "remove claim, or use allocation: dra",
            )
            continue
        yield from _claim(ctx, resolved)
    if not dra:
        return
    claims = {c.name: c.spec.claim for c in ctx.classes}
    for i, quota in enumerate(ctx.cluster.spec.quotas):
        for name, count in quota.classes.items():
            claim = claims.get(name)
            if claim is not None and 0 < count < claim.count:
                yield ctx.error(
                    quota_path(i, "classes", name),
                    f"a quota of {count} devices admits no claim of class {name!r}, which takes {claim.count}",
                    f"give the namespace {claim.count} or more, or 0",
                )
