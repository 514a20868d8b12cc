"""What NVIDIA's device plugin cannot do, said up front (its parser would silently ignore it)."""

from __future__ import annotations

from collections.abc import Callable, Iterator

from gpuconf.compiler.resolve.class_selection import ResolvedClass
from gpuconf.compiler.rules.context import RuleContext, class_path, pool_path
from gpuconf.diagnostics import Diagnostic
from gpuconf.gpus.resource_names import nvidia_resources

_USE_GPUCONF = "plugin: gpuconf gives each class its own resource and sharing"


def check(ctx: RuleContext) -> Iterator[Diagnostic]:
    spec = ctx.cluster.spec
    if spec.plugin != "nvidia" or spec.allocation != "device-plugin":
        return
    for resolved in ctx.classes:
        name = resolved.spec.resource_name
        profile = resolved.spec.select.mig_profile
        shared = resolved.spec.sharing.strategy != "none"
        allowed = nvidia_resources(profile, shared)
        if name is not None and name not in allowed:
            yield ctx.error(
                class_path(resolved.index, "resourceName"),
                f"NVIDIA's device plugin cannot advertise {name!r}",
                f"it advertises {' or '.join(sorted(allowed))} (its rename option is ignored at run time); {_USE_GPUCONF}",
            )
        yield from _mps_settings(ctx, resolved)
    for i, pool in enumerate(spec.node_pools):
        covering = [c for c in ctx.classes if pool.name in c.pools]
        for resolved in covering:
            profile = resolved.spec.select.mig_profile
            wanted = {
                (id(grp), gpu.index)
                for grp in ctx.inventory.by_pool(pool.name)
                for gpu in grp.gpus
                if (gpu.mig is None) == (profile is None)
                and (profile is None or profile in (gpu.mig or {}))
            }
            taken = {
                (id(m.group), m.gpu.index) for m in resolved.members if m.group.pool == pool.name
            }
            if taken != wanted:
                yield ctx.error(
                    class_path(resolved.index, "select"),
                    f"NVIDIA's device plugin cannot give class {resolved.name!r} only some of pool {pool.name!r}'s "
                    + ("MIG devices" if profile else "GPUs"),
                    f"with plugin: nvidia a class takes all of a pool's GPUs; {_USE_GPUCONF}",
                )
        yield from _one_setting_per_node(ctx, i, pool.name, covering)


# Settings NVIDIA's plugin holds once per node, so every shared class of a pool must agree:
# (what differs, the setting of one class, why it matters).
_NODE_WIDE_SETTINGS: tuple[tuple[str, Callable[[ResolvedClass], str], str], ...] = (
    (
        "sharing strategy",
        lambda c: c.spec.sharing.strategy,
        "NVIDIA's device plugin applies one sharing strategy per node",
    ),
    (
        "'.shared' suffix of their resource names",
        lambda c: "with" if c.resource_name.endswith(".shared") else "without",
        "NVIDIA's plugin renames all shared resources of a node or none (renameByDefault)",
    ),
    (
        "failRequestsGreaterThanOne setting",
        lambda c: str(getattr(c.spec.sharing, "fail_requests_greater_than_one", False)).lower(),
        "NVIDIA's device plugin has one such setting per node",
    ),
)


def _one_setting_per_node(
    ctx: RuleContext, i: int, pool: str, covering: list[ResolvedClass]
) -> Iterator[Diagnostic]:
    shared = [c for c in covering if c.spec.sharing.strategy != "none"]
    for what, setting, why in _NODE_WIDE_SETTINGS:
        if len({setting(c) for c in shared}) > 1:
            each = ", ".join(f"{c.name}: {setting(c)}" for c in shared)
            yield ctx.error(
                pool_path(i),
                f"shared classes on pool {pool!r} disagree on the {what} ({each})",
                f"{why}; {_USE_GPUCONF}",
            )


def _mps_settings(ctx: RuleContext, resolved: ResolvedClass) -> Iterator[Diagnostic]:
    sharing = resolved.spec.sharing
    if sharing.strategy != "mps":
        return
    for key, value in (
        ("memoryLimitMiB", sharing.memory_limit_mi_b),
        ("activeThreadPercentage", sharing.active_thread_percentage),
    ):
        if value is not None:
            yield ctx.error(
                class_path(resolved.index, "sharing", key),
                f"NVIDIA's device plugin cannot set {key}",
                f"it gives each MPS client an equal share of the GPU; remove {key}, or {_USE_GPUCONF}",
            )
