"""Kueue: the queues that admit a cluster's workloads, built from the same classes and quotas."""

from __future__ import annotations

from typing import Annotated, Literal

from gpuconf.api.base import INT32_MAX, DnsLabel, Model
from gpuconf.api.record import Limits, field

# Releases whose CRD schemas ship with gpuconf (gpuconf/compiler/kueue/crds/<release>/).
KueueRelease = Literal["v0.13.10", "v0.14.8", "v0.19.2"]

DeviceLimits = dict[DnsLabel, Annotated[int, Limits(ge=0, le=1_000_000)]]


class BorrowWithinCohort(Model):
    policy: Literal["Never", "LowerPriority"] = "Never"
    """Whether a queue that borrows may preempt lower-priority workloads of other queues to do so."""
    max_priority_threshold: Annotated[int | None, Limits(ge=-INT32_MAX, le=INT32_MAX)] = None
    """Only workloads with at most this priority may be preempted while borrowing."""


class Preemption(Model):
    reclaim_within_cohort: Literal["Never", "LowerPriority", "Any"] = "Any"
    """Whether a queue takes back its nominal quota lent to others by preempting their workloads
    (Any: whatever their priority, so lending never costs a team its own GPUs for long)."""
    within_cluster_queue: Literal["Never", "LowerPriority", "LowerOrNewerEqualPriority"] = (
        "LowerPriority"
    )
    """Whether a workload may preempt others of its own queue."""
    borrow_within_cohort: BorrowWithinCohort | None = None
    """Preemption while borrowing (Kueue's default: never)."""


class ClusterQueueSettings(Model):
    name: DnsLabel
    """The ClusterQueue: quotas whose clusterQueue names it (or whose namespace is its name) join it."""
    borrowing_limit: DeviceLimits | None = None
    """Class -> at most this many devices borrowed from the cohort in each pool (ResourceFlavor)
    of the class; a class not listed borrows without limit, 0 never."""
    lending_limit: DeviceLimits | None = None
    """Class -> at most this many of the queue's own devices lent to the cohort in each pool,
    capped at its quota there (not a total: a limit above its quota in every pool limits
    nothing and is refused); a class not listed lends all it leaves idle."""
    preemption: Preemption = field(default_factory=Preemption)
    """How the queue takes back what it lent and shares within itself."""


class Kueue(Model):
    version: KueueRelease
    """The Kueue release installed; decides the API version and the CRD schemas checked against."""
    cohort: DnsLabel | None = None
    """The cohort every ClusterQueue joins, so idle GPUs are lent; defaults to the cluster's name."""
    local_queue: DnsLabel = "default"
    """The LocalQueue's name in every quota namespace (Kueue sends workloads without a
    kueue.x-k8s.io/queue-name label to the one named default)."""
    feature_gates: dict[str, bool] = field(default_factory=dict)
    """Kueue's feature gates as installed (its Helm value featureGates or --feature-gates): DRA
    quota needs DynamicResourceAllocation on v0.14 to v0.17; v0.18 and later have KueueDRAIntegration on."""
    cluster_queues: list[ClusterQueueSettings] = field(default_factory=list)
    """Settings per ClusterQueue; a quota namespace not joining one listed here gets its own
    ClusterQueue, named after it, with the default settings."""
