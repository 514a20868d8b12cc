"""Kubernetes' DRA feature gates: from which minor each exists, and where it is on by default.

Read from k8s.io/kubernetes `pkg/features/kube_features.go` at v1.34.4 and v1.35.4 (the Go module
proxy's source of each release). Minors after 1.35 are taken to keep 1.35's defaults: a gate
that is on stays on, and one that is off is declared where a cluster uses it. Only the gates
behind what gpuconf renders are here: it renders no adminAccess, partitionable devices
(DRAPartitionableDevices, alpha from 1.33) or consumable capacity (DRAConsumableCapacity, alpha
from 1.34)."""

from __future__ import annotations

from typing import NamedTuple


class Gate(NamedTuple):
    name: str
    since: int
    """The first minor that has the gate (and the API fields behind it)."""
    on_from: int | None
    """The first minor where it is on by default; None while it is off everywhere."""
    beta_from: int | None = None
    """The first minor that calls the gate beta (alpha before it)."""
    ga_from: int | None = None
    """The first minor where the feature is GA."""

    def on_by_default(self, minor: int) -> bool:
        return self.on_from is not None and minor >= self.on_from

    def stage(self, minor: int) -> str:
        """alpha, beta or GA, as the release calls the gate."""
        if self.ga_from is not None and minor >= self.ga_from:
            return "GA"
        return "beta" if self.beta_from is not None and minor >= self.beta_from else "alpha"


# Beta and off in 1.32 and 1.33 (with the resource.k8s.io API, v1beta1 and v1beta2, which the
# API server serves only with --runtime-config); GA and on from 1.34.
DYNAMIC_RESOURCE_ALLOCATION = Gate("DynamicResourceAllocation", 26, 34, beta_from=32, ga_from=34)
# firstAvailable in a device request: alpha in 1.33, beta and on from 1.34.
PRIORITIZED_LIST = Gate("DRAPrioritizedList", 33, 34, beta_from=34)
# A DeviceClass's extendedResourceName: alpha (off) from 1.34.
EXTENDED_RESOURCE = Gate("DRAExtendedResource", 34, None)


def dra_api_version(minor: int) -> str:
    """resource.k8s.io is v1beta1 in 1.32, v1beta2 in 1.33 and v1 (GA) from 1.34."""
    version = "v1beta1" if minor <= 32 else "v1beta2" if minor == 33 else "v1"
    return f"resource.k8s.io/{version}"
