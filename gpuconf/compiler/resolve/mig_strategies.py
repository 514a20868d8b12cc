"""Each pool's NVIDIA migStrategy, and the one the GPU Operator's ClusterPolicy must carry.

gpuconf runs NVIDIA's plugin as one DaemonSet per pool, so each pool gets the strategy its GPUs
call for (gpus/mig.mig_strategy). The GPU Operator's GFD is one DaemonSet for the whole cluster,
and it runs with one strategy: the ClusterPolicy's `spec.mig.strategy` (gpu-operator
api/nvidia/v1/clusterpolicy_types.go MIGSpec), which controllers/object_controls.go
(applyMIGConfiguration) passes as MIG_STRATEGY to GFD, the Operator's device plugin and its MPS
daemon; the chart's default is `single`. Where that GFD labels gpuconf's pools (gpuconf's node
runtime does not write GFD's labels: gpus/label_owner.py), the pools with MIG must agree on one
strategy GFD can describe them under (gpus/mig.strategies_labelling), and the names gpuconf gives
their MIG devices must be the ones that strategy advertises. So those pools all run the one
strategy chosen here, and gpuconf writes it into the ClusterPolicy; where no strategy serves
every pool, validation refuses the cluster (rules/gpu_operator.py)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import NamedTuple

from gpuconf.api.cluster import ClusterSpec, ResourceClass
from gpuconf.compiler.resolve.declared_inventory import DeclaredInventory
from gpuconf.gpus.label_owner import gpuconf_writes_gfd_labels
from gpuconf.gpus.mig import mig_strategy, strategies_labelling
from gpuconf.gpus.resource_names import MIG_PREFIX, NVIDIA_GPU, SHARED_SUFFIX

ClassPools = Iterable[tuple[ResourceClass, Iterable[str]]]
"""Each class with the pools it has members in."""


class PoolNeed(NamedTuple):
    """The strategies under which a pool's MIG devices are labelled and named as gpuconf
    declares them, and why, in words."""

    pool: str
    strategies: frozenset[str]
    reasons: tuple[str, ...]


class MigStrategies(NamedTuple):
    pools: Mapping[str, str]
    """Each pool's migStrategy (none, single, mixed): its plugin's, and its MIG names'."""
    own: Mapping[str, str]
    """The strategy each pool's GPUs call for, as it runs without the Operator."""
    operator: str | None
    """The ClusterPolicy's spec.mig.strategy gpuconf writes; None leaves it as it is."""
    needs: tuple[PoolNeed, ...] = ()
    """Where the Operator's GFD labels pools with MIG: each one's needs."""

    @property
    def conflict(self) -> bool:
        """No one strategy serves every pool the Operator's GFD labels."""
        return bool(self.needs) and self.operator is None

    def held_to(self, strategy: str) -> str:
        """Why a pool runs `strategy` though its own GPUs call for another: the pools that
        need it, under the Operator's GFD, and why."""
        needing = "; ".join(
            f"pool {n.pool!r} needs {strategy}: {', '.join(n.reasons)}"
            for n in self.needs
            if n.strategies == {strategy}
        )
        return (
            f"the GPU Operator's GFD labels every pool it runs on under one strategy, and {needing}"
        )


def operator_gfd_labels_pools(spec: ClusterSpec) -> bool:
    """The GPU Operator's GFD runs on gpuconf's pools (gpus/gpu_operator.py replaces it only
    where gpuconf's node runtime writes GFD's labels)."""
    return spec.gpu_operator is not None and not gpuconf_writes_gfd_labels(spec)


def mig_strategies(
    spec: ClusterSpec, inventory: DeclaredInventory, classes: ClassPools
) -> MigStrategies:
    layouts: dict[str, list[Mapping[str, int] | None]] = {}
    # A strategy follows from which layouts a pool's GPUs have, not how many have each: the
    # layouts of a shape its alike nodes share (NodeGroup.shape) are listed once.
    listed: set[int] = set()
    for group in inventory.groups:
        found = layouts.setdefault(group.pool, [])
        if id(group.shape) not in listed:
            listed.add(id(group.shape))
            found.extend(g.mig for g in group.shape)
    own = {pool: mig_strategy(found) for pool, found in layouts.items()}
    if not operator_gfd_labels_pools(spec):
        return MigStrategies(own, own, None)
    pinned = _pinned(spec, classes)
    needs = tuple(
        _need(pool, found, pinned.get(pool, ()))
        for pool, found in layouts.items()
        if own[pool] != "none"
    )
    if not needs:
        return MigStrategies(own, own, None)
    common = frozenset.intersection(*(n.strategies for n in needs))
    if not common:
        return MigStrategies(own, own, None, needs)
    # single where it serves: NVIDIA's chart default, and the names those pools have without
    # the Operator.
    chosen = "single" if "single" in common else "mixed"
    pools = {p: chosen if s != "none" else s for p, s in own.items()}
    return MigStrategies(pools, own, chosen, needs)


def _need(
    pool: str, layouts: list[Mapping[str, int] | None], pins: Iterable[tuple[str, str]]
) -> PoolNeed:
    geometry = strategies_labelling(layouts)
    if geometry == {"mixed"}:
        reasons = [
            "its GPUs are not all MIG with one profile: GFD's single labels such a node "
            "<model>-MIG-INVALID"
        ]
    else:
        reasons = ["every GPU holds one MIG profile"]
    strategies = set(geometry)
    for strategy, reason in pins:
        strategies &= {strategy}
        reasons.append(reason)
    return PoolNeed(pool, frozenset(strategies), tuple(reasons))


def _pinned(spec: ClusterSpec, classes: ClassPools) -> dict[str, list[tuple[str, str]]]:
    """Per pool, the strategies its MIG classes hold it to, each with the reason: a declared
    resourceName that only one strategy advertises. (MPS, which NVIDIA's plugin refuses under
    mixed, never shares MIG devices: rules/classes.py refuses that whatever the strategy.)"""
    nvidia_plugin = spec.plugin == "nvidia" and spec.allocation == "device-plugin"
    gpuconf_plugin = spec.plugin == "gpuconf" and spec.allocation == "device-plugin"
    pinned: dict[str, list[tuple[str, str]]] = {}
    for resource_class, pools in classes:
        if resource_class.select.mig_profile is None:
            continue
        name, pin = resource_class.resource_name, None
        if name in (NVIDIA_GPU, NVIDIA_GPU + SHARED_SUFFIX) and (nvidia_plugin or gpuconf_plugin):
            pin = ("single", f"class {resource_class.name!r} is requested as {name}")
        elif name is not None and name.startswith(MIG_PREFIX) and nvidia_plugin:
            pin = ("mixed", f"class {resource_class.name!r} is requested as {name}")
        if pin is not None:
            for pool in pools:
                pinned.setdefault(pool, []).append(pin)
    return pinned
