"""The mig-parted config per MIG pool: what NVIDIA's MIG manager applies to the pool's nodes.

Each pool gets one named configuration, selected on its nodes with the label
`nvidia.com/mig.config=gpuconf-<pool>`; `all-disabled` is there to turn MIG off again."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gpuconf.api.cluster import Cluster, NodePool
from gpuconf.api.gpu_model import GpuModel
from gpuconf.compiler.plan.artifact import Artifact
from gpuconf.compiler.plan.config_map import pool_config_map
from gpuconf.compiler.resolve.declared_inventory import DeclaredInventory
from gpuconf.formats.yaml_writer import dump
from gpuconf.gpus.mig import DISABLED, describe, resolve_layout
from gpuconf.hints import index_ranges

CONFIG_FILE = "config.yaml"
MIG_CONFIG_LABEL = "nvidia.com/mig.config"
NVIDIA_VENDOR_ID = "10DE"


def config_map_name(pool: NodePool) -> str:
    return f"gpuconf-mig-parted-{pool.name}"


def mig_config_name(pool: NodePool) -> str:
    return f"gpuconf-{pool.name}"


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


def mig_parted_config(pool: NodePool, inventory: DeclaredInventory) -> dict[str, Any] | None:
    """The `version: v1` mig-parted document for the pool; None when it declares no MIG layout."""
    layouts = pool.mig_layouts()
    if not layouts:
        return None
    gpus = [g for group in inventory.by_pool(pool.name) for g in group.gpus]
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
    return {
        "version": "v1",
        "mig-configs": {
            DISABLED: [_entry("all", None, None)],
            mig_config_name(pool): entries,
        },
    }


def mig_parted(cluster: Cluster, pool: NodePool, inventory: DeclaredInventory) -> list[Artifact]:
    config = mig_parted_config(pool, inventory)
    if config is None:
        return []
    return [
        pool_config_map(
            cluster,
            pool,
            "mig-parted",
            config_map_name(pool),
            "mig-manager",
            {CONFIG_FILE: dump(config)},
        )
    ]


def mig_rows(cluster: Cluster, inventory: DeclaredInventory) -> list[dict[str, str]]:
    """One README row per MIG pool: the node label that selects its configuration, and its layout."""
    rows = []
    for pool in cluster.spec.node_pools:
        layouts = pool.mig_layouts()
        if not layouts:
            continue
        gpus = [g for group in inventory.by_pool(pool.name) for g in group.gpus]
        parts: dict[str, list[int]] = {}
        for gpu in gpus:
            text = describe(gpu.mig) if gpu.mig is not None else "MIG disabled"
            parts.setdefault(f"{gpu.model.name} {text}", []).append(gpu.index)
        layout = "; ".join(
            ("GPU " if len(set(indices)) == 1 else "GPUs ") + f"{index_ranges(indices)}: {text}"
            for text, indices in parts.items()
        )
        rows.append(
            {
                "pool": pool.name,
                "config": mig_config_name(pool),
                "configmap": config_map_name(pool),
                "layout": layout,
            }
        )
    return rows
