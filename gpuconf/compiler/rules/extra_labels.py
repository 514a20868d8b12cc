"""monitoring.extraLabels add labels to the PodMonitors, the PrometheusRule and the dashboard;
they never change one gpuconf writes there itself, which gpuconf and the programs reading those
objects select on (resolve/object_labels.py says which and why)."""

from __future__ import annotations

from collections.abc import Iterator

from gpuconf.compiler.resolve.object_labels import MONITORING_COMPONENT, USES, own_labels
from gpuconf.compiler.rules.context import SPEC, RuleContext
from gpuconf.diagnostics import Diagnostic

EXTRA_LABELS = (*SPEC, "node", "monitoring", "extraLabels")


def check(ctx: RuleContext) -> Iterator[Diagnostic]:
    monitoring = ctx.cluster.spec.node.monitoring
    # grafana_dashboard is not among them: its value is the one the site's Grafana sidecar
    # loads (the grafana chart's sidecar.dashboards.labelValue), which only the site knows.
    written = own_labels(ctx.cluster.metadata.name, MONITORING_COMPONENT)
    for key, value in monitoring.extra_labels.items():
        own = written.get(key)
        if own is None:
            continue
        if value == own:
            yield ctx.warning(
                (*EXTRA_LABELS, key),
                f"gpuconf writes {key}: {own!r} on these objects itself; the entry changes "
                "nothing now, and is refused once the two differ",
                f"leave {key} out of extraLabels",
            )
            continue
        yield ctx.error(
            (*EXTRA_LABELS, key),
            f"gpuconf writes {key}: {own!r} on the objects extraLabels labels; {value!r} would "
            "replace it",
            f"{USES[key]}; leave {key} out of extraLabels",
        )
