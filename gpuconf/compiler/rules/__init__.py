"""Semantic rules over a typed cluster: each module checks one concern and yields diagnostics."""

from __future__ import annotations

from collections.abc import Callable, Iterator

from gpuconf.compiler.rules import (
    classes,
    dra,
    extra_labels,
    gpu_models,
    gpu_operator,
    jetson_sharing,
    kubernetes_version,
    kueue,
    mig,
    mps,
    names,
    namespaces,
    node_labels,
    node_selection,
    node_settings,
    nvidia_plugin,
    platforms,
    pools,
    quotas,
    sharing_replicas,
)
from gpuconf.compiler.rules.context import RuleContext
from gpuconf.diagnostics import Diagnostic

Rule = Callable[[RuleContext], Iterator[Diagnostic]]


def _kueue_limits(ctx: RuleContext) -> Iterator[Diagnostic]:
    """kueue_limits.check, imported only where a cluster declares Kueue: without it the rule
    says nothing, and its queue plan and Kueue's limits would be a needless import."""
    if ctx.cluster.spec.kueue is None:
        return iter(())
    from gpuconf.compiler.rules import kueue_limits

    return kueue_limits.check(ctx)


# Rules that need only the typed document run first; rules over resolved classes need
# every model name to be known, so they run only when the first group found no error.
DOCUMENT_RULES: tuple[Rule, ...] = (
    names.check,
    namespaces.check,
    gpu_models.check,
    pools.check,
    node_selection.check,
    platforms.check,
    kubernetes_version.check,
    node_settings.check,
    extra_labels.check,
    node_labels.check,
    sharing_replicas.check,
)
INVENTORY_RULES: tuple[Rule, ...] = (
    classes.check,
    quotas.check,
    kueue.check,
    nvidia_plugin.check,
    mig.check,
    gpu_operator.check,
    mps.check,
    dra.check,
    jetson_sharing.check,
    node_labels.check_single,
)
# Rules over the Kueue queues gpuconf plans from the classes and quotas: they need both to
# have passed.
QUEUE_RULES: tuple[Rule, ...] = (_kueue_limits,)

__all__ = ["DOCUMENT_RULES", "INVENTORY_RULES", "QUEUE_RULES", "Rule", "RuleContext"]
