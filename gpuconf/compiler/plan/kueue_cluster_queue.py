"""A Kueue ClusterQueue per tenant: nominal quota per class resource and flavor, limits, cohort,
preemption, and the namespaces whose LocalQueues may point at it."""

from __future__ import annotations

from typing import Any

from gpuconf.api.cluster import Cluster
from gpuconf.compiler.kueue.queues import ClusterQueuePlan, FlavorQuota, KueuePlan, resource_groups
from gpuconf.compiler.kueue.releases import facts
from gpuconf.compiler.plan.artifact import Artifact, manifest
from gpuconf.compiler.plan.meta import WAVE_CONFIG, metadata

NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"


def _quota(resource: str, quota: FlavorQuota) -> dict[str, Any]:
    entry: dict[str, Any] = {"name": resource, "nominalQuota": quota.nominal}
    if quota.borrowing_limit is not None:
        entry["borrowingLimit"] = quota.borrowing_limit
    if quota.lending_limit is not None:
        entry["lendingLimit"] = quota.lending_limit
    return entry


def cluster_queue(cluster: Cluster, kueue: KueuePlan, queue: ClusterQueuePlan) -> Artifact:
    assert cluster.spec.kueue is not None
    release = facts(cluster.spec.kueue.version)
    groups = []
    for group in resource_groups(queue, kueue.flavors):
        flavors = [
            {
                "name": flavor,
                "resources": [
                    _quota(r.resource, next(q for q in r.flavors if q.flavor == flavor))
                    if any(q.flavor == flavor for q in r.flavors)
                    else {"name": r.resource, "nominalQuota": 0}
                    for r in group.resources
                ],
            }
            for flavor in group.flavors
        ]
        groups.append(
            {"coveredResources": [r.resource for r in group.resources], "flavors": flavors}
        )
    # Kueue's default namespaceSelector (null) admits no namespace at all.
    selector = {
        "matchExpressions": [
            {"key": NAMESPACE_NAME_LABEL, "operator": "In", "values": sorted(queue.namespaces)}
        ]
    }
    return manifest(
        f"kueue/clusterqueue-{queue.name}.yaml",
        "clusterqueue.yaml.j2",
        "ClusterQueue",
        {
            "api_version": release.api_version,
            "meta": metadata(cluster, queue.name, "kueue", wave=WAVE_CONFIG),
            "cohort_field": release.cohort_field,
            "cohort": kueue.cohort,
            "namespace_selector": selector,
            "preemption": queue.settings.preemption.as_data(),
            "resource_groups": groups,
        },
        source=("spec", "kueue"),
    )
