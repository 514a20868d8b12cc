"""The node config each pool's `gpuconf node` reads, resolved from the cluster, and its ConfigMap."""

from __future__ import annotations

from collections import Counter
from typing import TypeVar

from gpuconf.api.cluster import Cluster, NodePool
from gpuconf.api.cluster.document import Health
from gpuconf.api.node_config import (
    NODE_CONFIG_FILE,
    ExpectedGpu,
    ExpectedInventory,
    GpuIndices,
    HealthSettings,
    LabelSettings,
    NodeConfig,
    ResourceSettings,
    SharingSettings,
)
from gpuconf.api.version import NODE_CONFIG_API_VERSION
from gpuconf.compiler.plan.artifact import Artifact
from gpuconf.compiler.plan.config_map import pool_config_map
from gpuconf.compiler.resolve.class_selection import ResolvedClass
from gpuconf.compiler.resolve.declared_inventory import DeclaredInventory, Gpu, NodeGroup
from gpuconf.compiler.resolve.device_lists import device_list_strategy
from gpuconf.compiler.resolve.runtime_settings import runtime_settings
from gpuconf.formats.yaml_writer import dump
from gpuconf.gpus.gfd_labels import config_mig_strategy, mig_profiles
from gpuconf.gpus.label_owner import node_runtime_labels_nodes
from gpuconf.gpus.xid import APPLICATION_XIDS, RESET_XIDS

_Shared = TypeVar("_Shared")

MPS_ROOT = "/run/nvidia/mps"
MPS_SHM = f"{MPS_ROOT}/shm"
"""Shared as /dev/shm by the control daemons (in gpuconf-node) and their clients, as NVIDIA does."""


def config_map_name(pool: NodePool) -> str:
    return f"gpuconf-node-{pool.name}"


def _expected(gpu: Gpu) -> ExpectedGpu:
    return ExpectedGpu(
        index=gpu.index,
        model=gpu.model.name,
        nvml_name=gpu.model.nvml_name,
        memory_mi_b=gpu.model.memory_mib,
        uuid=gpu.uuid,
        mig=dict(gpu.mig) if gpu.mig is not None else None,
    )


def _sharing(resolved: ResolvedClass) -> SharingSettings:
    sharing = resolved.spec.sharing
    if sharing.strategy == "time-slicing":
        return SharingSettings(
            strategy=sharing.strategy,
            replicas=resolved.replicas,
            fail_requests_greater_than_one=sharing.fail_requests_greater_than_one,
        )
    if sharing.strategy == "mps":
        return SharingSettings(
            strategy=sharing.strategy,
            replicas=resolved.replicas,
            fail_requests_greater_than_one=True,
            mps_pipe_directory=f"{MPS_ROOT}/{resolved.name}/pipe",
            mps_shm_directory=MPS_SHM,
            mps_memory_limit_mi_b=resolved.mps_memory_limit_mib,
            mps_active_thread_percentage=sharing.active_thread_percentage,
        )
    return SharingSettings(strategy=sharing.strategy, replicas=resolved.replicas)


def _health(health: Health) -> HealthSettings:
    """A declared list replaces the catalog's; an XID ignored on purpose is never a reset fault."""
    ignored = set(APPLICATION_XIDS if health.ignored_xids is None else health.ignored_xids)
    reset = set(RESET_XIDS if health.reset_xids is None else health.reset_xids) - ignored
    return HealthSettings(
        ignored_xids=sorted(ignored),
        reset_xids=sorted(reset),
        recover_after_seconds=health.recover_after_seconds,
    )


def _shape(group: NodeGroup) -> tuple[tuple[int, str], ...]:
    """What a declared node's GPUs are, UUIDs aside (a GPU's MIG layout follows from its index
    and model within the pool)."""
    return tuple((gpu.index, gpu.model.name) for gpu in group.shape)


def _most_common(values: list[_Shared]) -> _Shared | None:
    """The value most of `values` have, the first of those seen on a tie; None when none is
    shared by two, so a lone node keeps its own full listing."""
    ranked = Counter(values).most_common(1)
    return ranked[0][0] if ranked and ranked[0][1] > 1 else None


def _with_common_gpus(declared: list[NodeGroup]) -> list[NodeGroup]:
    """The declared nodes whose GPUs the inventory writes once, as `common`."""
    by_shape: dict[int, tuple[tuple[int, str], ...]] = {}  # a pool's alike nodes share one
    shapes = [
        by_shape.get(id(g.shape)) or by_shape.setdefault(id(g.shape), _shape(g)) for g in declared
    ]
    common = _most_common(shapes)
    return [g for g, shape in zip(declared, shapes, strict=True) if shape == common]


