"""A pool's ConfigMap holding one config file: how every per-pool config reaches its nodes."""

from __future__ import annotations

from gpuconf.api.cluster import Cluster, NodePool
from gpuconf.api.node_facts import POOL_LABEL
from gpuconf.compiler.plan.artifact import Artifact, manifest
from gpuconf.compiler.plan.meta import WAVE_CONFIG, metadata
from gpuconf.compiler.plan.pod import pool_source


def pool_config_map(
    cluster: Cluster, pool: NodePool, stem: str, name: str, component: str, files: dict[str, str]
) -> Artifact:
    """ConfigMap `name` in the cluster's namespace, rendered to pools/<pool>/configmap-<stem>.yaml."""
    return manifest(
        f"pools/{pool.name}/configmap-{stem}.yaml",
        "configmap.yaml.j2",
        "ConfigMap",
        {
            "meta": metadata(
                cluster,
                name,
                component,
                namespace=cluster.spec.namespace,
                wave=WAVE_CONFIG,
                **{POOL_LABEL: pool.name},
            ),
            "data": files,
        },
        source=pool_source(cluster, pool),
    )
