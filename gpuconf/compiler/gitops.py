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
from gpuconf.compiler.plan.readme import GENERATED_MARK
from gpuconf.compiler.render import RenderedTree, render

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
    labels = {"app.kubernetes.io/managed-by": "gpuconf", "app.kubernetes.io/part-of": "gpuconf"}
    if cluster is not None:
        labels["gpuconf.dev/cluster"] = cluster
    return labels


def _readme(title: str, body: str) -> Artifact:
    mark = f"{GENERATED_MARK} the rendered clusters by `gpuconf gitops`; edits are overwritten."
    return Artifact("README.md", f"# {title}\n\n{mark}\n\n{body}\n", "text")


def _folder(artifacts: list[Artifact], title: str, body: str) -> RenderedTree:
    return render([*artifacts, kustomization(artifacts), _readme(title, body)])


# --- Argo CD ------------------------------------------------------------------------------


def _application_spec(source: GitSource, path: str, cluster: str) -> dict[str, Any]:
    destination = {"name": cluster} if source.destination_by_name else {"server": IN_CLUSTER}
    return {
        "project": "default",
        "source": {"repoURL": source.repo_url, "targetRevision": source.revision, "path": path},
        "destination": destination,
        # Client-side apply copies each object into an annotation, and a ConfigMap near the
        # 1 MiB object limit (compiler/object_limits.py) is far over the 256 KiB annotations may
        # take; server-side apply keeps no such copy, as Flux's kustomize-controller does.
        "syncPolicy": {
            "automated": {"prune": True, "selfHeal": True},
            "syncOptions": ["ServerSideApply=true"],
        },
    }


def _application(source: GitSource, cluster: str) -> Artifact:
    return manifest(
        f"application-{cluster}.yaml",
        {
            "apiVersion": "argoproj.io/v1alpha1",
            "kind": "Application",
            "metadata": {
                "name": f"gpuconf-{cluster}",
                "namespace": ARGOCD_NAMESPACE,
                "labels": _labels(cluster),
            },
            "spec": _application_spec(source, source.cluster_path(cluster), cluster),
        },
    )


def _application_set(source: GitSource) -> Artifact:
    basename = "{{.path.basename}}"
    return manifest(
        "applicationset.yaml",
        {
            "apiVersion": "argoproj.io/v1alpha1",
            "kind": "ApplicationSet",
            "metadata": {"name": "gpuconf", "namespace": ARGOCD_NAMESPACE, "labels": _labels()},
            "spec": {
                "goTemplate": True,
                "goTemplateOptions": ["missingkey=error"],
                "generators": [
                    {
                        "git": {
                            "repoURL": source.repo_url,
                            "revision": source.revision,
                            "directories": [{"path": source.cluster_path("*")}],
                        }
                    }
                ],
                "template": {
                    "metadata": {
                        "name": f"gpuconf-{basename}",
                        "labels": {**_labels(), "gpuconf.dev/cluster": basename},
                    },
                    "spec": _application_spec(source, "{{.path.path}}", basename),
                },
            },
        },
    )


def argocd(source: GitSource, clusters: Mapping[str, RenderedTree]) -> dict[str, RenderedTree]:
    """Two folders; apply one: `applications/` (one per cluster) or `applicationset/`."""
    applications = [_application(source, name) for name in sorted(clusters)]
    return {
        "applications": _folder(
            applications,
            "Argo CD Applications",
            "One Application per rendered cluster: `kubectl apply -k` this folder into the\n"
            "namespace where Argo CD runs. Use this folder or `../applicationset/`, not both.",
        ),
        "applicationset": _folder(
            [_application_set(source)],
            "Argo CD ApplicationSet",
            "One Application for every folder under the rendered tree, found by Argo CD's\n"
            "Git directory generator: a new cluster needs no new file here.",
        ),
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
    spec: dict[str, Any] = {
        "interval": "10m",
        "retryInterval": "1m",
        "timeout": "5m",
        "path": f"./{source.cluster_path(cluster)}/{stage}",
        "prune": True,
        "wait": True,
        "sourceRef": {"kind": "GitRepository", "name": SOURCE_NAME},
    }
    if after:
        spec["dependsOn"] = [{"name": _stage_name(cluster, s)} for s in after]
    return manifest(
        f"kustomization-{stage}.yaml",
        {
            "apiVersion": "kustomize.toolkit.fluxcd.io/v1",
            "kind": "Kustomization",
            "metadata": {
                "name": _stage_name(cluster, stage),
                "namespace": FLUX_NAMESPACE,
                "labels": _labels(cluster),
            },
            "spec": spec,
        },
    )


def _git_repository(source: GitSource) -> Artifact:
    return manifest(
        "gitrepository.yaml",
        {
            "apiVersion": "source.toolkit.fluxcd.io/v1",
            "kind": "GitRepository",
            "metadata": {"name": SOURCE_NAME, "namespace": FLUX_NAMESPACE, "labels": _labels()},
            "spec": {"interval": "5m", "url": source.repo_url, "ref": {"branch": source.revision}},
        },
    )


def flux(source: GitSource, clusters: Mapping[str, RenderedTree]) -> dict[str, RenderedTree]:
    """A folder per cluster: the GitRepository and the cluster's chain of Kustomizations."""
    folders = {}
    for cluster, tree in sorted(clusters.items()):
        artifacts = [_git_repository(source)]
        previous: list[str] = []
        for group in stages(tree):
            artifacts += [_flux_kustomization(source, cluster, s, previous) for s in group]
            previous = group
        folders[cluster] = _folder(
            artifacts,
            f"Flux for cluster {cluster}",
            f"Apply this folder (`kubectl apply -k`, or list it in the cluster's Flux bootstrap\n"
            f"Kustomization) on cluster {cluster}. Each Kustomization applies one folder of\n"
            f"`{source.cluster_path(cluster)}/` and waits, through `dependsOn` and `wait: true`,\n"
            f"until the folders before it are applied and healthy.",
        )
    return folders


def gitops(
    agent: Agent, source: GitSource, clusters: Mapping[str, RenderedTree]
) -> dict[str, RenderedTree]:
    return argocd(source, clusters) if agent == "argocd" else flux(source, clusters)
