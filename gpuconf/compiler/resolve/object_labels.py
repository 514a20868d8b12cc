"""The labels gpuconf writes on the objects it renders, and which of them something selects on.
Labels of the user's (monitoring.extraLabels, a site template's label blocks) add labels and may
change gpuconf's others, never those: gpuconf and the programs reading its objects would no
longer find them (metadata_guard.py holds that rule, for annotations too)."""

from __future__ import annotations

from gpuconf.api.node_facts import POOL_LABEL
from gpuconf.compiler.resolve.metadata_guard import Guard

MANAGED_BY_LABEL = "app.kubernetes.io/managed-by"
PART_OF_LABEL = "app.kubernetes.io/part-of"
COMPONENT_LABEL = "app.kubernetes.io/component"
NAME_LABEL = "app.kubernetes.io/name"
CLUSTER_LABEL = "gpuconf.dev/cluster"
MANAGED_BY = "gpuconf"
PART_OF = "gpuconf"

MONITORING_COMPONENT = "monitoring"
"""The component of the PodMonitors, the PrometheusRule and the dashboard: what
monitoring.extraLabels labels."""

GRAFANA_DASHBOARD = {"grafana_dashboard": "1"}
"""The label Grafana's dashboard sidecar loads ConfigMaps by (the grafana chart's
sidecar.dashboards.label and labelValue, as kube-prometheus-stack sets them)."""

OWNER_LABELS = {
    MANAGED_BY_LABEL: Guard(
        "it marks what gpuconf rendered: a re-render keeps the Namespaces it created by it and "
        "gpuconf.dev/cluster, and the rendered README lists gpuconf's pods with "
        "-l app.kubernetes.io/managed-by=gpuconf"
    ),
    CLUSTER_LABEL: Guard(
        "it names the cluster file an object was rendered from: a re-render finds the "
        "Namespaces it created by it, and adopted Namespaces carry only it"
    ),
}
"""The labels that mark an object as gpuconf's, on every object it renders, and what reads each:
a user's label (monitoring.extraLabels, a site template's block) may not change them. The
others gpuconf writes (part-of, component, grafana_dashboard) nothing of gpuconf's selects on,
and a user may set them."""

POD_SELECTOR_LABELS = {
    NAME_LABEL: Guard("the DaemonSet's selector and the PodMonitors select gpuconf's pods by it"),
    POOL_LABEL: Guard(
        "the DaemonSet's selector matches a pool's pods by it, and the PodMonitors turn it into "
        "the gpuconf_pool label that gpuconf's alerts and dashboard group by"
    ),
}
"""What reads the labels a DaemonSet's selector matches its pods by (Kubernetes refuses a
DaemonSet whose pod template does not match its selector)."""
SELECTED = Guard("the DaemonSet's selector matches its pods by it")
"""Any other label a DaemonSet's selector matches."""


def own_labels(cluster: str, component: str, **extra: str) -> dict[str, str]:
    """The labels of every object gpuconf renders for cluster `cluster`."""
    return {
        MANAGED_BY_LABEL: MANAGED_BY,
        PART_OF_LABEL: PART_OF,
        COMPONENT_LABEL: component,
        CLUSTER_LABEL: cluster,
        **extra,
    }
