"""A Kueue LocalQueue in every quota namespace, pointing at the namespace's ClusterQueue."""

from __future__ import annotations

from gpuconf.api.cluster import Cluster
from gpuconf.compiler.kueue.queues import ClusterQueuePlan
from gpuconf.compiler.kueue.releases import facts
from gpuconf.compiler.plan.artifact import Artifact, manifest
from gpuconf.compiler.plan.meta import WAVE_CONFIG, metadata


def local_queue(cluster: Cluster, queue: ClusterQueuePlan, namespace: str) -> Artifact:
    kueue = cluster.spec.kueue
    assert kueue is not None
    return manifest(
        f"kueue/localqueue-{namespace}.yaml",
        "localqueue.yaml.j2",
        "LocalQueue",
        {
            "api_version": facts(kueue.version).api_version,
            "meta": metadata(
                cluster, kueue.local_queue, "kueue", namespace=namespace, wave=WAVE_CONFIG
            ),
            "cluster_queue": queue.name,
        },
        source=("spec", "kueue"),
    )
