"""The declared inventory: every pool expanded into groups of identical nodes and their GPUs.

Nodes a pool does not list one by one are identical, so they form one group with a
multiplicity; a 2,000-node fleet is a few dozen groups, not 16,000 GPU records.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import NamedTuple

from gpuconf.api.cluster import Cluster, DeclaredGpu, NodePool
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


class NodeGroup:
    """Nodes of one pool with the same GPUs: a declared node, or the pool's undeclared nodes."""

    __slots__ = ("_gpus", "node", "node_index", "pool", "pool_index", "shape", "size", "uuids")

    def __init__(
        self,
        pool: str,
        pool_index: int,
        node: str | None,
        node_index: int | None,
        size: int,
        shape: tuple[Gpu, ...],
        uuids: tuple[str | None, ...] | None = None,
    ) -> None:
        if uuids is not None and len(uuids) != len(shape):
            raise ValueError("a node's UUIDs and its GPUs disagree")
        self.pool = pool
        self.pool_index = pool_index
        self.node = node
        """The declared node's name, or None for the pool's undeclared nodes."""
        self.node_index = node_index
        """Position of the node in the pool's `nodes` list."""
        self.size = size
        """How many nodes the group stands for."""
        self.shape = shape
        """The GPUs without their UUIDs: one tuple, the same object, for every group of the pool
        whose GPUs are alike (what depends on a GPU's index, model and layout alone is worked
        out once per shape)."""
        self.uuids = uuids
        """A declared node's GPUs' UUIDs (None where it declares none), in the order of
        `shape`; None for the undeclared nodes."""
        self._gpus: tuple[Gpu, ...] | None = None

    @property
    def gpus(self) -> tuple[Gpu, ...]:
        """`shape` with each GPU's UUID. Built when first asked: a fleet's declared GPUs are
        thousands, and most steps need their shape or their UUIDs alone."""
        if self._gpus is None:
            self._gpus = self.shape if self.uuids is None else _with_uuids(self.shape, self.uuids)
        return self._gpus

    def gpu_uuids(self) -> list[str | None]:
        """Each GPU's UUID, in the order of `shape`."""
        return [None] * len(self.shape) if self.uuids is None else list(self.uuids)


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
        pool_gpus = _PoolGpus(pool, catalog)
        for node_index, node in enumerate(pool.nodes):
            shape, uuids = pool_gpus.node(node.gpus)
            groups.append(NodeGroup(pool.name, pool_index, node.name, node_index, 1, shape, uuids))
        remaining = pool_size(pool) - len(pool.nodes)
        if remaining > 0 and pool.gpus is not None:
            shape = pool_gpus.undeclared(pool.gpus.count)
            groups.append(NodeGroup(pool.name, pool_index, UNDECLARED, None, remaining, shape))
    return DeclaredInventory(tuple(groups))


# NamedTuple's own __new__ is a Python function; a fleet builds thousands of GPUs, and
# tuple.__new__ builds the same tuple without that call.
_new_tuple = tuple.__new__


class _PoolGpus:
    """A pool's GPUs, each index and model resolved once: declared nodes repeat the same few
    GPUs, UUIDs aside (a 50-node pool of 8 GPUs is 400 GPUs but 8 resolutions). The GPUs of one
    index and model share their model and MIG layout objects, which nothing changes."""

    __slots__ = ("_alike", "_catalog", "_model", "_pool", "_resolved", "_shapes")

    def __init__(self, pool: NodePool, catalog: Catalog) -> None:
        self._pool = pool
        self._catalog = catalog
        self._model = pool.gpus.model if pool.gpus else None
        self._resolved: dict[tuple[int, str | None], Gpu | None] = {}
        self._shapes: dict[tuple[tuple[int, str | None], ...], tuple[Gpu, ...]] = {}
        self._alike: dict[tuple[int, ...], tuple[Gpu, ...]] = {}

    def resolve(self, index: int, model_name: str | None) -> Gpu | None:
        """The GPU at `index` (of `model_name` where a node declares one), without a UUID."""
        key = (index, model_name or self._model)
        if key in self._resolved:
            return self._resolved[key]
        found = self._resolved[key] = _gpu(self._pool, *key, self._catalog)
        return found

    def node(
        self, declared: Sequence[DeclaredGpu]
    ) -> tuple[tuple[Gpu, ...], tuple[str | None, ...]]:
        """A declared node's shape, found once for the pool's nodes that declare the same
        indices and models, and its GPUs' UUIDs in the shape's order."""
        keys = tuple([(gpu.index, gpu.model) for gpu in declared])
        shape = self._shapes.get(keys)
        if shape is None:
            shape = self._shapes[keys] = self._shape(keys)
        if len(shape) != len(declared):  # a model the catalog does not know: left out
            known = [gpu for gpu in declared if self.resolve(gpu.index, gpu.model)]
            return shape, tuple([gpu.uuid for gpu in known])
        return shape, tuple([gpu.uuid for gpu in declared])

    def _shape(self, keys: tuple[tuple[int, str | None], ...]) -> tuple[Gpu, ...]:
        resolved = (self.resolve(*key) for key in keys)
        shape = tuple(gpu for gpu in resolved if gpu is not None)
        # Nodes that declare other models (or none) but come to the same GPUs share one shape.
        return self._alike.setdefault(tuple(map(id, shape)), shape)

    def undeclared(self, count: int) -> tuple[Gpu, ...]:
        """The GPUs of the pool's undeclared nodes."""
        return self._shape(tuple((index, None) for index in range(count)))


def _with_uuids(shape: tuple[Gpu, ...], uuids: tuple[str | None, ...]) -> tuple[Gpu, ...]:
    return tuple(
        gpu if uuid is None else _new_tuple(Gpu, (gpu.index, gpu.model, uuid, gpu.mig))
        for gpu, uuid in zip(shape, uuids, strict=True)
    )


def _gpu(pool: NodePool, index: int, name: str | None, catalog: Catalog) -> Gpu | None:
    """The GPU at `index` of the pool's nodes, of model `name`, its UUID unset; None for a
    model the catalog does not know."""
    model = catalog.get(name) if name else None
    if model is None:
        return None
    mig: Mapping[str, int] | None = None
    for sharing in pool.mig_layouts():
        if sharing.indices is None or index in sharing.indices:
            mig = resolve_layout(sharing.layout, model)
            break
    return Gpu(index, model, None, mig)
