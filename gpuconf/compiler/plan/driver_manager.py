"""NVIDIA's k8s-driver-manager as the driver installer's init container, and what it may do.

Its contract, read from NVIDIA/k8s-driver-manager v0.12.0: `driver-manager uninstall_driver`
(cmd/driver-manager/main.go) reads its settings from the environment (NODE_NAME,
ENABLE_GPU_POD_EVICTION, ENABLE_AUTO_DRAIN, DRAIN_* for its drain, OPERATOR_NAMESPACE); where a
driver is loaded it sets each `nvidia.com/gpu.deploy.*` label the node has to
`paused-for-driver-upgrade`, waits for the GPU clients to go (from v0.12.0 every DaemonSet pod
whose nodeSelector names `nvidia.com/gpu.deploy.client`), unloads the modules, unmounts the old
driver root and sets the labels back.

Its own eviction stays off, and gpuconf's runs before it (plan/driver_upgrade.py,
node/driver_upgrade.py): it evicts only pods requesting `nvidia.com/gpu*` or `nvidia.com/mig-*`
or holding a `gpu.nvidia.com` claim read through resource.k8s.io/v1 (internal/kubernetes/
client.go `podUsesGPU`), never the `gpuconf.dev/<class>` pods, and with eviction on it cordons
and also uncordons as soon as the old driver is unloaded, before the new one is even installed;
two owners of one cordon would undo each other. With ENABLE_GPU_POD_EVICTION and
ENABLE_AUTO_DRAIN false it neither cordons, evicts, drains nor uncordons (every such call in
uninstallDriver and cleanupOnFailure is behind one of the two). The RBAC below is what its calls
and gpuconf's need."""

from __future__ import annotations

from typing import Any

from gpuconf.api.cluster import Cluster
from gpuconf.compiler.plan.artifact import Artifact
from gpuconf.compiler.plan.driver_upgrade import NODE_NAME
from gpuconf.compiler.plan.driver_upgrade_policy import driver_upgrade_policy
from gpuconf.compiler.plan.service_account import bound_cluster_role, service_account

DRIVER_MANAGER_ACCOUNT = "gpuconf-driver-manager"


def driver_manager_container(cluster: Cluster) -> dict[str, Any]:
    env = {
        # gpuconf's driver-drain, the init container before this one, has evicted the GPU pods.
        "ENABLE_GPU_POD_EVICTION": "false",
        # A whole-node drain refuses DaemonSet pods (kubectl's drain without
        # --ignore-daemonsets), and every GPU node runs gpuconf's: it would never succeed.
        "ENABLE_AUTO_DRAIN": "false",
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
            NODE_NAME,
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
    """What k8s-driver-manager's calls and gpuconf's driver-drain and driver-uncordon need: the
    Node (labels, cordon), the node's pods (list, evict), DRA claims (to find the pods holding
    one). Patching a Node is narrowed to the pod's own by plan/driver_upgrade_policy.py."""
    if not any(p.driver is not None and p.driver.install for p in cluster.spec.node_pools):
        return []
    rules = [
        {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list", "patch", "update"]},
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch"]},
        {"apiGroups": [""], "resources": ["pods/eviction"], "verbs": ["create"]},
        {
            "apiGroups": ["resource.k8s.io"],
            "resources": ["resourceclaims"],
            "verbs": ["get", "list"],
        },
    ]
    return [
        *driver_upgrade_policy(cluster, DRIVER_MANAGER_ACCOUNT),
        service_account(cluster, "cluster", DRIVER_MANAGER_ACCOUNT, "driver"),
        *bound_cluster_role(cluster, "cluster", DRIVER_MANAGER_ACCOUNT, "driver", rules),
    ]
