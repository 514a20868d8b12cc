"""Scraping the node runtime: a PodMonitor, and a NetworkPolicy that opens only the metrics port."""

from __future__ import annotations

from gpuconf.api.cluster import Cluster
from gpuconf.compiler.plan.artifact import Artifact, manifest
from gpuconf.compiler.plan.meta import WAVE_CONFIG, metadata

NODE_PODS = {"app.kubernetes.io/name": "gpuconf-node"}
"""The label every `gpuconf node` pod carries, whatever its pool."""
MONITORING = ("spec", "node", "monitoring")


def monitoring(cluster: Cluster) -> list[Artifact]:
    settings = cluster.spec.node.monitoring
    namespace = cluster.spec.namespace
    artifacts = []
    if settings.pod_monitor:
        artifacts.append(
            manifest(
                "monitoring/podmonitor-gpuconf-node.yaml",
                "podmonitor.yaml.j2",
                "PodMonitor",
                {
                    "meta": metadata(
                        cluster, "gpuconf-node", "monitoring", namespace=namespace, wave=WAVE_CONFIG
                    ),
                    "pods": NODE_PODS,
                },
                source=MONITORING,
            )
        )
    if settings.network_policy:
        artifacts.append(
            manifest(
                "monitoring/networkpolicy-gpuconf-node-metrics.yaml",
                "networkpolicy.yaml.j2",
                "NetworkPolicy",
                {
                    "meta": metadata(
                        cluster,
                        "gpuconf-node-metrics",
                        "monitoring",
                        namespace=namespace,
                        wave=WAVE_CONFIG,
                    ),
                    "pods": NODE_PODS,
                    "scraper_namespaces": sorted(set(settings.scraper_namespaces)),
                    "port": cluster.spec.node.metrics_port,
                },
                source=MONITORING,
            )
        )
    return artifacts