def _inventory(groups: list[NodeGroup]) -> ExpectedInventory:
    undeclared = next((g for g in groups if g.node is None), None)
    declared = [g for g in groups if g.node is not None]
    shared = _with_common_gpus(declared)
    uuids = {g.node: g.gpu_uuids() for g in shared if g.node is not None}
    return ExpectedInventory(
        default=[_expected(g) for g in undeclared.gpus] if undeclared else [],
        common=[_expected(g) for g in shared[0].shape] if shared else [],
        uuids=uuids,
        nodes={
            g.node: [_expected(gpu) for gpu in g.gpus]
            for g in declared
            if g.node is not None and g.node not in uuids
        },
    )


def _indices(
    resolved: ResolvedClass, pool: str, groups: list[NodeGroup], inventory: ExpectedInventory
) -> GpuIndices | None:
    taken = resolved.taken_in(pool)
    if not taken:
        return None
    by_group: dict[int, tuple[int, ...]] = {}
    for group, indices in taken:
        by_group[id(group)] = by_group.get(id(group), ()) + indices
    if not any(id(g) in by_group for g in groups):
        return None
    # Alike nodes share one tuple of indices (their shape's): each is sorted once.
    in_order: dict[int, tuple[int, ...]] = {}
    default: tuple[int, ...] = ()
    by_node: dict[str, tuple[int, ...]] = {}
    for g in groups:
        indices = by_group.get(id(g), ())
        ordered = in_order.get(id(indices))
        if ordered is None:
            ordered = in_order[id(indices)] = tuple(sorted(indices))
        if g.node is None:
            default = ordered
        else:
            by_node[g.node] = ordered
    common = _most_common([by_node[n] for n in inventory.uuids]) or ()
    return GpuIndices(
        default=list(default),
        common=list(common),
        nodes={
            node: list(indices)
            for node, indices in by_node.items()
            if indices != (common if node in inventory.uuids else default)
        },
    )


def build_node_config(
    cluster: Cluster,
    pool: NodePool,
    inventory: DeclaredInventory,
    classes: tuple[ResolvedClass, ...],
) -> NodeConfig:
    spec = cluster.spec
    groups = list(inventory.by_pool(pool.name))
    expected = _inventory(groups)
    resources = []
    for resolved in classes:
        indices = _indices(resolved, pool.name, groups, expected)
        if indices is None:
            continue
        resources.append(
            ResourceSettings(
                name=resolved.resource_name,
                class_name=resolved.name,
                gpus=indices,
                mig_profile=resolved.spec.select.mig_profile,
                sharing=_sharing(resolved),
                allocation_policy=resolved.spec.allocation_policy,
            )
        )
    config = NodeConfig(
        api_version=NODE_CONFIG_API_VERSION,
        kind="NodeConfig",
        cluster=cluster.metadata.name,
        pool=pool.name,
        platform="tegra" if pool.platform == "tegra" else None,
        runtime=runtime_settings(cluster, pool),
        device_list_strategy=device_list_strategy(cluster, pool),
        drift_policy=spec.node.drift_policy,
        health=_health(spec.node.health),
        metrics_port=spec.node.metrics_port,
        inventory=expected,
        resources=resources,
        labels=_labels(cluster),
    )
    if config.labels.owner == "gpuconf" and config_mig_strategy(config) == "mixed":
        # GFD labels every MIG profile present: every one the pool's GPU models have.
        models = {gpu.model.name: gpu.model for group in groups for gpu in group.shape}
        labels = config.labels.replace(mig_profiles=mig_profiles(models.values()))
        config = config.replace(labels=labels)
    return config


def _labels(cluster: Cluster) -> LabelSettings:
    """Labels only where gpuconf's node runtime runs and its admission policy lets it patch
    its Node (Kubernetes 1.30 and later)."""
    if not node_runtime_labels_nodes(cluster.spec):
        return LabelSettings()
    wanted = cluster.spec.node.labels
    return LabelSettings(owner=wanted.owner, rename_by_default=wanted.rename_by_default)


def node_config_text(config: NodeConfig) -> str:
    return dump(config.as_data())


def node_config_map(cluster: Cluster, pool: NodePool, config: NodeConfig) -> Artifact:
    return pool_config_map(
        cluster,
        pool,
        "node-config",
        config_map_name(pool),
        "node-runtime",
        {NODE_CONFIG_FILE: node_config_text(config)},
    )
