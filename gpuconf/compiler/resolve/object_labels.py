"""The labels gpuconf writes on the objects it renders, and what selects on each. Labels of the
user's (monitoring.extraLabels, a site template's label blocks) may add labels, never change
one of these: gpuconf and the programs reading its objects would no longer find them."""

from __future__ import annotations

from gpuconf.api.node_facts import POOL_LABEL

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

USES = {
    MANAGED_BY_LABEL: "gpuconf finds the objects it rendered by it: a re-render keeps the "
    "Namespaces it created by it and gpuconf.dev/cluster, and the rendered README lists "
    "gpuconf's pods with -l app.kubernetes.io/managed-by=gpuconf",
    CLUSTER_LABEL: "names the cluster file an object was rendered from: a re-render finds the "
    "Namespaces it created by it, and adopted Namespaces carry only it",
    PART_OF_LABEL: "marks every object gpuconf renders as part of gpuconf (Kubernetes' "
    "recommended app.kubernetes.io labels), for selectors that list all of them",
    COMPONENT_LABEL: "says which part of gpuconf an object belongs to (node, monitoring, "
    "kueue, …), for selectors that list one part",
    NAME_LABEL: "the DaemonSet's selector and the PodMonitors select gpuconf's pods by it",
    POOL_LABEL: "the DaemonSet's selector matches a pool's pods by it, and the PodMonitors turn "
    "it into the gpuconf_pool label that gpuconf's alerts and dashboard group by",
    **dict.fromkeys(
        GRAFANA_DASHBOARD,
        "Grafana's dashboard sidecar loads the dashboard ConfigMap by it (the grafana chart's "
        "sidecar.dashboards.label and labelValue, as kube-prometheus-stack sets them); a sidecar "
        "loading another value gets it from spec.node.monitoring.extraLabels",
    ),
}
"""What selects on each label gpuconf writes: the hint when a user's label would change it."""


def own_labels(cluster: str, component: str, **extra: str) -> dict[str, str]:
    """The labels of every object gpuconf renders for cluster `cluster`."""
    return {
        MANAGED_BY_LABEL: MANAGED_BY,
        PART_OF_LABEL: PART_OF,
        COMPONENT_LABEL: component,
        CLUSTER_LABEL: cluster,
        **extra,
    }
