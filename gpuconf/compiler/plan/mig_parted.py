"""The mig-parted config the GPU Operator's MIG manager applies: one ConfigMap for the cluster.

The MIG manager reads one ConfigMap (ClusterPolicy `spec.migManager.config.name`, key
`config.yaml`) in the operator's namespace. It holds every pool's layout under its own name,
`gpuconf-<pool>`, which a node selects with the label `nvidia.com/mig.config=gpuconf-<pool>`;
`all-disabled` is there for the operator's default (nodes without the label) and to turn MIG
off again."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gpuconf.api.base import CONFIG_MAP_FILE
from gpuconf.api.cluster import Cluster, NodePool
from gpuconf.api.gpu_model import GpuModel
from gpuconf.api.node_facts import MIG_CONFIG_PREFIX
from gpuconf.compiler.plan.artifact import Artifact, manifest
from gpuconf.compiler.plan.meta import WAVE_CONFIG, metadata
from gpuconf.compiler.plan.pod import node_selector
from gpuconf.compiler.resolve.declared_inventory import DeclaredInventory, pool_size
from gpuconf.formats.yaml_writer import dump
from gpuconf.gpus.mig import DISABLED, describe, resolve_layout
from gpuconf.hints import index_ranges

CONFIG_FILE = "config.yaml"
MIG_CONFIG_LABEL = "nvidia.com/mig.config"
NVIDIA_VENDOR_ID = "10DE"


def mig_config_name(pool: NodePool) -> str:
    return MIG_CONFIG_PREFIX + pool.name


def _entry(
    devices: str | list[int], layout: Mapping[str, int] | None, model: GpuModel | None
) -> dict[str, Any]:
    entry: dict[str, Any] = {"devices": devices, "mig-enabled": layout is not None}
    if layout is not None:
        entry["mig-devices"] = dict(layout)
    if model is not None and model.pci_device_id is not None:
        # mig-parted matches GPUs by PCI device id followed by the vendor id.
        entry["device-filter"] = [model.pci_device_id + NVIDIA_VENDOR_ID]
    return entry


def pool_entries(pool: NodePool, inventory: DeclaredInventory) -> list[dict[str, Any]]:
    """The mig-parted entries of one pool's configuration; empty when it declares no MIG layout."""
    layouts = pool.mig_layouts()
    if not layouts:
        return []
    gpus = [g for group in inventory.by_pool(pool.name) for g in group.shape]
    models = {g.model.name: g.model for g in gpus}
    per_model = len(models) > 1
    entries: list[dict[str, Any]] = []
    covered: set[int] = set()
    for sharing in layouts:
        devices: str | list[int] = "all" if sharing.indices is None else sorted(sharing.indices)
        covered.update(sharing.indices or [])
        for model in (models[name] for name in sorted(models)):
            entries.append(
                _entry(devices, resolve_layout(sharing.layout, model), model if per_model else None)
            )
    whole = sorted({g.index for g in gpus} - covered)
    if whole and all(s.indices is not None for s in layouts):
        entries.append(_entry(whole, None, None))
    return entries


def mig_parted_config(cluster: Cluster, inventory: DeclaredInventory) -> dict[str, Any] | None:
    """The `version: v1` mig-parted document for the cluster; None when no pool declares MIG."""
    configs = {
        mig_config_name(pool): entries
        for pool in cluster.spec.node_pools
        if (entries := pool_entries(pool, inventory))
    }
    if not configs:
        return None
    return {"version": "v1", "mig-configs": {DISABLED: [_entry("all", None, None)], **configs}}


def mig_manager_config_map(cluster: Cluster, inventory: DeclaredInventory) -> list[Artifact]:
    config = mig_parted_config(cluster, inventory)
    if config is None:
        return []
    where = cluster.spec.mig_manager
    return [
        manifest(
            "mig-manager/" + CONFIG_MAP_FILE.format(where.config_map_name),
            "configmap.yaml.j2",
            "ConfigMap",
            {
                "meta": metadata(
                    cluster,
                    where.config_map_name,
                    "mig-manager",
                    namespace=where.namespace,
                    wave=WAVE_CONFIG,
                ),
                "data": {CONFIG_FILE: dump(config)},
            },
            source=("spec", "migManager"),
        )
    ]


def mig_rows(cluster: Cluster, inventory: DeclaredInventory) -> list[dict[str, Any]]:
    """README rows: for each MIG pool's nodes, the label that selects its layout, and the layout."""
    rows = []
    for pool in cluster.spec.node_pools:
        if not pool.mig_layouts():
            continue
        gpus = [g for group in inventory.by_pool(pool.name) for g in group.shape]
        parts: dict[str, list[int]] = {}
        for gpu in gpus:
            text = describe(gpu.mig) if gpu.mig is not None else "MIG disabled"
            parts.setdefault(f"{gpu.model.name} {text}", []).append(gpu.index)
        layout = "; ".join(
            ("GPU " if len(set(indices)) == 1 else "GPUs ") + f"{index_ranges(indices)}: {text}"
            for text, indices in parts.items()
        )
        declared = [node.name for node in pool.nodes]
        undeclared = pool_size(pool) - len(declared)
        selector = ",".join(f"{k}={v}" for k, v in sorted(node_selector(pool).items()))
        more = ""
        if undeclared > 0:
            more = f"{undeclared} more" if declared else f"{undeclared}"
        rows.append(
            {
                "pool": pool.name,
                "declared": declared,
                "more": more,
                "selector": selector,
                "label": f"{MIG_CONFIG_LABEL}={mig_config_name(pool)}",
                "command": (
                    f"kubectl label nodes -l {selector} {MIG_CONFIG_LABEL}={mig_config_name(pool)} --overwrite"
                ),
                "layout": layout,
            }
        )
    return rows
