"""Which device list strategy a pool's plugin uses: declared, or the safest the engine runs.

Every Kubernetes gpuconf targets (1.29 and later) passes Allocate's cdi_devices to the runtime
(DevicePluginCDIDevices, on by default from 1.29); whether the runtime then injects them
depends on the engine."""

from __future__ import annotations

from gpuconf.api.cluster import Cluster, NodePool
from gpuconf.api.node_facts import DeviceListStrategy


def engine_runs_cdi(pool: NodePool) -> bool:
    """containerd 2.x (config version 3) turns CDI on by default; containerd 1.6 has no CDI and
    1.7 has it off. k3s decides CDI in its own base template (on only in releases with
    containerd 2, which a pool does not declare), and Docker needs 25 or later (likewise)."""
    runtime = pool.runtime
    return runtime.engine == "containerd" and (runtime.containerd_config_version or 2) >= 3


def device_list_strategy(cluster: Cluster, pool: NodePool) -> DeviceListStrategy:
    declared = cluster.spec.node.device_list_strategy
    if declared is not None:
        return declared
    if pool.platform == "tegra":
        # Jetson's CDI spec comes from the toolkit's CSV mode, which names the iGPU by index only
        # (a UUID-named spec has no device for it), and NVIDIA's plugin takes CDI strategies only
        # where NVML exists; volume-mounts reach the CSV mode on every toolkit.
        return "volume-mounts"
    return "cdi" if engine_runs_cdi(pool) else "volume-mounts"
