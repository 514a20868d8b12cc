"""monitoring.extraLabels add labels to the PodMonitors, the PrometheusRule and the dashboard,
and may set gpuconf's own part-of, component or grafana_dashboard there; never the labels that
mark an object as gpuconf's (resolve/object_labels.py says which and what reads them)."""

from __future__ import annotations

from collections.abc import Iterator

from gpuconf.compiler.resolve.metadata_guard import refusals
from gpuconf.compiler.resolve.object_labels import MONITORING_COMPONENT, OWNER_LABELS, own_labels
from gpuconf.compiler.rules.context import SPEC, RuleContext
from gpuconf.diagnostics import Diagnostic

EXTRA_LABELS = (*SPEC, "node", "monitoring", "extraLabels")


def check(ctx: RuleContext) -> Iterator[Diagnostic]:
    monitoring = ctx.cluster.spec.node.monitoring
    labels = own_labels(ctx.cluster.metadata.name, MONITORING_COMPONENT)
    written = {key: labels[key] for key in OWNER_LABELS}
    for key, value in monitoring.extra_labels.items():
        if written.get(key) == value:
            yield ctx.warning(
                (*EXTRA_LABELS, key),
                f"gpuconf writes {key}: {value!r} on these objects itself; the entry changes "
                "nothing now, and is refused once the two differ",
                f"leave {key} out of extraLabels",
            )
    for refusal in refusals(written, monitoring.extra_labels, OWNER_LABELS):
        yield ctx.error(
            (*EXTRA_LABELS, refusal.key),
            f"gpuconf writes {refusal.key}: {refusal.written!r} on the objects extraLabels "
            f"labels; {refusal.value!r} would replace it",
            f"{refusal.guard.reader}; leave {refusal.key} out of extraLabels",
        )
