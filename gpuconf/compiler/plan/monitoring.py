"""Scraping the node runtime: a PodMonitor, and a NetworkPolicy that opens only the metrics port."""

from __future__ import annotations

from gpuconf.api.cluster import Cluster
from gpuconf.compiler.plan.artifact import Artifact, manifest
from gpuconf.compiler.plan.meta import WAVE_CONFIG, metadata

NODE_PODS = {"app.kubernetes.io/name": "gpuconf-node"}
"""The label every `gpuconf node` pod carries, whatever its pool."""


def monitoring(cluster: Cluster) -> list[Artifact]:
    settings = cluster.spec.node.monitoring
    namespace = cluster.spec.namespace
    artifacts = []
    if settings.pod_monitor:
        artifacts.append(
            manifest(
                "monitoring/podmonitor-gpuconf-node.yaml",
                {
                    "apiVersion": "monitoring.coreos.com/v1",
                    "kind": "PodMonitor",
                    "metadata": metadata(
                        cluster, "gpuconf-node", "monitoring", namespace=namespace, wave=WAVE_CONFIG
                    ),
                    "spec": {
                        "selector": {"matchLabels": NODE_PODS},
                        "podMetricsEndpoints": [{"port": "metrics", "path": "/metrics"}],
                    },
                },
            )
        )
    if settings.network_policy:
        scrapers = [
            {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": name}}}
            for name in sorted(set(settings.scraper_namespaces))
        ]
        artifacts.append(
            manifest(
                "monitoring/networkpolicy-gpuconf-node-metrics.yaml",
                {
                    "apiVersion": "networking.k8s.io/v1",
                    "kind": "NetworkPolicy",
                    "metadata": metadata(
                        cluster,
                        "gpuconf-node-metrics",
                        "monitoring",
                        namespace=namespace,
                        wave=WAVE_CONFIG,
                    ),
                    "spec": {
                        "podSelector": {"matchLabels": NODE_PODS},
                        "policyTypes": ["Ingress"],
                        "ingress": [
                            {
                                "from": scrapers,
                                "ports": [
                                    {"port": cluster.spec.node.metrics_port, "protocol": "TCP"}
                                ],
                            }
                        ],
                    },
                },
            )
        )
    return artifacts
