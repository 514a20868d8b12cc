"""dcgm-exporter's ServiceAccount and, where it maps DRA claims (KUBERNETES_ENABLE_DRA), the
right to watch ResourceSlices (NVIDIA/dcgm-exporter internal/pkg/transformation/dra.go;
deployment/templates/clusterrole.yaml grants the same)."""

from __future__ import annotations

from gpuconf.api.cluster import Cluster
from gpuconf.compiler.plan.artifact import Artifact, manifest
from gpuconf.compiler.plan.dcgm_exporter import SERVICE_ACCOUNT, SOURCE, runs_anywhere
from gpuconf.compiler.plan.meta import WAVE_CONFIG, metadata


def dcgm_exporter_rbac(cluster: Cluster) -> list[Artifact]:
    if not runs_anywhere(cluster):
        return []
    namespace = cluster.spec.namespace
    artifacts = [
        manifest(
            "telemetry/serviceaccount-dcgm-exporter.yaml",
            "serviceaccount.yaml.j2",
            "ServiceAccount",
            {
                "meta": metadata(
                    cluster, SERVICE_ACCOUNT, "telemetry", namespace=namespace, wave=WAVE_CONFIG
                )
            },
            source=SOURCE,
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
            "clusterrole.yaml.j2",
            "ClusterRole",
            {
                "meta": metadata(cluster, name, "telemetry", wave=WAVE_CONFIG),
                "rules": [
                    {
                        "apiGroups": ["resource.k8s.io"],
                        "resources": ["resourceslices"],
                        "verbs": ["get", "list", "watch"],
                    }
                ],
            },
            source=SOURCE,
        ),
        manifest(
            "telemetry/clusterrolebinding-dcgm-exporter.yaml",
            "clusterrolebinding.yaml.j2",
            "ClusterRoleBinding",
            {
                "meta": metadata(cluster, name, "telemetry", wave=WAVE_CONFIG),
                "role": name,
                "service_account": SERVICE_ACCOUNT,
                "namespace": namespace,
            },
            source=SOURCE,
        ),
    ]
