"""Cluster-wide objects: namespaces, the RuntimeClass and the node runtime's RBAC."""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from gpuconf.api.base import kubernetes_minor
from gpuconf.api.cluster import Cluster, NodePool
from gpuconf.api.cluster.quota import NamespacePolicy
from gpuconf.compiler.plan.artifact import Artifact, manifest
from gpuconf.compiler.plan.meta import (
    FLUX_PRUNE,
    FLUX_SSA,
    SYNC_OPTIONS,
    WAVE_CONFIG,
    WAVE_NAMESPACES,
    labels,
    metadata,
)
from gpuconf.compiler.plan.own_node_policy import (
    key_set,
    metadata_variables,
    only_these_change,
    own_node_policy,
)
from gpuconf.compiler.plan.own_node_pool_labels import (
    CLASS_LABEL_REMOVED,
    pool_label_admitted,
    pool_label_kept,
    pool_label_variables,
    selected_keys,
)
from gpuconf.compiler.plan.pod_security import POD_SECURITY_PRIVILEGED
from gpuconf.compiler.plan.service_account import bound_cluster_role, service_account
from gpuconf.compiler.resolve.object_labels import CLUSTER_LABEL
from gpuconf.gpus.gfd_labels import gfd_keys

NODE_SERVICE_ACCOUNT = "gpuconf-node"
RUNTIME_CLASS = "nvidia"


def namespace_policies(cluster: Cluster) -> dict[str, NamespacePolicy]:
    """Every namespace gpuconf puts objects in, with who owns it; gpuconf's own is always created."""
    spec = cluster.spec
    policies: dict[str, NamespacePolicy] = {
        q.namespace: q.namespace_policy or spec.namespace_policy for q in spec.quotas
    }
    policies[spec.namespace] = "create"
    return dict(sorted(policies.items()))


# A Namespace holds every workload in it: neither agent may ever delete one because a
# quota left the cluster file or the Application/Kustomization was removed.
NEVER_DELETED = {
    SYNC_OPTIONS: "Prune=false,Delete=false",
    FLUX_PRUNE: "disabled",
}
# An adopted namespace belongs to someone else: apply only our labels, keep their fields.
ADOPTED = {
    SYNC_OPTIONS: "Prune=false,Delete=false,ServerSideApply=true",
    FLUX_PRUNE: "disabled",
    FLUX_SSA: "Merge",
}


KEPT_ANNOTATION = "gpuconf.dev/kept"
KEPT_NOTES = {
    False: "gpuconf no longer creates this namespace; delete this file when it may go",
    True: (
        "gpuconf no longer creates this namespace, its own until spec.namespace changed; "
        "delete this file when it may go"
    ),
}
"""By whether it was gpuconf's own namespace: the next render reads it back from here."""


class KeptNamespace(NamedTuple):
    """A Namespace an earlier render created that this one no longer creates: it stays
    (compiler/kept_namespaces.py finds them)."""

    name: str
    held_gpuconf: bool
    """It was gpuconf's own namespace (spec.namespace), not a quota's."""

    @property
    def path(self) -> str:
        return f"namespaces/{self.name}.yaml"


def _namespace(
    cluster: Cluster, name: str, annotations: dict[str, str], labels: dict[str, str] | None = None
) -> Artifact:
    meta = metadata(cluster, name, "namespace", wave=WAVE_NAMESPACES)
    if labels is not None:
        meta["labels"] = labels
    meta["annotations"].update(annotations)
    return manifest(f"namespaces/{name}.yaml", "namespace.yaml.j2", "Namespace", {"meta": meta})


