"""Cluster-wide objects: namespaces, the RuntimeClass and the node runtime's RBAC."""

from __future__ import annotations

from gpuconf.api.cluster import Cluster
from gpuconf.compiler.plan.artifact import Artifact, manifest
from gpuconf.compiler.plan.meta import WAVE_CONFIG, WAVE_NAMESPACES, metadata

NODE_SERVICE_ACCOUNT = "gpuconf-node"
RUNTIME_CLASS = "nvidia"


def namespaces(cluster: Cluster) -> list[Artifact]:
    names = {cluster.spec.namespace, *(q.namespace for q in cluster.spec.quotas)}
    return [
        manifest(
            f"namespaces/{name}.yaml",
            {
                "apiVersion": "v1",
                "kind": "Namespace",
                "metadata": metadata(cluster, name, "namespace", wave=WAVE_NAMESPACES),
            },
        )
        for name in sorted(names)
    ]


def runtime_class(cluster: Cluster) -> Artifact:
    return manifest(
        "cluster/runtimeclass-nvidia.yaml",
        {
            "apiVersion": "node.k8s.io/v1",
            "kind": "RuntimeClass",
            "metadata": metadata(cluster, RUNTIME_CLASS, "runtime", wave=WAVE_CONFIG),
            "handler": RUNTIME_CLASS,
        },
    )


def node_rbac(cluster: Cluster) -> list[Artifact]:
    """`gpuconf node` annotates its Node with inventory drift, and nothing else."""
    namespace = cluster.spec.namespace
    role_name = f"gpuconf-node-{namespace}"
    return [
        manifest(
            "cluster/serviceaccount-gpuconf-node.yaml",
            {
                "apiVersion": "v1",
                "kind": "ServiceAccount",
                "metadata": metadata(
                    cluster,
                    NODE_SERVICE_ACCOUNT,
                    "node-runtime",
                    namespace=namespace,
                    wave=WAVE_CONFIG,
                ),
            },
        ),
        manifest(
            "cluster/clusterrole-gpuconf-node.yaml",
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "ClusterRole",
                "metadata": metadata(cluster, role_name, "node-runtime", wave=WAVE_CONFIG),
                "rules": [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "patch"]}],
            },
        ),
        manifest(
            "cluster/clusterrolebinding-gpuconf-node.yaml",
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "ClusterRoleBinding",
                "metadata": metadata(cluster, role_name, "node-runtime", wave=WAVE_CONFIG),
                "roleRef": {
                    "apiGroup": "rbac.authorization.k8s.io",
                    "kind": "ClusterRole",
                    "name": role_name,
                },
                "subjects": [
                    {"kind": "ServiceAccount", "name": NODE_SERVICE_ACCOUNT, "namespace": namespace}
                ],
            },
        ),
    ]
