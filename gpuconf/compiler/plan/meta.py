"""Object metadata every manifest shares: names, labels, sync waves."""

from __future__ import annotations

from typing import Any

from gpuconf.api.cluster import Cluster

MANAGED_BY = "gpuconf"
SYNC_WAVE = "argocd.argoproj.io/sync-wave"

# Argo CD applies lower waves first: namespaces, then config, then the driver, then plugins.
WAVE_NAMESPACES = "-2"
WAVE_CONFIG = "-1"
WAVE_DRIVER = "0"
WAVE_PLUGIN = "1"


def labels(cluster: Cluster, component: str, **extra: str) -> dict[str, str]:
    return {
        "app.kubernetes.io/managed-by": MANAGED_BY,
        "app.kubernetes.io/part-of": "gpuconf",
        "app.kubernetes.io/component": component,
        "gpuconf.dev/cluster": cluster.metadata.name,
        **extra,
    }


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
