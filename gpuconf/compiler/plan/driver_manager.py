"""NVIDIA's k8s-driver-manager as the driver installer's init container, and what it may do.

Its contract, read from NVIDIA/k8s-driver-manager v0.12.0: `driver-manager uninstall_driver`
(cmd/driver-manager/main.go) reads its settings from the environment (NODE_NAME,
ENABLE_GPU_POD_EVICTION, ENABLE_AUTO_DRAIN, DRAIN_USE_FORCE, DRAIN_POD_SELECTOR_LABEL,
DRAIN_TIMEOUT_SECONDS as a Go duration, DRAIN_DELETE_EMPTYDIR_DATA, OPERATOR_NAMESPACE); where a
driver is loaded it sets each `nvidia.com/gpu.deploy.*` label the node has to
`paused-for-driver-upgrade`, waits for the GPU clients to go (from v0.12.0 every DaemonSet pod
whose nodeSelector names `nvidia.com/gpu.deploy.client`), cordons the node, evicts the pods
that request `nvidia.com/gpu*` or `nvidia.com/mig-*` or hold a `gpu.nvidia.com` claim
(internal/kubernetes/client.go `podUsesGPU`, through the Eviction API, retried while a
PodDisruptionBudget refuses, until DRAIN_TIMEOUT_SECONDS), unloads the modules, uncordons and
sets the labels back. The RBAC below is what those calls need (the GPU Operator's
assets/state-driver/0210_clusterrole.yaml grants the same)."""

from __future__ import annotations

from typing import Any

from gpuconf.api.cluster import Cluster, NodePool
from gpuconf.compiler.plan.artifact import Artifact
from gpuconf.compiler.plan.service_account import bound_cluster_role, service_account

DRIVER_MANAGER_ACCOUNT = "gpuconf-driver-manager"


def driver_manager_container(cluster: Cluster, pool: NodePool) -> dict[str, Any]:
    driver = pool.driver
    assert driver is not None
    env = {
        "ENABLE_GPU_POD_EVICTION": "true",
        # A whole-node drain refuses DaemonSet pods (kubectl's drain without
        # --ignore-daemonsets), and every GPU node runs gpuconf's: it would never succeed.
        "ENABLE_AUTO_DRAIN": "false",
        "DRAIN_USE_FORCE": "false",
        # DRAIN_POD_SELECTOR_LABEL is left unset: its default, "" (main.go), selects every pod;
        # an empty value would not survive the API server (env values are omitempty).
        "DRAIN_TIMEOUT_SECONDS": f"{driver.eviction_timeout_seconds}s",
        "DRAIN_DELETE_EMPTYDIR_DATA": "false",
        # It waits for the GPU Operator's own pods by app= label in this namespace; gpuconf's
        # namespace has none, so it waits only for the deploy.client DaemonSet pods.
        "OPERATOR_NAMESPACE": cluster.spec.namespace,
        # The driver manager itself must run with no GPU (runc), as in the Operator's DaemonSet.
        "NVIDIA_VISIBLE_DEVICES": "void",
    }
    return {
        "name": "k8s-driver-manager",
        "image": cluster.spec.images.driver_manager,
        "command": ["driver-manager"],
        "args": ["uninstall_driver"],
        "env": [
            {"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
            *({"name": k, "value": v} for k, v in env.items()),
        ],
        # Unloading kernel modules and unmounting the old driver's root need privilege.
        "securityContext": {"privileged": True},
        "resources": {"requests": {"cpu": "10m", "memory": "64Mi"}, "limits": {"memory": "256Mi"}},
        "volumeMounts": [
            {"name": "run-nvidia", "mountPath": "/run/nvidia", "mountPropagation": "Bidirectional"},
            {
                "name": "host-root",
                "mountPath": "/host",
                "readOnly": True,
                "mountPropagation": "HostToContainer",
            },
            {"name": "host-sys", "mountPath": "/sys"},
        ],
    }


def driver_manager_rbac(cluster: Cluster) -> list[Artifact]:
    """What k8s-driver-manager's calls need: its Node (labels, cordon), the node's pods (list,
    evict; drain's filters read their DaemonSets), DRA claims (to find GPU pods holding one)."""
    if not any(p.driver is not None and p.driver.install for p in cluster.spec.node_pools):
        return []
    rules = [
        {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list", "patch", "update"]},
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch"]},
        {"apiGroups": [""], "resources": ["pods/eviction"], "verbs": ["create"]},
        {"apiGroups": ["apps"], "resources": ["daemonsets"], "verbs": ["get"]},
        {
            "apiGroups": ["resource.k8s.io"],
            "resources": ["resourceclaims"],
            "verbs": ["get", "list"],
        },
    ]
    return [
        service_account(cluster, "cluster", DRIVER_MANAGER_ACCOUNT, "driver"),
        *bound_cluster_role(cluster, "cluster", DRIVER_MANAGER_ACCOUNT, "driver", rules),
    ]
