"""A ValidatingAdmissionPolicy for the driver installer's account (gpuconf-driver-manager): RBAC
cannot say "only your own Node", so its Node patches are narrowed here to the Node its pod runs
on, and there to what a driver upgrade changes: the cordon (spec.unschedulable), NVIDIA's
`nvidia.com/gpu.deploy.*` labels (k8s-driver-manager pauses and restores them), gpuconf's
`gpuconf.dev/driver-upgrade` and `gpuconf.dev/driver-version` labels and the annotation that
marks gpuconf's cordon (api/driver_upgrade.py). Policies are GA from Kubernetes 1.30 (and the
pod's node in its token's user info from then too); before that RBAC alone holds."""

from __future__ import annotations

from gpuconf.api.base import kubernetes_minor
from gpuconf.api.cluster import Cluster
from gpuconf.api.driver_upgrade import CORDONED_ANNOTATION, UPGRADE_LABEL, VERSION_LABEL
from gpuconf.compiler.plan.artifact import Artifact
from gpuconf.compiler.plan.own_node_policy import (
    metadata_variables,
    only_these_change,
    own_node_policy,
)
from gpuconf.gpus.gpu_operator import DEPLOY_PREFIX

POLICY_FROM_MINOR = 30
# NodeSpec's fields (k8s.io/api core/v1 types.go, 1.34) but unschedulable: none may change.
OTHER_SPEC_FIELDS = ("podCIDR", "podCIDRs", "providerID", "taints", "configSource", "externalID")


def _spec_kept() -> str:
    return " && ".join(
        f"has(object.spec.{f}) == has(oldObject.spec.{f}) && "
        f"(!has(object.spec.{f}) || object.spec.{f} == oldObject.spec.{f})"
        for f in OTHER_SPEC_FIELDS
    )


def driver_upgrade_policy(cluster: Cluster, account: str) -> list[Artifact]:
    if kubernetes_minor(cluster.spec.kubernetes.version) < POLICY_FROM_MINOR:
        return []
    variables = metadata_variables("labels") + metadata_variables("annotations")
    labels = f"k.startsWith('{DEPLOY_PREFIX}') || k == '{UPGRADE_LABEL}' || k == '{VERSION_LABEL}'"
    what = (
        f"{account} may change only its Node's cordon, {DEPLOY_PREFIX}* labels, "
        f"{UPGRADE_LABEL} and {VERSION_LABEL} labels and {CORDONED_ANNOTATION} annotation"
    )
    return own_node_policy(
        cluster,
        account,
        "driver",
        changes=" && ".join(
            [
                _spec_kept(),
                only_these_change("labels", labels),
                only_these_change("annotations", f"k == '{CORDONED_ANNOTATION}'"),
            ]
        ),
        message=what,
        variables=variables,
    )
