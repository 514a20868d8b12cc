"""ResourceQuota per namespace: `requests.<resource>` only (limits on extended resources are never enforced)."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from gpuconf.api.cluster import Cluster
from gpuconf.api.kubernetes_names import QUOTA_PREFIX
from gpuconf.compiler.plan.artifact import Artifact, manifest
from gpuconf.compiler.plan.meta import WAVE_CONFIG, metadata
from gpuconf.compiler.resolve.class_selection import ResolvedClass

QUOTA_NAME = "gpuconf-gpus"


def device_plugin_quota_key(resolved: ResolvedClass) -> str:
    return f"{QUOTA_PREFIX}{resolved.resource_name}"


def quotas(
    cluster: Cluster,
    classes: tuple[ResolvedClass, ...],
    quota_key: Callable[[ResolvedClass], str] = device_plugin_quota_key,
    admitted: Mapping[tuple[str, str], int] | None = None,
) -> list[Artifact]:
    """`admitted`: (namespace, class) -> what Kueue may admit there, when Kueue admits: the
    ResourceQuota is then the backstop for pods outside Kueue, never refusing what Kueue admitted
    (a queue's namespaces share its nominal quota and what it may borrow)."""
    by_name = {c.name: c for c in classes}
    keys: dict[str, str] = {}  # each class's key, made once for its hundreds of namespaces
    by_namespace: dict[str, dict[str, int]] = {}
    for (namespace, name), count in (admitted or {}).items():
        by_namespace.setdefault(namespace, {})[name] = count
    artifacts = []
    for index, quota in enumerate(cluster.spec.quotas):
        # Classes that share a resource name (NVIDIA's plugin on different pools) share its quota.
        totals: dict[str, int] = {}
        counts = (
            quota.classes
            if admitted is None
            # Every class of the namespace's queue: Kueue admits any of them there.
            else by_namespace.get(quota.namespace, {})
        )
        for name, count in counts.items():
            key = keys.get(name)
            if key is None:
                key = keys[name] = quota_key(by_name[name])
            totals[key] = totals.get(key, 0) + count
        hard = {key: str(total) for key, total in totals.items()}
        artifacts.append(
            manifest(
                f"quotas/{quota.namespace}.yaml",
                "resourcequota.yaml.j2",
                "ResourceQuota",
                {
                    "meta": metadata(
                        cluster, QUOTA_NAME, "quota", namespace=quota.namespace, wave=WAVE_CONFIG
                    ),
                    "hard": hard,
                },
                source=("spec", "quotas", index),
            )
        )
    return artifacts
