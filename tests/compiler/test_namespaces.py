"""Namespaces are never lost: every Namespace gpuconf renders is protected from Argo CD's and
Flux's pruning and deletion, `adopt` only labels, `external` renders none, system ones are refused."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from builders import cluster, cluster_file, errors, load_yaml, pool, rendered

ARGOCD_SYNC_OPTIONS = "argocd.argoproj.io/sync-options"
FLUX_PRUNE = "kustomize.toolkit.fluxcd.io/prune"


def _namespaces(tree: dict[str, bytes]) -> dict[str, dict[str, Any]]:
    objects = (load_yaml(data) for path, data in tree.items() if path.startswith("namespaces/"))
    return {obj["metadata"]["name"]: obj for obj in objects if obj["kind"] == "Namespace"}


def _argocd_prunes(obj: dict[str, Any]) -> bool:
    """Argo CD prunes unless the object's sync options (comma-separated) say Prune=false."""
    options = obj["metadata"].get("annotations", {}).get(ARGOCD_SYNC_OPTIONS, "")
    return "Prune=false" not in [o.strip() for o in options.split(",")]


def _flux_prunes(obj: dict[str, Any]) -> bool:
    """Flux garbage-collects unless a label or annotation sets prune to disabled."""
    meta = obj["metadata"]
    marks = {**meta.get("labels", {}), **meta.get("annotations", {})}
    return marks.get(FLUX_PRUNE) != "disabled"


def _lab(**spec: Any) -> dict[str, Any]:
    document = cluster_file("lab")
    document["spec"].update(spec)
    return document


def test_every_rendered_namespace_is_never_pruned_nor_deleted(compiled_examples) -> None:  # type: ignore[no-untyped-def]
    for name, tree in compiled_examples.rendered.items():
        for namespace, obj in _namespaces(tree).items():
            where = f"{name}: {namespace}"
            options = obj["metadata"]["annotations"][ARGOCD_SYNC_OPTIONS].split(",")
            assert {"Prune=false", "Delete=false"} <= set(options), where
            assert not _argocd_prunes(obj), where
            assert not _flux_prunes(obj), where


def test_removing_a_quota_deletes_no_namespace_from_the_cluster() -> None:
    before = rendered(_lab())
    without_students = _lab()
    without_students["spec"]["quotas"] = [
        q for q in without_students["spec"]["quotas"] if q["namespace"] != "students"
    ]
    after = rendered(without_students)
    left_the_tree = _namespaces(before).keys() - _namespaces(after).keys()
    assert left_the_tree == {"students"}
    assert "quotas/students.yaml" not in after
    # What the agents do with an object that left the tree: prune it, unless it says not to.
    for namespace in left_the_tree:
        live = _namespaces(before)[namespace]
        assert not _argocd_prunes(live)
        assert not _flux_prunes(live)


def test_adopt_labels_an_existing_namespace_without_owning_it() -> None:
    document = _lab()
    document["spec"]["quotas"][0]["namespacePolicy"] = "adopt"
    research = _namespaces(rendered(document))["research"]
    assert research["metadata"]["labels"] == {"gpuconf.dev/cluster": "lab"}
    annotations = research["metadata"]["annotations"]
    assert annotations[ARGOCD_SYNC_OPTIONS] == "Prune=false,Delete=false,ServerSideApply=true"
    assert annotations["kustomize.toolkit.fluxcd.io/ssa"] == "Merge"
    assert annotations[FLUX_PRUNE] == "disabled"


def test_external_renders_only_the_quota() -> None:
    tree = rendered(_lab(namespacePolicy="external"))
    assert set(_namespaces(tree)) == {"gpuconf-system"}
    assert {"quotas/research.yaml", "quotas/students.yaml"} <= set(tree)
    resources = load_yaml(tree["kustomization.yaml"])["resources"]
    assert "namespaces/research.yaml" not in resources


def test_a_quota_policy_overrides_the_cluster_wide_one() -> None:
    document = _lab(namespacePolicy="external")
    document["spec"]["quotas"][1]["namespacePolicy"] = "create"
    assert set(_namespaces(rendered(document))) == {"gpuconf-system", "students"}


def test_gpuconfs_own_namespace_is_always_created() -> None:
    document = _lab(namespacePolicy="external")
    document["spec"]["quotas"][0]["namespace"] = "gpuconf-system"
    namespace = _namespaces(rendered(document))["gpuconf-system"]
    assert namespace["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "gpuconf"


@pytest.mark.parametrize("name", ["default", "kube-system", "kube-public", "kube-node-lease"])
@pytest.mark.parametrize("policy", ["create", "adopt"])
def test_a_system_namespace_is_refused_as_a_managed_namespace(name: str, policy: str) -> None:
    document = cluster(
        [pool("t4", "Tesla-T4", 1)],
        [{"name": "t4", "select": {"model": "Tesla-T4"}}],
        quotas=[{"namespace": name, "namespacePolicy": policy, "classes": {"t4": 1}}],
    )
    [error] = errors(document)
    assert error.path == ("spec", "quotas", 0, "namespace")
    assert "namespacePolicy: external" in error.hint


def test_a_system_namespace_with_external_policy_gets_only_its_quota() -> None:
    document = cluster(
        [pool("t4", "Tesla-T4", 1)],
        [{"name": "t4", "select": {"model": "Tesla-T4"}}],
        quotas=[{"namespace": "default", "namespacePolicy": "external", "classes": {"t4": 1}}],
    )
    tree = rendered(copy.deepcopy(document))
    assert "default" not in _namespaces(tree)
    assert load_yaml(tree["quotas/default.yaml"])["metadata"]["namespace"] == "default"
