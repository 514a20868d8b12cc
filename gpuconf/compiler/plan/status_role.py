"""A read-only ClusterRole for `gpuconf status` and `gpuconf import cluster`: what they list, and
nothing else. gpuconf binds it to no one; bind it to the CI identity or group that runs them."""

from __future__ import annotations

from gpuconf.api.cluster import Cluster
from gpuconf.compiler.plan.artifact import Artifact, manifest
from gpuconf.compiler.plan.meta import WAVE_CONFIG, metadata

STATUS_ROLE_PATH = "cluster/clusterrole-gpuconf-status.yaml"
# adopt/live/cluster_api.py lists exactly these (the DRA ones for allocation: dra clusters).
READ = [
    {"apiGroups": [""], "resources": ["nodes", "resourcequotas"], "verbs": ["get", "list"]},
    {
        "apiGroups": ["resource.k8s.io"],
        "resources": ["deviceclasses", "resourceslices"],
        "verbs": ["get", "list"],
    },
]


def status_role(cluster: Cluster) -> Artifact:
    name = f"gpuconf-status-{cluster.spec.namespace}"
    return manifest(
        STATUS_ROLE_PATH,
        "clusterrole.yaml.j2",
        "ClusterRole",
        {"meta": metadata(cluster, name, "status", wave=WAVE_CONFIG), "rules": READ},
    )
