"""The sizes Kueue accepts in the objects gpuconf renders, per supported release: the CRD
markers (`+kubebuilder:validation:MaxItems`/`MaxProperties`, which its CRD schemas carry) and
the ClusterQueue webhook's totals, which no schema says. Read from kubernetes-sigs/kueue at each
release's tag; the rules (compiler/rules/kueue_limits.py) check a cluster file against them,
compiler/kueue/admission.py the rendered objects."""

from __future__ import annotations

from typing import NamedTuple

from gpuconf.api.cluster.kueue import KueueRelease

# ResourceFlavor.spec, the same in every supported release (apis/kueue/v1beta1/
# resourceflavor_types.go at v0.19.2: nodeLabels MaxProperties=8 line 63, tolerations MaxItems=8
# line 96; v1beta2 lines 65, 98; v0.13.10 lines 59, 92). Its nodeTaints (MaxItems=8, lines 82,
# 84, 78) are gpuconf's one per toleration, so the tolerations' limit holds them too.
FLAVOR_NODE_LABELS = 8
FLAVOR_TOLERATIONS = 8


class QueueLimits(NamedTuple):
    resource_groups: int
    """spec.resourceGroups: MaxItems."""
    per_group: int
    """A group's coveredResources and flavors, and each flavor's resources: MaxItems."""
    total_flavors: int | None
    """Flavors across all of a queue's groups (webhook; None where the release has no limit)."""
    total_covered: int | None
    """Covered resources across all of a queue's groups (webhook)."""
    group_combinations: int | None
    """Flavor-resource pairs in one group (webhook)."""


QUEUE_LIMITS: dict[KueueRelease, QueueLimits] = {
    # apis/kueue/v1beta1/clusterqueue_types.go: resourceGroups MaxItems=16 (line 64),
    # coveredResources, flavors, resources MaxItems=16 (lines 184, 197, 212); no webhook totals.
    "v0.13.10": QueueLimits(16, 16, None, None, None),
    # clusterqueue_types.go: MaxItems=16 (line 64), 64 (lines 186, 200, 215);
    # pkg/webhooks/clusterqueue_webhook.go: validateTotalFlavors ≤ 256 (line 123),
    # validateTotalCoveredResources ≤ 256 (line 136), validateFlavorResourceCombinations ≤ 512
    # (line 149).
    "v0.14.8": QueueLimits(16, 64, 256, 256, 512),
    # apis/kueue/v1beta2/clusterqueue_types.go (the storage version): MaxItems=16 (line 74), 64
    # (lines 262, 279, 295); clusterqueue_webhook.go lines 187, 200, 213.
    "v0.19.2": QueueLimits(16, 64, 256, 256, 512),
}
