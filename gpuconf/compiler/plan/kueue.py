"""Kueue's objects for a cluster with spec.kueue: flavors, ClusterQueues, LocalQueues and, under
DRA, the Configuration keys that let Kueue count devices."""

from __future__ import annotations

from gpuconf.api.cluster import Cluster
from gpuconf.compiler.kueue.queues import admitted_per_namespace, kueue_plan
from gpuconf.compiler.plan.artifact import Artifact
from gpuconf.compiler.plan.kueue_cluster_queue import cluster_queue
from gpuconf.compiler.plan.kueue_configuration import kueue_configuration
from gpuconf.compiler.plan.kueue_flavor import resource_flavor
from gpuconf.compiler.plan.kueue_local_queue import local_queue
from gpuconf.compiler.resolve.class_selection import ResolvedClass


def kueue_objects(
    cluster: Cluster, classes: tuple[ResolvedClass, ...]
) -> tuple[list[Artifact], dict[tuple[str, str], int]]:
    """The objects, and (namespace, class) -> what Kueue may admit there (for ResourceQuota)."""
    queues = kueue_plan(cluster, classes)
    pools = {p.name: p for p in cluster.spec.node_pools}
    artifacts = [resource_flavor(cluster, pools[name]) for name in queues.flavors]
    for queue in queues.queues:
        artifacts.append(cluster_queue(cluster, queues, queue))
        artifacts += [local_queue(cluster, queue, ns) for ns in queue.namespaces]
    if cluster.spec.allocation == "dra":
        artifacts.append(kueue_configuration(cluster, classes))
    return artifacts, admitted_per_namespace(queues, classes)
