"""The declared inventory: every pool expanded into groups of identical nodes and their GPUs.

Nodes a pool does not list one by one are identical, so they form one group with a
multiplicity; a 2,000-node fleet is a few dozen groups, not 16,000 GPU records.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import NamedTuple

from gpuconf.api.cluster import Cluster, NodePool
from gpuconf.api.gpu_model import GpuModel
from gpuconf.gpus.catalog import Catalog
from gpuconf.gpus.mig import resolve_layout

# The group of a pool's nodes that are not declared one by one.
UNDECLARED = None


class Gpu(NamedTuple):
    index: int  # type: ignore[assignment]  # NVML's word; shadows tuple.index, never called
    model: GpuModel
    uuid: str | None
    mig: Mapping[str, int] | None
    """The MIG layout {profile: count}; None when MIG is off."""


class NodeGroup(NamedTuple):
    pool: str
    pool_index: int
    node: str | None
    """The declared node's name, or None for the pool's undeclared nodes."""
    node_index: int | None
    """Position of the node in the pool's `nodes` list."""
    size: int
    """How many nodes the group stands for."""
    gpus: tuple[Gpu, ...]


class DeclaredInventory:
    """The groups, indexed once by pool and by node, so that asking for a pool's or a node's
    groups never scans the fleet."""

    __slots__ = ("_by_node", "_by_pool", "groups")

    def __init__(self, groups: tuple[NodeGroup, ...]) -> None:
        self.groups = groups
        by_pool: dict[str, list[NodeGroup]] = {}
        by_node: dict[str, list[NodeGroup]] = {}
        for group in groups:
            by_pool.setdefault(group.pool, []).append(group)
            if group.node is not None:
                by_node.setdefault(group.node, []).append(group)
        self._by_pool = {k: tuple(v) for k, v in by_pool.items()}
        self._by_node = {k: tuple(v) for k, v in by_node.items()}

    def by_pool(self, pool: str) -> Iterator[NodeGroup]:
        return iter(self._by_pool.get(pool, ()))

    def by_node(self, node: str) -> Iterator[NodeGroup]:
        return iter(self._by_node.get(node, ()))


def pool_size(pool: NodePool) -> int:
    return pool.size if pool.size is not None else len(pool.nodes)


def build_inventory(cluster: Cluster, catalog: Catalog) -> DeclaredInventory:
    """Expand the pools of a cluster that passed validation's model checks.

    Unknown models and impossible MIG layouts were reported before; here they are skipped."""
    groups: list[NodeGroup] = []
    for pool_index, pool in enumerate(cluster.spec.node_pools):
        for node_index, node in enumerate(pool.nodes):
            gpus = tuple(
                gpu
                for declared in node.gpus
                if (gpu := _gpu(pool, declared.index, declared.model, declared.uuid, catalog))
            )
            groups.append(NodeGroup(pool.name, pool_index, node.name, node_index, 1, gpus))
        remaining = pool_size(pool) - len(pool.nodes)
        if remaining > 0 and pool.gpus is not None:
            gpus = tuple(
                gpu
                for index in range(pool.gpus.count)
                if (gpu := _gpu(pool, index, None, None, catalog))
            )
            groups.append(NodeGroup(pool.name, pool_index, UNDECLARED, None, remaining, gpus))
    return DeclaredInventory(tuple(groups))


def _gpu(
    pool: NodePool, index: int, model_name: str | None, uuid: str | None, catalog: Catalog
) -> Gpu | None:
    name = model_name or (pool.gpus.model if pool.gpus else None)
    model = catalog.get(name) if name else None
    if model is None:
        return None
    mig: Mapping[str, int] | None = None
    for sharing in pool.mig_layouts():
        if sharing.indices is None or index in sharing.indices:
            mig = resolve_layout(sharing.layout, model)
            break
    return Gpu(index, model, uuid, mig)
