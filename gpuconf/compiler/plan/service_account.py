"""A workload's identity: its ServiceAccount in gpuconf's namespace and, where it calls the API,
a ClusterRole bound to it, named `<account>-<namespace>` (one cluster may hold several
gpuconf namespaces). gpuconf node, the driver manager and dcgm-exporter each have one."""

from __future__ import annotations

from typing import Any

from gpuconf.api.cluster import Cluster
from gpuconf.compiler.plan.artifact import Artifact, manifest
from gpuconf.compiler.plan.meta import WAVE_CONFIG, metadata
from gpuconf.diagnostics import KeyPath


def service_account(
    cluster: Cluster, folder: str, account: str, component: str, source: KeyPath = ()
) -> Artifact:
    namespace = cluster.spec.namespace
    meta = metadata(cluster, account, component, namespace=namespace, wave=WAVE_CONFIG)
    return manifest(
        f"{folder}/serviceaccount-{account}.yaml",
        "serviceaccount.yaml.j2",
        "ServiceAccount",
        {"meta": meta},
        source=source,
    )


def bound_cluster_role(
    cluster: Cluster,
    folder: str,
    account: str,
    component: str,
    rules: list[dict[str, Any]],
    source: KeyPath = (),
) -> list[Artifact]:
    """The ClusterRole granting `rules`, and its binding to the account."""
    namespace = cluster.spec.namespace
    role = f"{account}-{namespace}"
    meta = metadata(cluster, role, component, wave=WAVE_CONFIG)
    return [
        manifest(
            f"{folder}/clusterrole-{account}.yaml",
            "clusterrole.yaml.j2",
            "ClusterRole",
            {"meta": meta, "rules": rules},
            source=source,
        ),
        manifest(
            f"{folder}/clusterrolebinding-{account}.yaml",
            "clusterrolebinding.yaml.j2",
            "ClusterRoleBinding",
            {"meta": meta, "role": role, "service_account": account, "namespace": namespace},
            source=source,
        ),
    ]
