"""MPS as NVIDIA's control daemon and plugin accept it: client ceilings and MIG combinations."""

from __future__ import annotations

from collections.abc import Iterator

from gpuconf.compiler.rules.context import RuleContext, class_path
from gpuconf.diagnostics import Diagnostic
from gpuconf.gpus.mps import max_mps_clients


def check(ctx: RuleContext) -> Iterator[Diagnostic]:
    yield from _client_ceilings(ctx)
    if ctx.cluster.spec.plugin == "nvidia" and ctx.cluster.spec.allocation == "device-plugin":
        yield from _mixed_strategy(ctx)


def _client_ceilings(ctx: RuleContext) -> Iterator[Diagnostic]:
    plugin = ctx.cluster.spec.plugin
    daemon = "NVIDIA's MPS control daemon" if plugin == "nvidia" else "the MPS control daemon"
    for resolved in ctx.classes:
        if resolved.spec.sharing.strategy != "mps":
            continue
        for member in resolved.members:
            model = member.gpu.model
            ceiling = max_mps_clients(model.compute_capability, plugin)
            if resolved.replicas > ceiling:
                yield ctx.error(
                    class_path(resolved.index, "sharing", "replicas"),
                    f"{resolved.replicas} MPS clients per GPU is more than {daemon} "
                    f"accepts on a {model.name} (compute capability "
                    f"{model.compute_capability}: at most {ceiling})",
                    f"use replicas: {ceiling} or fewer, or time-slicing",
                )
                break


def _mixed_strategy(ctx: RuleContext) -> Iterator[Diagnostic]:
    strategies = ctx.mig_strategies.pools
    for resolved in ctx.classes:
        if resolved.spec.sharing.strategy != "mps":
            continue
        for pool in sorted({m.group.pool for m in resolved.members}):
            if strategies[pool] == "mixed":
                yield ctx.error(
                    class_path(resolved.index, "sharing"),
                    f"NVIDIA's device plugin refuses MPS with migStrategy mixed, which pool "
                    f"{pool!r} needs (it has MIG-partitioned GPUs beside others)",
                    "put the MPS GPUs in a pool without MIG, or use plugin: gpuconf",
                )
