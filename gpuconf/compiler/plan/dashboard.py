"""A Grafana dashboard, per class: capacity, allocated, quota and utilisation, as a ConfigMap
Grafana's dashboard sidecar loads (label grafana_dashboard: "1", as kube-prometheus-stack sets
its sidecar up).

The queries read series that exist where kube-prometheus-stack runs: kube-state-metrics
(kubernetes/kube-state-metrics v2.20, internal/store/node.go kube_node_status_allocatable and
pod.go kube_pod_container_resource_requests, whose `resource` label is the extended resource
name with every character outside [a-zA-Z0-9_] replaced by '_' (SanitizeLabelName);
resourcequota.go kube_resourcequota, whose `resource` is the name as written) and
dcgm-exporter's DCGM_FI_DEV_GPU_UTIL, whose pod and namespace name the GPU's holder.
"""

from __future__ import annotations

import json
import re
from typing import Any

from gpuconf.api.cluster import Cluster
from gpuconf.api.short_names import shortened
from gpuconf.compiler.plan.artifact import Artifact, manifest
from gpuconf.compiler.plan.meta import WAVE_CONFIG, metadata
from gpuconf.compiler.plan.monitoring import MONITORING, labelled
from gpuconf.compiler.plan.quotas import device_plugin_quota_key
from gpuconf.compiler.resolve.class_selection import ResolvedClass
from gpuconf.compiler.resolve.components import dcgm_exporter_runs_anywhere
from gpuconf.compiler.resolve.object_labels import GRAFANA_DASHBOARD, MONITORING_COMPONENT

_NOT_LABEL_CHARACTERS = re.compile(r"[^a-zA-Z0-9_]")


GRAFANA_UID_LENGTH = 40
"""Grafana refuses a longer dashboard uid (grafana/grafana pkg/util/shortid_generator.go,
MaxUIDLength, ValidateUID), and its sidecar-provisioned dashboard with it; a cluster's name
may be 63 characters."""


def ksm_resource(resource: str) -> str:
    """kube-state-metrics' SanitizeLabelName."""
    return _NOT_LABEL_CHARACTERS.sub("_", resource)


def _queries(resolved: ResolvedClass) -> dict[str, str]:
    resource = ksm_resource(resolved.resource_name)
    running = '(kube_pod_status_phase{phase="Running"} == 1)'
    requests = f'kube_pod_container_resource_requests{{resource="{resource}"}}'
    return {
        "Capacity": f'sum(kube_node_status_allocatable{{resource="{resource}"}})',
        "Allocated": f"sum({requests} and on (namespace, pod) {running})",
        "Quota": (
            f'sum(kube_resourcequota{{type="hard", resource="{device_plugin_quota_key(resolved)}"}})'
        ),
        "Utilisation (%)": (
            f"avg(DCGM_FI_DEV_GPU_UTIL and on (namespace, pod) ({requests} and on "
            f"(namespace, pod) {running}))"
        ),
    }


def _panel(title: str, index: int, targets: list[dict[str, str]]) -> dict[str, Any]:
    return {
        "id": index + 1,
        "type": "timeseries",
        "title": title,
        "datasource": {"type": "prometheus", "uid": "${datasource}"},
        "gridPos": {"h": 8, "w": 12, "x": 12 * (index % 2), "y": 8 * (index // 2)},
        "fieldConfig": {"defaults": {"unit": "percent" if "%" in title else "none"}},
        "targets": targets,
    }


def dashboard_json(cluster: Cluster, classes: tuple[ResolvedClass, ...]) -> str:
    per_class = {c.name: _queries(c) for c in classes}
    titles = ["Capacity", "Allocated", "Quota", "Utilisation (%)"]
    panels = [
        _panel(
            title,
            index,
            [
                {"refId": f"C{n}", "expr": queries[title], "legendFormat": name}
                for n, (name, queries) in enumerate(sorted(per_class.items()))
            ],
        )
        for index, title in enumerate(titles)
    ]
    board = {
        "title": f"gpuconf: {cluster.metadata.name}",
        "uid": shortened(f"gpuconf-{cluster.metadata.name}", GRAFANA_UID_LENGTH),
        "tags": ["gpuconf", "gpu"],
        "schemaVersion": 39,
        "time": {"from": "now-6h", "to": "now"},
        "templating": {
            "list": [
                {
                    "name": "datasource",
                    "type": "datasource",
                    "query": "prometheus",
                    "label": "Data source",
                }
            ]
        },
        "panels": panels,
    }
    return json.dumps(board, indent=2, sort_keys=True) + "\n"


def dashboard(cluster: Cluster, classes: tuple[ResolvedClass, ...]) -> list[Artifact]:
    """Device-plugin clusters only: DRA claims are no extended resources kube-state-metrics counts."""
    settings = cluster.spec.node.monitoring
    if not settings.dashboard or cluster.spec.allocation == "dra" or not classes:
        return []
    if not dcgm_exporter_runs_anywhere(cluster):
        return []
    meta = metadata(
        cluster, "gpuconf-dashboard", MONITORING_COMPONENT, namespace=cluster.spec.namespace,
        wave=WAVE_CONFIG, **GRAFANA_DASHBOARD,
    )  # fmt: skip
    return [
        manifest(
            "monitoring/configmap-gpuconf-dashboard.yaml",
            "grafana-dashboard-configmap.yaml.j2",
            "ConfigMap",
            {
                "meta": labelled(cluster, meta),
                "data": {f"gpuconf-{cluster.metadata.name}.json": dashboard_json(cluster, classes)},
            },
            source=MONITORING,
        )
    ]
