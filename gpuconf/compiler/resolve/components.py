"""Where dcgm-exporter runs: read by the plan (its DaemonSets, RBAC, PodMonitor, alerts,
dashboard) and by the rules that check what depends on it."""

from __future__ import annotations

from gpuconf.api.cluster import Cluster, NodePool


def dcgm_exporter_runs_on(cluster: Cluster, pool: NodePool) -> bool:
    return cluster.spec.dcgm_exporter.enabled and pool.platform != "tegra"


def dcgm_exporter_runs_anywhere(cluster: Cluster) -> bool:
    return any(dcgm_exporter_runs_on(cluster, pool) for pool in cluster.spec.node_pools)
