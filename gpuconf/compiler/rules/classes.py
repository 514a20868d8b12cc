"""Classes: selectors refer to what exists, select something, and partition the GPUs."""

from __future__ import annotations

from collections.abc import Iterator

from gpuconf.compiler.resolve.class_selection import (
    ResolvedClass,
    device_memory_mib,
    units_selected,
)
from gpuconf.compiler.rules.context import RuleContext, class_path
from gpuconf.diagnostics import Diagnostic
from gpuconf.hints import did_you_mean

_PARTITION_HINT = "a GPU (or a MIG profile of it) belongs to at most one class: narrow select with pools, nodes or indices"


def check(ctx: RuleContext) -> Iterator[Diagnostic]:
    pools = {p.name for p in ctx.cluster.spec.node_pools}
    nodes = {n.name for p in ctx.cluster.spec.node_pools for n in p.nodes}
    for resolved in ctx.classes:
        yield from _references(ctx, resolved, pools, nodes)
        yield from _undeclared_drivers(ctx, resolved)
        yield from _selects_something(ctx, resolved)
        yield from _sharing(ctx, resolved)
    yield from _partition(ctx)
    yield from _unique_resource_names(ctx)
    yield from _unclassified(ctx)


def _undeclared_drivers(ctx: RuleContext, resolved: ResolvedClass) -> Iterator[Diagnostic]:
    """driverVersionAtLeast is decided by the pools' declared drivers; one without is unknown."""
    selector = resolved.spec.select
    if selector.driver_version_at_least is None:
        return
    # Only pools whose GPUs the rest of the selector takes: a driverless pool it cannot reach
    # leaves no GPU undecided.
    rest = selector.replace(driver_version_at_least=None)
    unknown = [
        p.name
        for p in ctx.cluster.spec.node_pools
        if p.driver is None
        and any(
            units_selected(rest, group, gpu)
            for group in ctx.inventory.by_pool(p.name)
            for gpu in group.shape
        )
    ]
    if unknown:
        yield ctx.error(
            class_path(resolved.index, "select", "driverVersionAtLeast"),
            f"pools {', '.join(unknown)} declare no driver.version, so gpuconf cannot tell which "
            "of their GPUs have at least this driver",
            "declare driver.version on those pools, or narrow select.pools to pools that do",
        )


def _references(
    ctx: RuleContext, resolved: ResolvedClass, pools: set[str], nodes: set[str]
) -> Iterator[Diagnostic]:
    selector = resolved.spec.select
    for k, pool in enumerate(selector.pools or []):
        if pool not in pools:
            yield ctx.error(
                class_path(resolved.index, "select", "pools", k),
                f"no pool is named {pool!r}",
                did_you_mean(pool, pools, otherwise="known: " + ", ".join(sorted(pools))),
            )
    for k, node in enumerate(selector.nodes or []):
        if node not in nodes:
            hint = (
                did_you_mean(node, nodes, otherwise="known: " + ", ".join(sorted(nodes)))
                if nodes
                else "only nodes declared under a pool's nodes: can be selected"
            )
            yield ctx.error(
                class_path(resolved.index, "select", "nodes", k),
                f"no declared node is named {node!r}",
                hint,
            )


def _selects_something(ctx: RuleContext, resolved: ResolvedClass) -> Iterator[Diagnostic]:
    if resolved.taken:
        return
    profile = resolved.spec.select.mig_profile
    declared: dict[str, set[str]] = {}
    for grp in ctx.inventory.groups:
        for g in grp.shape:
            for p in g.mig or {}:
                declared.setdefault(p, set()).add(grp.pool)
    if profile is not None and profile not in declared:
        yield ctx.error(
            class_path(resolved.index, "select", "migProfile"),
            f"no GPU has MIG profile {profile!r} in its layout",
            (
                "declared profiles: "
                + ", ".join(f"{p} (in {', '.join(sorted(declared[p]))})" for p in sorted(declared))
                if declared
                else "no pool declares a MIG layout: add sharing: {strategy: mig, layout: …} to a pool"
            ),
        )
        return
    have = sorted(
        {
            f"{g.model.name}" + (f" (MIG {', '.join(g.mig)})" if g.mig else "")
            for grp in ctx.inventory.groups
            for g in grp.shape
        }
    )
    yield ctx.error(
        class_path(resolved.index, "select"),
        f"class {resolved.name!r} selects no GPU",
        "the inventory has "
        + ("; ".join(have) if have else "no GPUs")
        + "; MIG-partitioned GPUs are selected only with migProfile",
    )


