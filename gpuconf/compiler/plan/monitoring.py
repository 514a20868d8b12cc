"""Scraping: PodMonitors for the node runtime and dcgm-exporter, and a NetworkPolicy that
opens only the node runtime's metrics port.

The PodMonitors are on by default and sit in gpuconf's namespace, beside the pods they select:
with no namespaceSelector the Prometheus Operator discovers pods in the monitor's own namespace
(prometheus-operator pkg/prometheus/promcfg.go, getNamespacesFromNamespaceSelector)."""

from __future__ import annotations

from typing import Any

from gpuconf.api.cluster import Cluster
from gpuconf.compiler.plan import dcgm_exporter
from gpuconf.compiler.plan.artifact import Artifact, manifest
from gpuconf.compiler.plan.meta import WAVE_CONFIG, metadata, optional_kind_metadata
from gpuconf.compiler.resolve.components import dcgm_exporter_runs_anywhere
from gpuconf.compiler.resolve.object_labels import MONITORING_COMPONENT, NAME_LABEL
from gpuconf.gpus.label_owner import runs_node_runtime

NODE_PODS = {NAME_LABEL: "gpuconf-node"}
"""The label every `gpuconf node` pod carries, whatever its pool."""
MONITORING = ("spec", "node", "monitoring")
DCGM_PODS = {NAME_LABEL: dcgm_exporter.APP}
NODE_MONITOR = "gpuconf-node"
DCGM_MONITOR = "dcgm-exporter"

POOL_SERIES_LABEL = "gpuconf_pool"
NODE_SERIES_LABEL = "node"
# Every series says which pool and node it came from; the alerts and the dashboard group by them.
SERIES_LABELS = [
    {
        "sourceLabels": ["__meta_kubernetes_pod_label_gpuconf_dev_pool"],
        "targetLabel": POOL_SERIES_LABEL,
    },
    {"sourceLabels": ["__meta_kubernetes_pod_node_name"], "targetLabel": NODE_SERIES_LABEL},
]
# dcgm-exporter labels a GPU's series with the pod, namespace and container holding it; the
# exporter pod's own names, which Prometheus would add, would read as that holder.
EXPORTER_OWN_LABELS = "pod|namespace|container"


def scrape_job(cluster: Cluster, monitor: str) -> str:
    """The `job` label of the targets `monitor` (NODE_MONITOR or DCGM_MONITOR) stands for, `up`
    included: the PodMonitor's, "<namespace>/<name>" with no jobLabel (prometheus-operator
    pkg/prometheus/promcfg.go, generatePodMonitorConfig); without PodMonitors, the site's own
    scrape job (monitoring.scrapeJobs, which a rule requires where the alerts are rendered)."""
    settings = cluster.spec.node.monitoring
    if settings.pod_monitor:
        return f"{cluster.spec.namespace}/{monitor}"
    jobs = settings.scrape_jobs
    job = None if jobs is None else jobs.node if monitor == NODE_MONITOR else jobs.dcgm_exporter
    if job is None:
        raise ValueError(f"no scrape job for {monitor}: the monitoring rule should have refused")
    return job


def labelled(cluster: Cluster, meta: dict[str, Any]) -> dict[str, Any]:
    """`meta` (a monitoring object's) with monitoring.extraLabels added: they only add labels,
    since validate refuses one that changes gpuconf's own (rules/extra_labels.py)."""
    meta["labels"].update(cluster.spec.node.monitoring.extra_labels)
    return meta


def _pod_monitor(
    cluster: Cluster, name: str, pods: dict[str, str], dropped_labels: str | None
) -> Artifact:
    """`dropped_labels`: a regex of labels dropped, if any (podmonitor.yaml.j2 writes the
    labeldrop rule: its action is the CRD's enum, not a value)."""
    meta = optional_kind_metadata(cluster, name, MONITORING_COMPONENT, cluster.spec.namespace)
    return manifest(
        f"monitoring/podmonitor-{name}.yaml",
        "podmonitor.yaml.j2",
        "PodMonitor",
        {
            "meta": labelled(cluster, meta),
            "pods": pods,
            "series_labels": SERIES_LABELS,
            "dropped_labels": dropped_labels,
        },
        source=MONITORING,
    )


def monitoring(cluster: Cluster) -> list[Artifact]:
    settings = cluster.spec.node.monitoring
    namespace = cluster.spec.namespace
    node_runtime = runs_node_runtime(cluster.spec)
    artifacts = []
    if settings.pod_monitor and node_runtime:
        artifacts.append(_pod_monitor(cluster, NODE_MONITOR, NODE_PODS, None))
    if settings.pod_monitor and dcgm_exporter_runs_anywhere(cluster):
        artifacts.append(_pod_monitor(cluster, DCGM_MONITOR, DCGM_PODS, EXPORTER_OWN_LABELS))
    if settings.network_policy and node_runtime:
        artifacts.append(_network_policy(cluster, namespace))
    return artifacts


def _network_policy(cluster: Cluster, namespace: str) -> Artifact:
    settings = cluster.spec.node.monitoring
    return manifest(
        "monitoring/networkpolicy-gpuconf-node-metrics.yaml",
        "networkpolicy.yaml.j2",
        "NetworkPolicy",
        {
            "meta": metadata(
                cluster,
                "gpuconf-node-metrics",
                MONITORING_COMPONENT,
                namespace=namespace,
                wave=WAVE_CONFIG,
            ),
            "pods": NODE_PODS,
            "scraper_namespaces": sorted(set(settings.scraper_namespaces)),
            "port": cluster.spec.node.metrics_port,
        },
        source=MONITORING,
    )
