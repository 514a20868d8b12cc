"""Classes over Jetson GPUs share them by time-slicing only."""

from __future__ import annotations

from collections.abc import Iterator

from gpuconf.compiler.rules.context import RuleContext, class_path
from gpuconf.diagnostics import Diagnostic


def check(ctx: RuleContext) -> Iterator[Diagnostic]:
    tegra = {p.name for p in ctx.cluster.spec.node_pools if p.platform == "tegra"}
    for resolved in ctx.classes:
        pools = [p for p in resolved.pools if p in tegra]
        if pools and resolved.spec.sharing.strategy == "mps":
            yield ctx.error(
                class_path(resolved.index, "sharing", "strategy"),
                f"class {resolved.name!r} shares Jetson GPUs (pool {', '.join(pools)}) with MPS; "
                "Jetson has no MPS control daemon and no NVML to set compute modes",
                "use strategy: time-slicing",
            )
