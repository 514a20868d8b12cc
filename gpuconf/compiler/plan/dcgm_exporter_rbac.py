"""dcgm-exporter's ServiceAccount and, where it maps DRA claims (KUBERNETES_ENABLE_DRA), the
right to watch ResourceSlices (NVIDIA/dcgm-exporter internal/pkg/transformation/dra.go;
deployment/templates/clusterrole.yaml grants the same)."""

from __future__ import annotations

from gpuconf.api.cluster import Cluster
from gpuconf.compiler.plan.artifact import Artifact, manifest
from gpuconf.compiler.plan.dcgm_exporter import SERVICE_ACCOUNT, runs_anywhere
from gpuconf.compiler.plan.meta import WAVE_CONFIG, metadata


def dcgm_exporter_rbac(cluster: Cluster) -> list[Artifact]:
    if not runs_anywhere(cluster):
        return []
    namespace = cluster.spec.namespace
    artifacts = [
        manifest(
            "telemetry/serviceaccount-dcgm-exporter.yaml",
            {
                "apiVersion": "v1",
                "kind": "ServiceAccount",
                "metadata": metadata(
                    cluster, SERVICE_ACCOUNT, "telemetry", namespace=namespace, wave=WAVE_CONFIG
                ),
            },
        )
    ]
    if cluster.spec.allocation == "dra":
        artifacts += _resource_slice_reader(cluster)
    return artifacts


def _resource_slice_reader(cluster: Cluster) -> list[Artifact]:
    namespace = cluster.spec.namespace
    name = f"dcgm-exporter-{namespace}"
    return [
        manifest(
            "telemetry/clusterrole-dcgm-exporter.yaml",
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "ClusterRole",
                "metadata": metadata(cluster, name, "telemetry", wave=WAVE_CONFIG),
                "rules": [
                    {
                        "apiGroups": ["resource.k8s.io"],
                        "resources": ["resourceslices"],
                        "verbs": ["get", "list", "watch"],
                    }
                ],
            },
        ),
        manifest(
            "telemetry/clusterrolebinding-dcgm-exporter.yaml",
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "ClusterRoleBinding",
                "metadata": metadata(cluster, name, "telemetry", wave=WAVE_CONFIG),
                "roleRef": {
                    "apiGroup": "rbac.authorization.k8s.io",
                    "kind": "ClusterRole",
                    "name": name,
                },
                "subjects": [
                    {"kind": "ServiceAccount", "name": SERVICE_ACCOUNT, "namespace": namespace}
                ],
            },
        ),
    ]
