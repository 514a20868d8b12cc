"""A Kueue ResourceFlavor per pool: the pool's node labels, its taints, and the tolerations Kueue
gives the workloads it admits there."""

from __future__ import annotations

from gpuconf.api.cluster import Cluster, NodePool
from gpuconf.compiler.kueue.flavors import node_taints
from gpuconf.compiler.kueue.releases import facts
from gpuconf.compiler.plan.artifact import Artifact, manifest
from gpuconf.compiler.plan.meta import WAVE_CONFIG, metadata
from gpuconf.compiler.plan.pod import node_selector, pool_source


def resource_flavor(cluster: Cluster, pool: NodePool) -> Artifact:
    assert cluster.spec.kueue is not None
    # Kueue admits to a flavor only workloads that tolerate its nodeTaints, counting the flavor's
    # own tolerations (pkg/scheduler/flavorassigner/flavorassigner.go), which it adds to the pods.
    return manifest(
        f"kueue/resourceflavor-{pool.name}.yaml",
        "resourceflavor.yaml.j2",
        "ResourceFlavor",
        {
            "api_version": facts(cluster.spec.kueue.version).api_version,
            "meta": metadata(cluster, pool.name, "kueue", wave=WAVE_CONFIG),
            "node_labels": node_selector(pool),
            "node_taints": [t for _, t in node_taints(pool)],
            "tolerations": [t.as_data() for t in pool.tolerations],
        },
        source=pool_source(cluster, pool),
    )
