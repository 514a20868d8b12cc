"""Resolve each ResourceClass to its members in the inventory, its resource name and capacity."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from functools import cache
from typing import NamedTuple

from gpuconf.api.base import version_parts
from gpuconf.api.cluster import ClusterSpec, ResourceClass, Selector
from gpuconf.compiler.resolve.declared_inventory import DeclaredInventory, Gpu, NodeGroup
from gpuconf.compiler.resolve.mig_strategies import MigStrategies, mig_strategies
from gpuconf.gpus.resource_names import nvidia_resource


class Member(NamedTuple):
    """One GPU of a node group that belongs to a class: whole, or its MIG devices of a profile."""

    group: NodeGroup
    gpu: Gpu
    units: int
    """Devices this GPU contributes per node: 1 for a whole GPU, else its MIG devices of the profile."""


class Taken(NamedTuple):
    """What a class takes of one node group: the indices of its member GPUs there, in order."""

    group: NodeGroup
    indices: tuple[int, ...]


class ResolvedClass:
    """A ResourceClass with its members, indexed once by pool: planning asks each pool for its
    members of every class."""

    __slots__ = (
        "_devices",
        "_members",
        "_members_by_pool",
        "_taken_by_pool",
        "_units",
        "claims_take_whole_devices",
        "index",
        "resource_name",
        "spec",
        "taken",
    )

    def __init__(
        self,
        index: int,
        spec: ResourceClass,
        resource_name: str,
        taken: tuple[Taken, ...],
        units: tuple[Sequence[int], ...],
        claims_take_whole_devices: bool = False,
    ) -> None:
        """`units`: for each of `taken`, the devices each GPU of its group's shape gives the
        class (0: not a member)."""
        if len(units) != len(taken):
            raise ValueError("a class's groups and their GPUs' units disagree")
        self.index = index
        self.spec = spec
        self.resource_name = resource_name
        self.taken = taken
        """What the class takes of each node group, in inventory order: a step per group, not
        per GPU."""
        self._units = units
        self.claims_take_whole_devices = claims_take_whole_devices
        """DRA: each ResourceClaim gets whole devices, so sharing adds no capacity."""
        taken_by_pool: dict[str, list[Taken]] = {}
        for run in taken:
            taken_by_pool.setdefault(run.group.pool, []).append(run)
        self._taken_by_pool = {k: tuple(v) for k, v in taken_by_pool.items()}
        self._devices: int | None = None
        self._members: tuple[Member, ...] | None = None
        self._members_by_pool: dict[str, tuple[Member, ...]] | None = None

    @property
    def members(self) -> tuple[Member, ...]:
        """Each member GPU (with its UUID), group by group as in `taken`. Built when first asked:
        most rules and planning step per group (`taken`), and a fleet's members are thousands
        of tuples."""
        if self._members is None:
            self._members = tuple(
                [
                    _new_tuple(Member, (group, gpu, n))
                    for (group, _), units in zip(self.taken, self._units, strict=True)
                    for gpu, n in zip(group.gpus, units, strict=True)
                    if n
                ]
            )
        return self._members

    def members_in(self, pool: str) -> tuple[Member, ...]:
        """The class's members in one pool, in inventory order."""
        if self._members_by_pool is None:
            by_pool: dict[str, list[Member]] = {}
            for member in self.members:
                by_pool.setdefault(member.group.pool, []).append(member)
            self._members_by_pool = {k: tuple(v) for k, v in by_pool.items()}
        return self._members_by_pool.get(pool, ())

    def taken_in(self, pool: str) -> tuple[Taken, ...]:
        """`taken` in one pool."""
        return self._taken_by_pool.get(pool, ())

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def replicas(self) -> int:
        return getattr(self.spec.sharing, "replicas", None) or 1

    @property
    def devices(self) -> int:
        """Physical devices (GPUs or MIG devices) in the class, over all nodes."""
        if self._devices is None:  # asked by rules, planning and explain alike: summed once
            self._devices = sum(
                run.group.size * sum(per_gpu)
                for run, per_gpu in zip(self.taken, self._units, strict=True)
            )
        return self._devices

    @property
    def capacity(self) -> int:
        """What the scheduler can hand out: devices × replicas (devices alone under DRA)."""
        return self.devices if self.claims_take_whole_devices else self.devices * self.replicas

    def capacity_in(self, pool: str) -> int:
        """The share of `capacity` on one pool's nodes."""
        devices = sum(
            run.group.size * sum(per_gpu)
            for run, per_gpu in zip(self.taken, self._units, strict=True)
            if run.group.pool == pool
        )
        return devices if self.claims_take_whole_devices else devices * self.replicas

    @property
    def pools(self) -> list[str]:
        return sorted(self._taken_by_pool)

    @property
    def mps_memory_limit_mib(self) -> int:
        """Pinned device memory per MPS client: as declared, else an equal share of the
        smallest device in the class."""
        declared = getattr(self.spec.sharing, "memory_limit_mi_b", None)
        if declared is not None:
            return int(declared)
        smallest = min(device_memory_mib(m.gpu, None) for m in self.members)
        return smallest // self.replicas


def device_memory_mib(gpu: Gpu, profile: str | None) -> int:
    if profile is not None and gpu.model.mig is not None and profile in gpu.model.mig.profiles:
        return gpu.model.mig.profiles[profile].memory_mib
    return gpu.model.memory_mib


def units_selected(
    selector: Selector, group: NodeGroup, gpu: Gpu, driver: str | None = None
) -> int:
    """How many devices of this GPU the selector takes (0: none); `driver`: the pool's declared
    driver version (a GPU of a pool without one never meets driverVersionAtLeast)."""
    return gpu_units(selector, gpu) if group_selected(selector, group, driver) else 0


