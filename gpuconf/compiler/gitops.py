"""GitOps glue: what Argo CD or Flux needs to sync every rendered cluster from a Git repository.

Argo CD: an Application per cluster, or one ApplicationSet over the rendered folders; both
sync the cluster's kustomization.yaml, and the objects' sync waves order the apply.
Flux ignores sync waves, so each cluster becomes a chain of Kustomizations, one per top
folder of its tree (namespaces → cluster → quotas, claims, monitoring… → pools), each
waiting (`dependsOn`, `wait: true`) until the one before it is applied and healthy.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from gpuconf.compiler.plan.artifact import Artifact, manifest
from gpuconf.compiler.plan.kustomization import kustomization
from gpuconf.compiler.render import RenderedTree, render
from gpuconf.compiler.resolve.object_labels import (
    CLUSTER_LABEL,
    MANAGED_BY,
    MANAGED_BY_LABEL,
    PART_OF,
    PART_OF_LABEL,
)
from gpuconf.compiler.templating.engine import Templates

Agent = Literal["argocd", "flux"]
ARGOCD_NAMESPACE = "argocd"
FLUX_NAMESPACE = "flux-system"
IN_CLUSTER = "https://kubernetes.default.svc"
SOURCE_NAME = "gpuconf"
# Flux has no sync waves: these ranks say which folders must be applied and healthy first.
FIRST_STAGES = {"namespaces": 0, "cluster": 1}
# Monitoring (PodMonitor, NetworkPolicy) comes last beside pools, not before them: a cluster
# without the Prometheus Operator's CRDs fails that stage, and no GPU node may wait on it.
# Kueue's queues likewise: they need Kueue's CRDs, which the GPU nodes do not.
LAST_STAGES = {"pools": 3, "monitoring": 3, "kueue": 3}
MIDDLE_RANK = 2


@dataclass(frozen=True)
class GitSource:
    repo_url: str
    revision: str
    rendered_path: str
    """The output folder's path inside the repository, POSIX, without ./"""
    destination_by_name: bool = False
    """Argo CD: send each cluster to the Argo CD cluster of the same name, not in-cluster."""

    def cluster_path(self, cluster: str) -> str:
        return f"{self.rendered_path}/{cluster}" if self.rendered_path else cluster


def _labels(cluster: str | None = None) -> dict[str, str]:
    labels = {MANAGED_BY_LABEL: MANAGED_BY, PART_OF_LABEL: PART_OF}
    if cluster is not None:
        labels[CLUSTER_LABEL] = cluster
    return labels


def _readme(folder: str, **values: str) -> Artifact:
    return Artifact("README.md", "gitops-readme.md.j2", {"folder": folder, **values})


def _folder(artifacts: list[Artifact], readme: Artifact, templates: Templates) -> RenderedTree:
    # The repository, revision and paths come from the command line, which no gpuconf schema
    # checks: each object is checked against its CRD's schema as it is rendered.
    checked = [artifact._replace(outside_input=True) for artifact in artifacts]
    return render([*checked, kustomization(artifacts), readme], templates)


# --- Argo CD ------------------------------------------------------------------------------


def _application_spec(source: GitSource, path: str, cluster: str) -> dict[str, Any]:
    destination = {"name": cluster} if source.destination_by_name else {"server": IN_CLUSTER}
    return {
        "repo_url": source.repo_url,
        "revision": source.revision,
        "path": path,
        "destination": destination,
    }


def _application(source: GitSource, cluster: str) -> Artifact:
    return manifest(
        f"application-{cluster}.yaml",
        "argocd-application.yaml.j2",
        "Application",
        {
            "meta": {
                "name": f"gpuconf-{cluster}",
                "namespace": ARGOCD_NAMESPACE,
                "labels": _labels(cluster),
            },
            **_application_spec(source, source.cluster_path(cluster), cluster),
        },
    )


def _application_set(source: GitSource) -> Artifact:
    basename = "{{.path.basename}}"
    return manifest(
        "applicationset.yaml",
        "argocd-applicationset.yaml.j2",
        "ApplicationSet",
        {
            "meta": {"name": "gpuconf", "namespace": ARGOCD_NAMESPACE, "labels": _labels()},
            "directories": source.cluster_path("*"),
            "basename": basename,
            "template_labels": _labels(basename),
            **_application_spec(source, "{{.path.path}}", basename),
        },
    )


def argocd(
    source: GitSource, clusters: Mapping[str, RenderedTree], templates: Templates
) -> dict[str, RenderedTree]:
    """Two folders; apply one: `applications/` (one per cluster) or `applicationset/`."""
    applications = [_application(source, name) for name in sorted(clusters)]
    return {
        "applications": _folder(applications, _readme("applications"), templates),
        "applicationset": _folder([_application_set(source)], _readme("applicationset"), templates),
    }


# --- Flux ---------------------------------------------------------------------------------


def stages(tree: RenderedTree) -> list[list[str]]:
    """The cluster's top folders holding manifests, grouped by rank, each group sorted."""
    # Every file in a cluster's sub-folder is a manifest its kustomization lists.
    folders = {path.split("/", 1)[0] for path in tree if "/" in path}
    ranks: dict[int, list[str]] = {}
    for folder in sorted(folders):
        rank = FIRST_STAGES.get(folder, LAST_STAGES.get(folder, MIDDLE_RANK))
        ranks.setdefault(rank, []).append(folder)
    return [ranks[rank] for rank in sorted(ranks)]


def _stage_name(cluster: str, stage: str) -> str:
    return f"gpuconf-{cluster}-{stage}"


def _flux_kustomization(source: GitSource, cluster: str, stage: str, after: list[str]) -> Artifact:
    return manifest(
        f"kustomization-{stage}.yaml",
        "flux-kustomization.yaml.j2",
        "Kustomization",
        {
            "meta": {
                "name": _stage_name(cluster, stage),
                "namespace": FLUX_NAMESPACE,
                "labels": _labels(cluster),
            },
            "path": f"./{source.cluster_path(cluster)}/{stage}",
            "source_name": SOURCE_NAME,
            "depends_on": [_stage_name(cluster, s) for s in after],
        },
    )


def _git_repository(source: GitSource) -> Artifact:
    return manifest(
        "gitrepository.yaml",
        "flux-gitrepository.yaml.j2",
        "GitRepository",
        {
            "meta": {"name": SOURCE_NAME, "namespace": FLUX_NAMESPACE, "labels": _labels()},
            "url": source.repo_url,
            "branch": source.revision,
        },
    )


def flux(
    source: GitSource, clusters: Mapping[str, RenderedTree], templates: Templates
) -> dict[str, RenderedTree]:
    """A folder per cluster: the GitRepository and the cluster's chain of Kustomizations."""
    folders = {}
    for cluster, tree in sorted(clusters.items()):
        artifacts = [_git_repository(source)]
        previous: list[str] = []
        for group in stages(tree):
            artifacts += [_flux_kustomization(source, cluster, s, previous) for s in group]
            previous = group
        readme = _readme("flux", cluster=cluster, cluster_path=source.cluster_path(cluster))
        folders[cluster] = _folder(artifacts, readme, templates)
    return folders


def gitops(
    agent: Agent, source: GitSource, clusters: Mapping[str, RenderedTree], templates: Templates
) -> dict[str, RenderedTree]:
    return (
        argocd(source, clusters, templates)
        if agent == "argocd"
        else flux(source, clusters, templates)
    )
