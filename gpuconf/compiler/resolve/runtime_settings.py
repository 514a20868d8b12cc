"""What `gpuconf node setup` configures on a pool's hosts, from the pool and the cluster."""

from __future__ import annotations

from gpuconf.api.cluster import Cluster, NodePool
from gpuconf.api.node_config import RuntimeSettings


def runtime_settings(cluster: Cluster, pool: NodePool) -> RuntimeSettings:
    runtime = pool.runtime
    return RuntimeSettings(
        engine=runtime.engine,
        set_as_default=runtime.set_as_default,
        binary_path=runtime.binary_path,
        containerd_config_version=runtime.containerd_config_version,
        restart=runtime.restart,
        revert_on_stop=runtime.revert_on_stop,
        driver_root=pool.driver_root(),
        # DRA drivers hand devices over as CDI names; the cdi device list strategy turns it on
        # from the node config itself.
        enable_cdi=cluster.spec.allocation == "dra",
    )
