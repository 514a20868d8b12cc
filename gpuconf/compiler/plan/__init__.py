"""Plan: a validated cluster becomes the list of artifacts (files as data) to render."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from gpuconf.api.cluster import NodePool
from gpuconf.api.node_config import NodeConfig
from gpuconf.compiler.plan import cluster_objects
from gpuconf.compiler.plan.alerts import prometheus_rule
from gpuconf.compiler.plan.artifact import Artifact
from gpuconf.compiler.plan.cluster_objects import KeptNamespace
from gpuconf.compiler.plan.dashboard import dashboard
from gpuconf.compiler.plan.dcgm_exporter import dcgm_exporter_daemonset
from gpuconf.compiler.plan.dcgm_exporter_counters import dcgm_exporter_counters
from gpuconf.compiler.plan.dcgm_exporter_rbac import dcgm_exporter_rbac
from gpuconf.compiler.plan.driver import driver_daemonset
from gpuconf.compiler.plan.driver_manager import driver_manager_rbac
from gpuconf.compiler.plan.kustomization import kustomization
from gpuconf.compiler.plan.monitoring import monitoring
from gpuconf.compiler.plan.node_daemonset import node_daemonset
from gpuconf.compiler.plan.pool_node_config import build_node_config, node_config_map
from gpuconf.compiler.plan.quotas import quotas
from gpuconf.compiler.plan.readme import readme
from gpuconf.compiler.plan.setup_daemonset import setup_daemonset
from gpuconf.compiler.plan.status_role import status_role
from gpuconf.compiler.resolve.class_selection import ResolvedClass
from gpuconf.compiler.resolve.components import dcgm_exporter_runs_on
from gpuconf.compiler.validate import Validated
from gpuconf.gpus.gfd_labels import pool_keys
from gpuconf.gpus.label_owner import runs_node_runtime

__all__ = ["Artifact", "plan"]


def _classes_by_pool(classes: tuple[ResolvedClass, ...]) -> dict[str, tuple[ResolvedClass, ...]]:
    """Each pool's classes in class order, found once rather than per pool over all classes."""
    by_pool: dict[str, list[ResolvedClass]] = {}
    for resolved in classes:
        for pool in resolved.pools:
            by_pool.setdefault(pool, []).append(resolved)
    return {pool: tuple(found) for pool, found in by_pool.items()}


def _pool_artifacts(
    validated: Validated,
    pool: NodePool,
    config: NodeConfig,
    classes: tuple[ResolvedClass, ...],
    mig_strategy: str,
) -> list[Artifact]:
    cluster = validated.cluster
    # Setup runs in every mode: it reads the runtime settings from the pool's node config.
    artifacts = [node_config_map(cluster, pool, config), setup_daemonset(cluster, pool, config)]
    if (driver := driver_daemonset(cluster, pool)) is not None:
        artifacts.append(driver)
    if dcgm_exporter_runs_on(cluster, pool):
        artifacts.append(dcgm_exporter_daemonset(cluster, pool, config))
    if cluster.spec.allocation == "dra":
        return artifacts
    if cluster.spec.plugin == "nvidia":
        # Imported here, as the planning of MIG, the GPU Operator, Kueue and DRA below: only
        # for a cluster that uses it.
        from gpuconf.compiler.plan.nvidia_plugin import nvidia_plugin

        return artifacts + nvidia_plugin(cluster, pool, list(classes), mig_strategy)
    uses_mps = any(r.sharing.strategy == "mps" for r in config.resources)
    uses_mig = any(r.mig_profile is not None for r in config.resources)
    return [*artifacts, node_daemonset(cluster, pool, uses_mps, uses_mig)]


def _pool_label_keys(
    pools: Sequence[NodePool], configs: Mapping[str, NodeConfig]
) -> list[tuple[NodePool, Sequence[str]]]:
    """The pools whose nodes publish labels of their own, with their keys: what each node
    config lets its node write is what the admission policy admits on its pool's Nodes."""
    found: list[tuple[NodePool, Sequence[str]]] = []
    for pool in pools:
        if keys := pool_keys(configs[pool.name]):
            found.append((pool, keys))
    return found


def plan(
    validated: Validated, source: str, kept_namespaces: Sequence[KeptNamespace] = ()
) -> list[Artifact]:
    """Every file of the cluster's output folder, kustomization.yaml and README.md included.

    `kept_namespaces`: Namespaces an earlier render created that this one no longer creates;
    they stay (compiler/kept_namespaces.py)."""
    cluster = validated.cluster
    spec = cluster.spec
    by_pool = _classes_by_pool(validated.classes)
    configs = {
        pool.name: build_node_config(cluster, pool, validated.inventory, by_pool.get(pool.name, ()))
        for pool in spec.node_pools
    }
    artifacts = [
        *cluster_objects.namespaces(cluster, kept_namespaces),
        cluster_objects.runtime_class(cluster),
        *driver_manager_rbac(cluster),
        status_role(cluster),
    ]
    if runs_node_runtime(spec):
        artifacts += cluster_objects.node_rbac(cluster, _pool_label_keys(spec.node_pools, configs))
    artifacts += dcgm_exporter_counters(cluster)
    artifacts += dcgm_exporter_rbac(cluster)
    artifacts += monitoring(cluster)
    artifacts += prometheus_rule(cluster, validated.inventory)
    artifacts += dashboard(cluster, validated.classes)
    strategies = validated.mig_strategies
    for pool in spec.node_pools:
        artifacts += _pool_artifacts(
            validated,
            pool,
            configs[pool.name],
            by_pool.get(pool.name, ()),
            strategies.pools.get(pool.name, "none"),
        )
    admitted = None
    if spec.kueue is not None:
        # Imported here: only clusters whose quotas Kueue admits build its queues.
        from gpuconf.compiler.plan.kueue import kueue_objects

        found, admitted = kueue_objects(cluster, validated.classes)
        artifacts += found
    if spec.allocation == "dra":
        # Imported here: the DRA device model and CEL selectors are a device-plugin cluster's
        # largest needless import.
        from gpuconf.compiler.plan.dra import dra_objects, dra_quota_key

        artifacts += dra_objects(cluster, validated.classes, validated.catalog)
        artifacts += quotas(cluster, validated.classes, dra_quota_key, admitted)
    else:
        artifacts += quotas(cluster, validated.classes, admitted=admitted)
    uses_mig = any(p.mig_layouts() for p in spec.node_pools)
    rows: list[dict[str, Any]] = []  # the README's MIG rows: none without a MIG layout
    if uses_mig:
        from gpuconf.compiler.plan.mig_parted import mig_manager_config_map, mig_rows

        artifacts += mig_manager_config_map(cluster, validated.inventory)
        rows = mig_rows(cluster, validated.inventory)
    if spec.gpu_operator is not None:
        from gpuconf.compiler.plan.gpu_operator import gpu_operator

        artifacts += gpu_operator(cluster, uses_mig=uses_mig, mig_strategy=strategies.operator)
    artifacts.append(readme(validated, source, rows))
    artifacts.append(kustomization(artifacts))
    return sorted(artifacts, key=lambda a: a.path)
