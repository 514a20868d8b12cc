"""Namespaces are never lost: every Namespace gpuconf renders is protected from Argo CD's and
Flux's pruning and deletion, a re-render keeps the ones it created after their last quota
goes, `adopt` only labels, `external` renders none, system ones are refused."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
from builders import (
    cluster,
    cluster_file,
    dump,
    errors,
    load_yaml,
    pool,
    rendered,
    run_cli,
    site_block,
)

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


def test_a_namespace_leaving_the_tree_is_still_never_pruned_by_the_agents() -> None:
    """A first render into an empty folder has no earlier tree to keep a namespace from."""
    before = rendered(_lab())
    without_students = _lab()
    without_students["spec"]["quotas"] = [
        q for q in without_students["spec"]["quotas"] if q["namespace"] != "students"
    ]
    after = rendered(without_students)
    left_the_tree = _namespaces(before).keys() - _namespaces(after).keys()
    assert left_the_tree == {"students"}
    # What the agents do with an object that left the tree: prune it, unless it says not to.
    live = _namespaces(before)["students"]
    assert not _argocd_prunes(live)
    assert not _flux_prunes(live)


def _render_lab(folder: Path, document: dict[str, Any]) -> str:
    (folder / "clusters").mkdir(exist_ok=True)
    (folder / "clusters" / "lab.yaml").write_text(dump(document))
    result = run_cli("render", cwd=folder)
    assert result.code == 0, result.err
    return result.err


def _without_quota(namespace: str, **spec: Any) -> dict[str, Any]:
    document = _lab(**spec)
    document["spec"]["quotas"] = [
        q for q in document["spec"]["quotas"] if q["namespace"] != namespace
    ]
    return document


def _files(folder: Path) -> dict[str, bytes]:
    lab = folder / "rendered" / "lab"
    return {p.relative_to(lab).as_posix(): p.read_bytes() for p in lab.rglob("*") if p.is_file()}


def test_removing_a_quota_and_re_rendering_deletes_no_namespace_manifest(tmp_path: Path) -> None:
    _render_lab(tmp_path, _lab())
    before = _files(tmp_path)
    notes = _render_lab(tmp_path, _without_quota("students"))
    after = _files(tmp_path)
    namespace_files = {p for p in before if p.startswith("namespaces/")}
    assert namespace_files <= after.keys()
    assert "quotas/students.yaml" not in after
    kept = load_yaml(after["namespaces/students.yaml"])
    expected = load_yaml(before["namespaces/students.yaml"])
    expected["metadata"]["annotations"]["gpuconf.dev/kept"] = (
        "gpuconf no longer creates this namespace; delete this file when it may go"
    )
    assert kept == expected
    kubernetes_validate.validate(kept, "1.34.0", strict=True)
    assert "namespaces/students.yaml" in load_yaml(after["kustomization.yaml"])["resources"]
    assert (
        "clusters/lab.yaml:28:3: spec.quotas: warning: gpuconf no longer creates namespace "
        "'students'; its Namespace stays in the rendered tree (lab/namespaces/students.yaml)"
    ) in notes
    assert run_cli("render", "--check", cwd=tmp_path).code == 0


def test_a_namespace_with_sync_options_a_site_added_is_still_kept(tmp_path: Path) -> None:
    """A site's block may add options to gpuconf's (plan/annotation_readers.py): the next
    render still knows the Namespace as one gpuconf created, by the same rule."""
    (tmp_path / "site").mkdir()
    site_block(
        tmp_path / "site",
        "namespace.yaml.j2",
        "extra_annotations",
        f"{ARGOCD_SYNC_OPTIONS}: Validate=false,Prune=false,Delete=false",
    )
    _render_lab(tmp_path, _lab(templates="../site"))
    _render_lab(tmp_path, _without_quota("students", templates="../site"))
    kept = load_yaml(_files(tmp_path)["namespaces/students.yaml"])["metadata"]["annotations"]
    assert kept[ARGOCD_SYNC_OPTIONS] == "Validate=false,Prune=false,Delete=false"
    assert "gpuconf.dev/kept" in kept


def test_a_kept_namespace_file_deleted_on_purpose_stays_deleted(tmp_path: Path) -> None:
    _render_lab(tmp_path, _lab())
    _render_lab(tmp_path, _without_quota("students"))
    (tmp_path / "rendered" / "lab" / "namespaces" / "students.yaml").unlink()
    _render_lab(tmp_path, _without_quota("students"))
    assert run_cli("render", "--check", cwd=tmp_path).code == 0
    after = _files(tmp_path)
    assert "namespaces/students.yaml" not in after
    assert "namespaces/students.yaml" not in load_yaml(after["kustomization.yaml"])["resources"]


def test_a_namespace_whose_quota_returns_is_rendered_as_planned_again(tmp_path: Path) -> None:
    _render_lab(tmp_path, _lab())
    first = _files(tmp_path)["namespaces/students.yaml"]
    _render_lab(tmp_path, _without_quota("students"))
    _render_lab(tmp_path, _lab())
    assert _files(tmp_path)["namespaces/students.yaml"] == first


def test_an_adopted_namespace_is_not_kept_after_its_quota_goes(tmp_path: Path) -> None:
    document = _lab()
    document["spec"]["quotas"][1]["namespacePolicy"] = "adopt"
    _render_lab(tmp_path, document)
    assert "namespaces/students.yaml" in _files(tmp_path)
    _render_lab(tmp_path, _without_quota("students"))
    assert "namespaces/students.yaml" not in _files(tmp_path)


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


def test_gpuconfs_former_own_namespace_is_kept_when_spec_namespace_changes(
    tmp_path: Path,
) -> None:
    _render_lab(tmp_path, _lab())
    before = load_yaml(_files(tmp_path)["namespaces/gpuconf-system.yaml"])["metadata"]
    notes = _render_lab(tmp_path, _lab(namespace="gpu-system"))
    files = _files(tmp_path)
    assert {"namespaces/gpuconf-system.yaml", "namespaces/gpu-system.yaml"} <= files.keys()
    assert "spec.namespace: warning: gpuconf no longer creates namespace 'gpuconf-system'" in notes
    # Its installers have left: Pod Security admits privileged pods only where they run now.
    privileged = "pod-security.kubernetes.io/enforce"
    kept = load_yaml(files["namespaces/gpuconf-system.yaml"])["metadata"]
    assert kept["labels"] == {k: v for k, v in before["labels"].items() if "pod-security" not in k}
    assert load_yaml(files["namespaces/gpu-system.yaml"])["metadata"]["labels"][privileged] == (
        "privileged"
    )
    # Later renders still know why it was kept, and change nothing.
    again = _render_lab(tmp_path, _lab(namespace="gpu-system"))
    assert "spec.namespace: warning: gpuconf no longer creates namespace 'gpuconf-system'" in again
    assert _files(tmp_path) == files


def test_a_created_namespace_turned_external_keeps_its_file(tmp_path: Path) -> None:
    _render_lab(tmp_path, _lab())
    document = _lab()
    document["spec"]["quotas"][1]["namespacePolicy"] = "external"
    notes = _render_lab(tmp_path, document)
    kept = load_yaml(_files(tmp_path)["namespaces/students.yaml"])
    assert "gpuconf.dev/kept" in kept["metadata"]["annotations"]
    assert "no longer creates namespace 'students'" in notes
