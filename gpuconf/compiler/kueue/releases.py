"""What each supported Kueue release accepts: its API version, its cohort field, its DRA support.

Read from kubernetes-sigs/kueue at each tag: `apis/kueue/<version>/clusterqueue_types.go` (the
cohort field), `apis/config/v1beta1/configuration_types.go` (`resources.deviceClassMappings`,
from v0.14.0) and `pkg/features/kube_features.go` (the gate DRA quota sits behind)."""

from __future__ import annotations

from typing import NamedTuple

from gpuconf.api.cluster.kueue import KueueRelease

GROUP = "kueue.x-k8s.io"


class ReleaseFacts(NamedTuple):
    api_version: str
    cohort_field: str
    """ClusterQueue.spec's cohort key: cohort in v1beta1, cohortName in v1beta2."""
    dra_gate: str | None
    """The feature gate behind deviceClassMappings; None where the release cannot count DRA devices."""
    dra_gate_on_by_default: bool
    config_api_version: str
    """The apiVersion of Kueue's own Configuration file (where deviceClassMappings go)."""


RELEASES: dict[KueueRelease, ReleaseFacts] = {
    "v0.13.10": ReleaseFacts(f"{GROUP}/v1beta1", "cohort", None, False, f"config.{GROUP}/v1beta1"),
    # DynamicResourceAllocation: alpha, off, from v0.14 to v0.17.
    "v0.14.8": ReleaseFacts(
        f"{GROUP}/v1beta1", "cohort", "DynamicResourceAllocation", False, f"config.{GROUP}/v1beta1"
    ),
    # KueueDRAIntegration: beta, on, from v0.18; v1beta2 is the storage version from v0.16.
    "v0.19.2": ReleaseFacts(
        f"{GROUP}/v1beta2", "cohortName", "KueueDRAIntegration", True, f"config.{GROUP}/v1beta2"
    ),
}
NEWEST: KueueRelease = "v0.19.2"


def facts(release: KueueRelease) -> ReleaseFacts:
    return RELEASES[release]
