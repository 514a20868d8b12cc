"""The labels that pick a pool's nodes: what its pods' nodeSelector and its Kueue flavor's
nodeLabels both hold."""

from __future__ import annotations

from gpuconf.api.cluster import NodePool
from gpuconf.api.cluster.pool import ARCH_LABEL
from gpuconf.api.node_facts import POOL_LABEL


def node_selector(pool: NodePool) -> dict[str, str]:
    selector = dict(pool.node_selector) or {POOL_LABEL: pool.name}
    architecture = pool.cpu_architecture()
    if architecture is not None:
        selector[ARCH_LABEL] = architecture
    return selector
