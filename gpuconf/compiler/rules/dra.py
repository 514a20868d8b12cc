"""Dynamic Resource Allocation rules, for clusters with allocation: dra only."""

from __future__ import annotations

from collections.abc import Iterator

from gpuconf.compiler.rules.context import RuleContext
from gpuconf.diagnostics import Diagnostic


def check(ctx: RuleContext) -> Iterator[Diagnostic]:
    if ctx.cluster.spec.allocation != "dra":
        if any(c.claim is not None for c in ctx.cluster.spec.resource_classes):
            from gpuconf.compiler.rules import dra_claims

            yield from dra_claims.check(ctx)
        return
    # Imported here: the CEL proof and the driver's device model are most of a device-plugin
    # cluster's validate start-up otherwise.
    from gpuconf.compiler.rules import dra_claims, dra_kubernetes, dra_selectors

    yield from dra_kubernetes.check(ctx)
    yield from dra_selectors.check(ctx)
    yield from dra_claims.check(ctx)