def namespaces(cluster: Cluster, kept: Sequence[KeptNamespace] = ()) -> list[Artifact]:
    """The namespaces the cluster file asks for, then those kept from earlier renders (with
    today's metadata: a former own namespace admits privileged pods no more)."""
    artifacts = []
    for name, policy in namespace_policies(cluster).items():
        if policy == "adopt":
            owner = {CLUSTER_LABEL: cluster.metadata.name}
            artifacts.append(_namespace(cluster, name, ADOPTED, owner))
        elif name == cluster.spec.namespace:
            own = {**labels(cluster, "namespace"), **POD_SECURITY_PRIVILEGED}
            artifacts.append(_namespace(cluster, name, NEVER_DELETED, own))
        elif policy == "create":
            artifacts.append(_namespace(cluster, name, NEVER_DELETED))
    for namespace in kept:
        annotations = {**NEVER_DELETED, KEPT_ANNOTATION: KEPT_NOTES[namespace.held_gpuconf]}
        artifacts.append(_namespace(cluster, namespace.name, annotations))
    return artifacts


def runtime_class(cluster: Cluster) -> Artifact:
    return manifest(
        "cluster/runtimeclass-nvidia.yaml",
        "runtimeclass.yaml.j2",
        "RuntimeClass",
        {
            "meta": metadata(cluster, RUNTIME_CLASS, "runtime", wave=WAVE_CONFIG),
            "handler": RUNTIME_CLASS,
        },
    )


def node_rbac(
    cluster: Cluster, pool_labels: Sequence[tuple[NodePool, Sequence[str]]] = ()
) -> list[Artifact]:
    """`gpuconf node` annotates and labels its own Node, and nothing else. `pool_labels`: every
    pool with the label keys its nodes publish beyond GFD's (gfd_labels.pool_keys)."""
    # RBAC cannot say "only your own Node": patch is granted only where an admission policy
    # (GA in 1.30) narrows it to the pod's own Node and gpuconf's annotations. Before 1.30 the
    # node runtime only reads Nodes and logs that it could not annotate.
    own_node_policy = kubernetes_minor(cluster.spec.kubernetes.version) >= 30
    verbs = ["get", "patch"] if own_node_policy else ["get"]
    policy = own_node_policy_objects(cluster, pool_labels) if own_node_policy else []
    rules = [{"apiGroups": [""], "resources": ["nodes"], "verbs": verbs}]
    return [
        *policy,
        service_account(cluster, "cluster", NODE_SERVICE_ACCOUNT, "node-runtime"),
        *bound_cluster_role(cluster, "cluster", NODE_SERVICE_ACCOUNT, "node-runtime", rules),
    ]


ANNOTATION_PREFIX = "gpuconf.dev/"


def own_node_policy_objects(
    cluster: Cluster, pool_labels: Sequence[tuple[NodePool, Sequence[str]]] = ()
) -> list[Artifact]:
    """A ValidatingAdmissionPolicy: gpuconf-node may change only its own Node's gpuconf
    annotations and the label keys it publishes (gpus/gfd_labels.py, for spec.node.labels):
    GFD's anywhere, its pool's (pool label, class and MIG labels) only on its pool's Nodes
    (own_node_pool_labels.py), and never a label a pool selects its nodes by."""
    variables = metadata_variables("labels") + metadata_variables("annotations")
    if pool_labels:
        selected = selected_keys(cluster.spec.node_pools)
        pool_variables = pool_label_variables(pool_labels, selected)
        variables += [
            *pool_variables,
            {
                "name": "own_labels",
                "expression": key_set(set(gfd_keys(cluster.spec.node.labels.owner)) - selected),
            },
        ]
        pool_own = pool_label_admitted(mig=any(v["name"] == "mig_labels" for v in pool_variables))
        own = f"k in variables.own_labels || {pool_own} || ({CLASS_LABEL_REMOVED})"
        labels_kept = f"{only_these_change('labels', own)} && {pool_label_kept()}"
        what = f"{ANNOTATION_PREFIX} annotations and its own pool's labels"
    else:
        labels_kept = "variables.new_labels == variables.old_labels"
        what = f"{ANNOTATION_PREFIX} annotations"
    annotations_kept = only_these_change("annotations", f"k.startsWith('{ANNOTATION_PREFIX}')")
    return own_node_policy(
        cluster,
        NODE_SERVICE_ACCOUNT,
        "node-runtime",
        changes=f"object.spec == oldObject.spec && {labels_kept} && {annotations_kept}",
        message=f"{NODE_SERVICE_ACCOUNT} may change only {what}",
        variables=variables,
    )
