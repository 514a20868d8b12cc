"""dcgm-exporter's ServiceAccount and, where it maps DRA claims (KUBERNETES_ENABLE_DRA), the
right to watch ResourceSlices (NVIDIA/dcgm-exporter internal/pkg/transformation/dra.go;
deployment/templates/clusterrole.yaml grants the same)."""

from __future__ import annotations

from gpuconf.api.cluster import Cluster
from gpuconf.compiler.plan.artifact import Artifact
from gpuconf.compiler.plan.dcgm_exporter import SERVICE_ACCOUNT, SOURCE
from gpuconf.compiler.plan.service_account import bound_cluster_role, service_account
from gpuconf.compiler.resolve.components import dcgm_exporter_runs_anywhere


def dcgm_exporter_rbac(cluster: Cluster) -> list[Artifact]:
    if not dcgm_exporter_runs_anywhere(cluster):
        return []
    artifacts = [service_account(cluster, "telemetry", SERVICE_ACCOUNT, "telemetry", SOURCE)]
    if cluster.spec.allocation == "dra":
        read_slices = {
            "apiGroups": ["resource.k8s.io"],
            "resources": ["resourceslices"],
            "verbs": ["get", "list", "watch"],
        }
        artifacts += bound_cluster_role(
            cluster, "telemetry", SERVICE_ACCOUNT, "telemetry", [read_slices], SOURCE
        )
    return artifacts
