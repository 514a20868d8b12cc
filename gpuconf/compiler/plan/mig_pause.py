"""Where GPU clients run so that they step aside while the GPU Operator's MIG manager
repartitions a node (gpuconf's plugin, NVIDIA's plugin, NVIDIA's MPS daemon).

Before it applies a layout the MIG manager sets `nvidia.com/gpu.deploy.device-plugin` (and, from
mig-parted v0.15.0, `nvidia.com/gpu.deploy.client`) to `paused-for-mig-change`, leaving a `false`
as it is, and back to `true` afterwards (gpus/gpu_operator.py). The Operator's own DaemonSets
select `=true`; ours run on nodes without the label as well (clusters without the Operator), so
they require only that the device-plugin label is not one of the stop values. Beside an Operator
whose MIG manager waits for third-party clients, a MIG pool's clients also select
`nvidia.com/gpu.deploy.client=true`: `waitForPodsWithNodeSelector` in
`pkg/mig/reconfigure/reconfigure.go` waits only for DaemonSet pods whose nodeSelector has that
key; NVIDIA's k8s-driver-manager (v0.12.0), which gpuconf's driver installer runs, waits for
the same pods, so a pool whose driver gpuconf installs selects it too. Where the Operator keeps
its own device plugin for other nodes, ours select `nvidia.com/gpu.deploy.device-plugin=false`,
the label that keeps the Operator's off the node."""

from __future__ import annotations

from typing import Any

from gpuconf.api.cluster import Cluster, NodePool
from gpuconf.compiler.plan.pod import on_pool_nodes
from gpuconf.gpus.gpu_operator import DEVICE_PLUGIN_DEPLOY, PAUSED, client_node_selector
from gpuconf.gpus.label_owner import gpuconf_writes_gfd_labels

STOP_VALUES = ["false", PAUSED]


def pause_affinity() -> dict[str, Any]:
    # NotIn also matches nodes that have no such label.
    return {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {
                        "matchExpressions": [
                            {
                                "key": DEVICE_PLUGIN_DEPLOY,
                                "operator": "NotIn",
                                "values": STOP_VALUES,
                            }
                        ]
                    }
                ]
            }
        }
    }


def on_gpu_client_nodes(cluster: Cluster, pool: NodePool) -> dict[str, Any]:
    """`on_pool_nodes` for a GPU client: the pool's nodes, minus any the MIG manager is
    repartitioning, and where the hand-off's labels allow it (gpus/gpu_operator.py)."""
    placement = on_pool_nodes(pool)
    extra = client_node_selector(**pool_client_facts(cluster, pool))
    placement["nodeSelector"] = {**placement["nodeSelector"], **extra}
    if DEVICE_PLUGIN_DEPLOY not in extra:
        placement["affinity"] = pause_affinity()
    return placement


def pool_client_facts(cluster: Cluster, pool: NodePool) -> dict[str, Any]:
    """The arguments of gpus/gpu_operator.py's label functions for one pool."""
    operator = cluster.spec.gpu_operator
    return {
        "release": operator.version if operator is not None else None,
        "mig": bool(pool.mig_layouts()),
        "driver_managed": pool.driver is not None and pool.driver.install,
        "operator_device_plugin": operator is not None and operator.device_plugin,
        "gfd_labels": gpuconf_writes_gfd_labels(cluster.spec),
    }
