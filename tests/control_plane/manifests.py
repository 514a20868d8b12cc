"""Rendered trees as the API server receives them: their objects in apply order, the CRDs they
need, and what the server kept of what was sent."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import yaml
from control_plane.server import Refused, Server, identity

CRDS = Path(__file__).resolve().parent / "crds"
REPO = Path(__file__).resolve().parents[2]
CLUSTERS = REPO / "clusters"
KUEUE_CRDS = REPO / "gpuconf" / "compiler" / "kueue" / "crds"
SETUP_MANAGER = "gpuconf-tests"
"""Field manager of what the tests set up themselves (CRDs, bare namespaces), not gpuconf's."""
NOT_OBJECTS = {"kustomization.yaml"}
"""Files of a rendered tree that are kustomize's input, not objects for the API server."""
FIRST = ("CustomResourceDefinition", "Namespace")


def tree_objects(tree: dict[str, bytes]) -> list[tuple[str, dict[str, Any]]]:
    """(file, object) for every object in a rendered tree, Namespaces first, then by file: the
    kustomization's resources where the tree has one (what Argo CD and Flux apply; files beside
    it such as the GPU Operator's Helm values are for other tools), else every YAML file."""
    if "kustomization.yaml" in tree:
        files = yaml.safe_load(tree["kustomization.yaml"])["resources"]
    else:
        files = [p for p in tree if p.endswith(".yaml") and p.rpartition("/")[2] not in NOT_OBJECTS]
    found = [
        (path, document)
        for path in sorted(files)
        for document in yaml.safe_load_all(tree[path])
        if document
    ]
    return sorted(found, key=lambda item: item[1]["kind"] not in FIRST)


def is_object(document: Any) -> bool:
    return isinstance(document, dict) and {"apiVersion", "kind", "metadata"} <= document.keys()


def ensure_namespaces(server: Server, objects: list[tuple[str, dict[str, Any]]]) -> None:
    """Create (bare, as the tests' own) every namespace the objects live in or declare, so a
    dry run of the objects in them can be admitted: a dry-run Namespace is not stored."""
    names = {d["metadata"].get("namespace") for _, d in objects}
    names |= {d["metadata"]["name"] for _, d in objects if d["kind"] == "Namespace"}
    for name in sorted(filter(None, names)):
        if server.get("v1", "Namespace", "", name) is None:
            namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
            server.apply(namespace, manager=SETUP_MANAGER)


def kueue_crds() -> Path:
    """The CRDs of the one Kueue release the example clusters declare, as gpuconf vendors them
    (gpuconf/compiler/kueue/crds/README.md): one API server serves one release's."""
    declared = {
        (yaml.safe_load(path.read_text(encoding="utf-8"))["spec"].get("kueue") or {}).get("version")
        for path in CLUSTERS.glob("*.yaml")
    } - {None}
    (release,) = declared
    return KUEUE_CRDS / release


def install_crds(server: Server, folders: tuple[Path, ...] = ()) -> list[str]:
    """Apply every CRD vendored in `folders` (default: this folder's and the examples' Kueue
    release's) and wait until the server serves each kind."""
    installed = []
    paths = [path for folder in folders or (CRDS, kueue_crds()) for path in folder.glob("*.yaml")]
    for path in sorted(paths):
        for crd in filter(None, yaml.safe_load_all(path.read_text(encoding="utf-8"))):
            server.apply(crd, manager=SETUP_MANAGER)
            installed.append(crd["metadata"]["name"])
    deadline = time.monotonic() + 60
    for name in installed:
        while not _established(server, name):
            if time.monotonic() > deadline:
                raise TimeoutError(f"CRD {name} was not established within 60 s")
            time.sleep(0.2)
    server.forget_kinds()
    return installed


def _established(server: Server, name: str) -> bool:
    crd = server.get("apiextensions.k8s.io/v1", "CustomResourceDefinition", "", name)
    conditions = (crd or {}).get("status", {}).get("conditions") or []
    return any(c["type"] == "Established" and c["status"] == "True" for c in conditions)


def dropped_fields(sent: Any, kept: Any, path: str = "") -> list[str]:
    """Where the server's object lacks or changed what was sent: a field a disabled feature
    gate clears, or a value the server rewrote, is admitted silently but not what was meant."""
    if isinstance(sent, dict):
        if not isinstance(kept, dict):
            return [path or "."]
        return [
            lost
            for key, value in sent.items()
            for lost in (
                dropped_fields(value, kept[key], f"{path}.{key}")
                if key in kept
                else [f"{path}.{key}"]
            )
        ]
    if isinstance(sent, list):
        if not isinstance(kept, list) or len(kept) != len(sent):
            return [path]
        return [
            lost
            for index, (item, other) in enumerate(zip(sent, kept, strict=True))
            for lost in dropped_fields(item, other, f"{path}[{index}]")
        ]
    return [] if sent == kept else [f"{path}: sent {sent!r}, kept {kept!r}"]


def admission_refusals(server: Server, tree: dict[str, bytes], dry_run: bool) -> list[str]:
    """Apply every object of a tree as gpuconf; what the server refused, did not keep or
    warned about (a deprecated field, a value it corrected), one line each as file: message."""
    problems = []
    for path, document in tree_objects(tree):
        _, kind, namespace, name = identity(document)
        what = f"{kind} {namespace}/{name}" if namespace else f"{kind} {name}"
        try:
            response = server.apply(document, dry_run=dry_run)
        except Refused as refused:
            problems.append(f"{path}: {what}: refused ({refused.status}): {refused.message}")
            continue
        lost = dropped_fields(document, response.body)
        if lost:
            problems.append(f"{path}: {what}: admitted without {', '.join(lost)}")
        problems.extend(f"{path}: {what}: admitted with a warning: {w}" for w in response.warnings)
    return problems


def delete_objects(server: Server, objects: list[tuple[str, dict[str, Any]]]) -> None:
    """Delete what the objects name (not Namespaces: a terminating namespace refuses new
    objects until the namespace controller has emptied it) and wait until they are gone."""
    doomed = [identity(d) for _, d in objects if d["kind"] != "Namespace"]
    for key in doomed:
        try:
            server.delete(*key)
        except Refused as refused:
            if refused.status != 404:
                raise
    deadline = time.monotonic() + 60
    while any(server.get(*key) is not None for key in doomed):
        if time.monotonic() > deadline:
            raise TimeoutError("objects were not deleted within 60 s")
        time.sleep(0.2)
