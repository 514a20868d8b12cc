"""Which device list strategy a pool's plugin uses: declared, or the safest the engine runs."""

from __future__ import annotations

from gpuconf.api.base import kubernetes_minor
from gpuconf.api.cluster import Cluster, NodePool
from gpuconf.api.node_config import DeviceListStrategy

CDI_DEVICES_FROM_MINOR = 29
"""The kubelet hands Allocate's cdi_devices to the runtime by default from 1.29
(DevicePluginCDIDevices beta; GA in 1.31); before, it drops them and the pod gets no GPU."""


def engine_runs_cdi(pool: NodePool) -> bool:
    """containerd 2.x (config version 3) turns CDI on by default, and k3s's bundled containerd
    reads the CDI setting setup writes; containerd 1.6 has no CDI, 1.7 has it off, and Docker
    needs 25 or later, which a pool does not declare."""
    runtime = pool.runtime
    if runtime.engine == "containerd":
        return runtime.containerd_config_version >= 3
    return runtime.engine == "k3s"


def device_list_strategy(cluster: Cluster, pool: NodePool) -> DeviceListStrategy:
    declared = cluster.spec.node.device_list_strategy
    if declared is not None:
        return declared
    cdi_ready = kubernetes_minor(cluster.spec.kubernetes.version) >= CDI_DEVICES_FROM_MINOR
    return "cdi" if cdi_ready and engine_runs_cdi(pool) else "volume-mounts"
