"""Object metadata every manifest shares: names, labels, sync waves."""

from __future__ import annotations

from typing import Any

from gpuconf.api.cluster import Cluster
from gpuconf.compiler.resolve.object_labels import own_labels

SYNC_WAVE = "argocd.argoproj.io/sync-wave"
SYNC_OPTIONS = "argocd.argoproj.io/sync-options"
FLUX_PRUNE = "kustomize.toolkit.fluxcd.io/prune"
FLUX_SSA = "kustomize.toolkit.fluxcd.io/ssa"
SKIP_DRY_RUN_ON_MISSING_KIND = "SkipDryRunOnMissingResource=true"
"""Argo CD dry-runs every object before a sync, and one whose kind the cluster lacks fails the
whole sync unless it carries this sync option (Argo CD's user guide, sync-options.md)."""

# Argo CD applies lower waves first: namespaces, then config, then the driver, then plugins.
WAVE_NAMESPACES = "-2"
WAVE_CONFIG = "-1"
WAVE_DRIVER = "0"
WAVE_PLUGIN = "1"
# Objects of a CRD the GPU nodes do not need (the Prometheus Operator's) come last: a wave that
# fails to apply stops the later ones, so a cluster without those CRDs still gets its plugins.
WAVE_OPTIONAL = "2"
WAVES = {
    WAVE_NAMESPACES: "the Namespaces, which everything namespaced gpuconf renders is created in",
    WAVE_CONFIG: "the ConfigMaps, RBAC, RuntimeClass and quotas, which the DaemonSets' pods mount, "
    "run as and run under",
    WAVE_DRIVER: "the driver installer and the runtime setup, whose driver and runtime-ready "
    "marker the plugins wait for",
    WAVE_PLUGIN: "the device plugins, the node runtime and dcgm-exporter",
    WAVE_OPTIONAL: "the objects of CRDs a cluster may lack (the Prometheus Operator's), last so "
    "that their failing to apply stops nothing else",
}
"""gpuconf's sync waves, lowest first, each with what it holds."""


def labels(cluster: Cluster, component: str, **extra: str) -> dict[str, str]:
    return own_labels(cluster.metadata.name, component, **extra)


def metadata(
    cluster: Cluster,
    name: str,
    component: str,
    *,
    namespace: str | None = None,
    wave: str | None = None,
    **extra_labels: str,
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "labels": labels(cluster, component, **extra_labels)}
    if namespace is not None:
        meta["namespace"] = namespace
    if wave is not None:
        meta["annotations"] = {SYNC_WAVE: wave}
    return meta


def optional_kind_metadata(
    cluster: Cluster, name: str, component: str, namespace: str
) -> dict[str, Any]:
    """Metadata of an object whose CRD the cluster may lack: applied last, and never the cause
    of Argo CD refusing the rest of the sync."""
    meta = metadata(cluster, name, component, namespace=namespace, wave=WAVE_OPTIONAL)
    meta["annotations"][SYNC_OPTIONS] = SKIP_DRY_RUN_ON_MISSING_KIND
    return meta