def _sharing(ctx: RuleContext, resolved: ResolvedClass) -> Iterator[Diagnostic]:
    sharing = resolved.spec.sharing
    if sharing.strategy != "mps":
        return
    path = class_path(resolved.index, "sharing")
    if resolved.spec.select.mig_profile is not None:
        yield ctx.error(
            path,
            "MPS cannot share MIG devices",
            "use time-slicing for MIG devices, or MPS on whole GPUs",
        )
        return
    if sharing.memory_limit_mi_b is None:
        return
    for member in resolved.members:
        memory = device_memory_mib(member.gpu, None)
        if sharing.memory_limit_mi_b > memory:
            yield ctx.error(
                (*path, "memoryLimitMiB"),
                f"{sharing.memory_limit_mi_b} MiB per client is more than a {member.gpu.model.name} has ({memory} MiB)",
                f"at most {memory // resolved.replicas} MiB gives each of the {resolved.replicas} clients its share"
                if sharing.replicas
                else f"at most {memory} MiB",
            )
            return


def _partition(ctx: RuleContext) -> Iterator[Diagnostic]:
    if _disjoint(ctx.classes):  # the rule: found without a step per member
        return
    owner: dict[tuple[int, int, str], ResolvedClass] = {}
    reported: set[tuple[int, int]] = set()
    for resolved in ctx.classes:
        profile = resolved.spec.select.mig_profile or ""
        for member in resolved.members:
            key = (id(member.group), member.gpu.index, profile)
            first = owner.setdefault(key, resolved)
            if first is resolved or (first.index, resolved.index) in reported:
                continue
            reported.add((first.index, resolved.index))
            where = f"GPU {member.gpu.index} of " + (
                f"node {member.group.node!r}"
                if member.group.node
                else f"pool {member.group.pool!r}"
            )
            yield ctx.error(
                class_path(resolved.index, "select"),
                f"{where} is selected by both {first.name!r} and {resolved.name!r}",
                _PARTITION_HINT,
            )


def _disjoint(classes: tuple[ResolvedClass, ...]) -> bool:
    """No GPU (or MIG profile of one) is a member of two classes."""
    seen: dict[tuple[str, int], set[int]] = {}
    for resolved in classes:
        profile = resolved.spec.select.mig_profile or ""
        for group, indices in resolved.taken:
            taken = seen.setdefault((profile, id(group)), set())
            if not taken.isdisjoint(indices):
                return False
        for group, indices in resolved.taken:  # after: a class may take a GPU twice
            seen[profile, id(group)].update(indices)
    return True


def _unique_resource_names(ctx: RuleContext) -> Iterator[Diagnostic]:
    if ctx.cluster.spec.allocation == "dra":
        return
    first: dict[str, ResolvedClass] = {}
    for resolved in ctx.classes:
        other = first.setdefault(resolved.resource_name, resolved)
        if other is resolved:
            continue
        if ctx.cluster.spec.plugin == "nvidia" and not set(other.pools) & set(resolved.pools):
            # NVIDIA's plugin runs per node: one name on different pools is how NVIDIA runs it
            # (rules/nvidia_plugin.py warns what that costs the quotas).
            continue
        hint = "give each class its own resourceName"
        if ctx.cluster.spec.plugin == "nvidia":
            hint = "NVIDIA's plugin names resources only nvidia.com/gpu, nvidia.com/gpu.shared and nvidia.com/mig-<profile>; use plugin: gpuconf for one resource per class"
        yield ctx.error(
            class_path(resolved.index, "resourceName"),
            f"classes {other.name!r} and {resolved.name!r} both advertise {resolved.resource_name!r}",
            hint,
        )


def _unclassified(ctx: RuleContext) -> Iterator[Diagnostic]:
    if not ctx.classes or ctx.cluster.spec.plugin == "nvidia" or ctx.set_aside.resource_classes:
        return
    taken: dict[int, set[int]] = {}
    for resolved in ctx.classes:
        for group, indices in resolved.taken:
            taken.setdefault(id(group), set()).update(indices)
    shape_indices: dict[int, frozenset[int]] = {}  # by shape, which a pool's nodes share
    for i, pool in enumerate(ctx.cluster.spec.node_pools):
        idle: set[int] = set()
        for grp in ctx.inventory.by_pool(pool.name):
            present = shape_indices.get(id(grp.shape))
            if present is None:
                present = shape_indices[id(grp.shape)] = frozenset(g.index for g in grp.shape)
            idle |= present.difference(taken.get(id(grp), ()))
        if idle:
            yield ctx.warning(
                ("spec", "nodePools", i),
                f"GPUs {sorted(idle)} of pool {pool.name!r} are in no class and will not be advertised",
                "add a class that selects them, or leave them out on purpose",
            )
