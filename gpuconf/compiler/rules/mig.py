"""MIG with NVIDIA's plugin: a class's MIG devices have one name, the one its pools' strategy gives:
their GPUs' own (gpus/mig.mig_strategy), or, where the GPU Operator's GFD labels them, the one
strategy it labels every pool under (resolve/mig_strategies.py)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from gpuconf.compiler.resolve.mig_strategies import MigStrategies
from gpuconf.compiler.rules.context import RuleContext, class_path
from gpuconf.diagnostics import Diagnostic
from gpuconf.gpus.resource_names import NVIDIA_GPU, mig_resource, nvidia_resource


def check(ctx: RuleContext) -> Iterator[Diagnostic]:
    spec = ctx.cluster.spec
    if spec.plugin != "nvidia" or spec.allocation != "device-plugin":
        return
    strategies = ctx.mig_strategies.pools
    for resolved in ctx.classes:
        profile = resolved.spec.select.mig_profile
        if profile is None or not resolved.taken:
            continue
        by_strategy: dict[str, list[str]] = {}
        for pool in resolved.pools:
            by_strategy.setdefault(strategies[pool], []).append(pool)
        if len(by_strategy) > 1:
            yield ctx.error(
                class_path(resolved.index, "select"),
                f"class {resolved.name!r} spans pools with migStrategy single "
                f"({', '.join(by_strategy['single'])}) and mixed ({', '.join(by_strategy['mixed'])})",
                f"NVIDIA's plugin names these MIG devices {NVIDIA_GPU} under single and "
                f"{mig_resource(profile)} under mixed: give each kind of pool its own class",
            )
            continue
        single = "single" in by_strategy
        allowed = {nvidia_resource(profile, shared, single_mig=single) for shared in (False, True)}
        if resolved.spec.resource_name is not None and resolved.resource_name not in allowed:
            yield ctx.error(
                class_path(resolved.index, "resourceName"),
                f"with migStrategy {'single' if single else 'mixed'} NVIDIA's plugin does not "
                f"advertise {profile} devices as {resolved.resource_name!r}",
                "it advertises them as "
                + " or ".join(sorted(allowed))
                + f" ({_why(ctx.mig_strategies, resolved.pools, single)})",
            )


def _why(strategies: MigStrategies, pools: Sequence[str], single: bool) -> str:
    """Why the class's pools run the strategy they do: their GPUs' layouts, or other pools the
    GPU Operator's GFD labels under the same one strategy (own: the pool's strategy without it)."""
    if all(strategies.own[p] == strategies.pools[p] for p in pools):
        if single:
            return "single: every GPU of the pool has the one profile"
        return "mixed: the pool has whole GPUs or several profiles"
    strategy = "single" if single else "mixed"
    return f"{strategy}: {strategies.held_to(strategy)}"
