"""A Kueue ResourceFlavor per pool: the pool's node labels, its taints, and the tolerations Kueue
gives the workloads it admits there."""

from __future__ import annotations

from gpuconf.api.cluster import Cluster, NodePool
from gpuconf.api.cluster.pool import Toleration
from gpuconf.compiler.kueue.releases import facts
from gpuconf.compiler.plan.artifact import Artifact, manifest
from gpuconf.compiler.plan.meta import WAVE_CONFIG, metadata
from gpuconf.compiler.plan.pod import node_selector, pool_source


def _taint(toleration: Toleration) -> dict[str, str] | None:
    """The taint a pool's toleration says its nodes carry; None where it names no single taint
    (no key, or no effect: a taint has both)."""
    if toleration.key is None or toleration.effect is None:
        return None
    taint = {"key": toleration.key, "effect": toleration.effect}
    if toleration.operator == "Equal" and toleration.value:
        taint["value"] = toleration.value
    return taint


def resource_flavor(cluster: Cluster, pool: NodePool) -> Artifact:
    assert cluster.spec.kueue is not None
    # Kueue admits to a flavor only workloads that tolerate its nodeTaints, counting the flavor's
    # own tolerations (pkg/scheduler/flavorassigner/flavorassigner.go), which it adds to the pods.
    taints = [t for t in map(_taint, pool.tolerations) if t is not None]
    return manifest(
        f"kueue/resourceflavor-{pool.name}.yaml",
        "resourceflavor.yaml.j2",
        "ResourceFlavor",
        {
            "api_version": facts(cluster.spec.kueue.version).api_version,
            "meta": metadata(cluster, pool.name, "kueue", wave=WAVE_CONFIG),
            "node_labels": node_selector(pool),
            "node_taints": taints,
            "tolerations": [t.as_data() for t in pool.tolerations],
        },
        source=pool_source(cluster, pool),
    )