def group_selected(selector: Selector, group: NodeGroup, driver: str | None) -> bool:
    """The selector's terms that a node group decides alone: its pool, node and driver."""
    if selector.pools is not None and group.pool not in selector.pools:
        return False
    if selector.nodes is not None and group.node not in selector.nodes:
        return False
    minimum = selector.driver_version_at_least
    return minimum is None or (
        driver is not None and version_parts(driver) >= version_parts(minimum)
    )


def gpu_units(selector: Selector, gpu: Gpu) -> int:
    """The selector's terms that a GPU decides alone (index, model, MIG layout): how many of its
    devices they take."""
    if selector.indices is not None and gpu.index not in selector.indices:
        return 0
    if selector.model is not None:
        names = [selector.model] if isinstance(selector.model, str) else selector.model
        if gpu.model.name not in names:
            return 0
    if selector.architecture is not None:
        wanted = (
            [selector.architecture]
            if isinstance(selector.architecture, str)
            else selector.architecture
        )
        if gpu.model.architecture not in wanted:
            return 0
    at_least = selector.compute_capability_at_least
    if at_least is not None and version_parts(gpu.model.compute_capability) < version_parts(
        at_least
    ):
        return 0
    profile = selector.mig_profile
    if profile is None and gpu.mig is not None:
        return 0
    if profile is not None and (gpu.mig is None or profile not in gpu.mig):
        return 0
    if selector.memory_at_least is not None and device_memory_mib(gpu, profile) < _asked_mib(
        selector.memory_at_least
    ):
        return 0
    return 1 if profile is None or gpu.mig is None else gpu.mig[profile]


@cache
def _asked_mib(memory_at_least: str) -> int:
    # Quantities (and the fractions module) load only for a class that asks for memory.
    from gpuconf.formats.quantity import memory_mib

    return memory_mib(memory_at_least)


def default_resource_name(
    resource_class: ResourceClass, spec: ClusterSpec, single_mig: bool = False
) -> str:
    """`single_mig`: every pool of the class runs NVIDIA's migStrategy single, under which
    NVIDIA's plugin advertises MIG devices as nvidia.com/gpu."""
    if resource_class.resource_name is not None:
        return resource_class.resource_name
    if spec.plugin == "nvidia" and spec.allocation == "device-plugin":
        shared = resource_class.sharing.strategy != "none" and spec.nvidia_plugin.rename_by_default
        profile = resource_class.select.mig_profile
        return nvidia_resource(profile, shared, single_mig)
    return f"{spec.resource_domain}/{resource_class.name}"


def _candidates(selector: Selector, inventory: DeclaredInventory) -> Iterator[NodeGroup]:
    """The groups a selector can take GPUs from: those of its nodes or pools when it names
    any, so that classes over a few nodes each cost their nodes, not the fleet."""
    if selector.nodes is not None:
        for node in dict.fromkeys(selector.nodes):
            yield from inventory.by_node(node)
    elif selector.pools is not None:
        for pool in dict.fromkeys(selector.pools):
            yield from inventory.by_pool(pool)
    else:
        yield from inventory.groups


class _Membership(NamedTuple):
    taken: tuple[Taken, ...]
    units: tuple[Sequence[int], ...]


def _members(
    selector: Selector, groups: list[NodeGroup], drivers: dict[str, str | None]
) -> _Membership:
    """What units_selected takes of each GPU of `groups`, its terms split: the group's once per
    group, the GPU's once per group shape (NodeGroup.shape), which a pool's nodes share."""
    by_shape: dict[int, tuple[list[int], tuple[int, ...]]] = {}
    taken: list[Taken] = []
    units_taken: list[list[int]] = []
    for group in groups:
        if not group_selected(selector, group, drivers[group.pool]):
            continue
        shape = group.shape
        found = by_shape.get(id(shape))
        if found is None:
            units = [gpu_units(selector, gpu) for gpu in shape]
            indices = tuple(gpu.index for gpu, n in zip(shape, units, strict=True) if n)
            found = by_shape[id(shape)] = (units, indices)
        units, indices = found
        if indices:
            taken.append(Taken(group, indices))
            units_taken.append(units)
    return _Membership(tuple(taken), tuple(units_taken))


# NamedTuple's own __new__ is a Python function; tuple.__new__ builds the same member
# without that call, once per GPU of a class.
_new_tuple = tuple.__new__


class Resolved(NamedTuple):
    """The cluster's classes and its pools' MIG strategies, which name the classes."""

    classes: tuple[ResolvedClass, ...]
    mig_strategies: MigStrategies


def resolve_classes(spec: ClusterSpec, inventory: DeclaredInventory) -> Resolved:
    order = {id(group): position for position, group in enumerate(inventory.groups)}
    drivers = spec.driver_versions()
    memberships = []
    for resource_class in spec.resource_classes:
        selector = resource_class.select
        groups = sorted(_candidates(selector, inventory), key=lambda g: order[id(g)])
        memberships.append(_members(selector, groups, drivers))
    # A class's name follows its pools' strategies, which the classes' members decide.
    member_pools = [{t.group.pool for t in m.taken} for m in memberships]
    strategies = mig_strategies(
        spec, inventory, zip(spec.resource_classes, member_pools, strict=True)
    )
    resolved = []
    for index, (resource_class, (taken, units), pools) in enumerate(
        zip(spec.resource_classes, memberships, member_pools, strict=True)
    ):
        single = bool(pools) and all(strategies.pools[pool] == "single" for pool in pools)
        resolved.append(
            ResolvedClass(
                index,
                resource_class,
                default_resource_name(resource_class, spec, single),
                taken,
                units,
                claims_take_whole_devices=spec.allocation == "dra",
            )
        )
    return Resolved(tuple(resolved), strategies)
