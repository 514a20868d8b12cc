"""A real server-side apply of one rendered cluster as gpuconf (as Argo CD and Flux apply it),
a second apply that changes nothing, and a re-render without one class whose apply prunes
exactly what render removes.

"Prune" here means what Argo CD's and Flux's pruning do with a rendered tree: the objects the
previous tree had and the new one lacks, by identity (apiVersion, kind, namespace, name), are
deleted. The new tree is what `gpuconf render` writes over the previous one (which keeps a
namespace the cluster no longer declares, compiler/kept_namespaces.py); the pruned objects must
be those of the files `gpuconf diff` showed going to /dev/null, and afterwards the server holds
exactly the new tree's objects under the cluster's label."""

from __future__ import annotations

import itertools
import shutil
from collections.abc import Iterator
from typing import Any

import pytest
import yaml
from builders import RENDERED, cluster_file, read_tree, run_cli
from control_plane.manifests import (
    admission_refusals,
    delete_objects,
    ensure_namespaces,
    install_crds,
    tree_objects,
)
from control_plane.server import FIELD_MANAGER, Server, identity

CLUSTER, REMOVED_CLASS = "dra-lab", "big-memory"
Identity = tuple[str, str, str, str]


def _without_class(document: dict[str, Any], name: str) -> dict[str, Any]:
    spec = document["spec"]
    spec["resourceClasses"] = [c for c in spec["resourceClasses"] if c["name"] != name]
    for quota in spec["quotas"]:
        quota["classes"].pop(name, None)
    spec["quotas"] = [q for q in spec["quotas"] if q["classes"]]
    return document


@pytest.fixture(scope="module")
def old_tree() -> dict[str, bytes]:
    return read_tree(RENDERED / CLUSTER)


@pytest.fixture(scope="module")
def rerendered(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, bytes], set[str]]:
    """The tree `gpuconf render` writes over rendered/dra-lab once the class is removed, and
    the files `gpuconf diff` said beforehand it would delete."""
    folder = tmp_path_factory.mktemp("rerender")
    (folder / "clusters").mkdir()
    document = _without_class(cluster_file(CLUSTER), REMOVED_CLASS)
    (folder / "clusters" / f"{CLUSTER}.yaml").write_text(yaml.safe_dump(document), encoding="utf-8")
    shutil.copytree(RENDERED / CLUSTER, folder / "rendered" / CLUSTER)
    diff = run_cli("diff", "clusters", "-o", "rendered", cwd=folder)
    assert diff.code == 0, diff.err
    lines = diff.out.splitlines()
    removed = {
        old.removeprefix(f"--- a/{CLUSTER}/")
        for old, new in itertools.pairwise(lines)
        if old.startswith("--- a/") and new == "+++ /dev/null"
    }
    render = run_cli("render", "clusters", "-o", "rendered", cwd=folder)
    assert render.code == 0, render.err
    return read_tree(folder / "rendered" / CLUSTER), removed


@pytest.fixture
def server(api_server: Server, old_tree: dict[str, bytes]) -> Iterator[Server]:
    install_crds(api_server)  # the tree's Kueue and Prometheus Operator kinds
    objects = tree_objects(old_tree)
    delete_objects(api_server, objects)  # a reused control plane may hold an earlier run's
    # Namespaces the tree uses but another installs (the GPU Operator's) exist beforehand.
    declared = {d["metadata"]["name"] for _, d in objects if d["kind"] == "Namespace"}
    ensure_namespaces(
        api_server, [o for o in objects if o[1]["metadata"].get("namespace") not in declared]
    )
    yield api_server
    delete_objects(api_server, objects)


def _apply(server: Server, tree: dict[str, bytes]) -> None:
    refusals = admission_refusals(server, tree, dry_run=False)
    assert not refusals, "\n".join(refusals)


def _stored(server: Server, tree: dict[str, bytes]) -> dict[Identity, dict[str, Any]]:
    found = {}
    for _, document in tree_objects(tree):
        stored = server.get(*identity(document))
        assert stored is not None, identity(document)
        found[identity(document)] = stored
    return found


def test_a_real_apply_stores_every_object_with_gpuconf_as_its_field_manager(
    server: Server, old_tree: dict[str, bytes]
) -> None:
    _apply(server, old_tree)
    for key, stored in _stored(server, old_tree).items():
        managers = {(m["manager"], m["operation"]) for m in stored["metadata"]["managedFields"]}
        assert (FIELD_MANAGER, "Apply") in managers, key


def test_applying_the_same_tree_again_changes_nothing(
    server: Server, old_tree: dict[str, bytes]
) -> None:
    _apply(server, old_tree)
    before = _stored(server, old_tree)
    _apply(server, old_tree)
    after = _stored(server, old_tree)
    for key, stored in before.items():
        assert after[key]["metadata"]["resourceVersion"] == stored["metadata"]["resourceVersion"], (
            key
        )
        assert after[key]["metadata"]["managedFields"] == stored["metadata"]["managedFields"], key


def _labelled(server: Server, kinds: set[tuple[str, str]]) -> set[Identity]:
    selector = f"gpuconf.dev/cluster={CLUSTER}"
    return {
        identity({**stored, "apiVersion": api_version, "kind": kind})
        for api_version, kind in sorted(kinds)
        for stored in server.list(api_version, kind, selector)
        if "deletionTimestamp" not in stored["metadata"]
    }


def test_a_rerender_without_a_class_prunes_exactly_what_render_removes(
    server: Server, old_tree: dict[str, bytes], rerendered: tuple[dict[str, bytes], set[str]]
) -> None:
    new_tree, removed_files = rerendered
    _apply(server, old_tree)
    old = {identity(d) for _, d in tree_objects(old_tree)}
    new = {identity(d) for _, d in tree_objects(new_tree)}
    pruned = old - new
    assert removed_files == set(old_tree) - set(new_tree)
    assert pruned == {identity(d) for f, d in tree_objects(old_tree) if f in removed_files}
    assert ("resource.k8s.io/v1", "DeviceClass", "", REMOVED_CLASS) in pruned
    assert ("v1", "Namespace", "", "training") in new  # kept by render, so not pruned

    _apply(server, new_tree)
    for key in pruned:
        server.delete(*key)
    kinds = {(k[0], k[1]) for k in old}
    assert not [key for key in pruned if server.get(*key) is not None]
    assert _labelled(server, kinds) == new
    assert server.get("v1", "ResourceQuota", "training", "gpuconf-gpus") is None

    _apply(server, old_tree)  # and back: the pruned objects can be created again
    assert _labelled(server, kinds) == old
