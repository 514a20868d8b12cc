"""ResourceQuota per namespace: `requests.<resource>` only (limits on extended resources are never enforced)."""

from __future__ import annotations

from collections.abc import Callable

from gpuconf.api.cluster import Cluster
from gpuconf.compiler.plan.artifact import Artifact, manifest
from gpuconf.compiler.plan.meta import WAVE_CONFIG, metadata
from gpuconf.compiler.resolve.class_selection import ResolvedClass

QUOTA_NAME = "gpuconf-gpus"


def device_plugin_quota_key(resolved: ResolvedClass) -> str:
    return f"requests.{resolved.resource_name}"


def quotas(
    cluster: Cluster,
    classes: tuple[ResolvedClass, ...],
    quota_key: Callable[[ResolvedClass], str] = device_plugin_quota_key,
) -> list[Artifact]:
    by_name = {c.name: c for c in classes}
    artifacts = []
    for index, quota in enumerate(cluster.spec.quotas):
        # Classes that share a resource name (NVIDIA's plugin on different pools) share its quota.
        totals: dict[str, int] = {}
        for name, count in quota.classes.items():
            key = quota_key(by_name[name])
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
