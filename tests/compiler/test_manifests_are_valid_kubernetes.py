"""Every rendered manifest passes kubernetes-validate (strict), or its CRD's schema for kinds
Kubernetes does not ship (the Prometheus Operator's PodMonitor, Kueue's queues), and every cluster folder
builds with kustomize."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
from builders import EXAMPLES, manifest_paths
from crd_schemas import crd_errors
from ruamel.yaml import YAML

KUBERNETES_VERSIONS = ("1.30.0", "1.34.0")
CRD_GROUPS = ("monitoring.coreos.com/", "kueue.x-k8s.io/")
CLUSTER_SCOPED = {
    "Namespace",
    "ClusterRole",
    "ClusterRoleBinding",
    "RuntimeClass",
    "DeviceClass",
    "ValidatingAdmissionPolicy",
    "ValidatingAdmissionPolicyBinding",
    "PriorityClass",
    "CustomResourceDefinition",
    "StorageClass",
    "ResourceFlavor",
    "ClusterQueue",
}


def _load(data: bytes) -> list[dict[str, Any]]:
    return [d for d in YAML(typ="safe", pure=True).load_all(data) if d is not None]


def _manifests(tree: dict[str, bytes]) -> list[tuple[str, dict[str, Any]]]:
    return [(path, obj) for path in manifest_paths(tree) for obj in _load(tree[path])]


def _minor(version: str) -> tuple[int, int]:
    major, minor = version.split(".")[:2]
    return int(major), int(minor)


def _applies_to(obj: dict[str, Any], version: str, target: str) -> bool:
    """DRA objects exist only from the cluster's target version on; every other object everywhere."""
    newer_api = obj["apiVersion"].startswith("resource.k8s.io/")
    return not newer_api or _minor(version) >= _minor(target)


@pytest.mark.slow
@pytest.mark.parametrize("name", EXAMPLES)
def test_every_manifest_passes_strict_kubernetes_validation(
    name: str,
    compiled_examples,  # type: ignore[no-untyped-def]
) -> None:
    target = compiled_examples.validated[name].cluster.spec.kubernetes.version
    manifests = _manifests(compiled_examples.rendered[name])
    assert manifests
    custom = [(p, o) for p, o in manifests if o["apiVersion"].startswith(CRD_GROUPS)]
    for path, obj in custom:
        assert crd_errors(obj) == [], f"{name}/{path}"
    for version in sorted({*KUBERNETES_VERSIONS, f"{target}.0"}, key=_minor):
        for path, obj in manifests:
            if (path, obj) in custom or not _applies_to(obj, version, target):
                continue
            # SchemaNotFoundError and VersionNotSupportedError propagate: an unknown kind fails.
            try:
                kubernetes_validate.validate(obj, version, strict=True)
            except kubernetes_validate.ValidationError as error:
                pytest.fail(f"{name}/{path} is invalid for Kubernetes {version}: {error.message}")


def test_an_unknown_kind_is_an_error_not_a_skip() -> None:
    with pytest.raises(kubernetes_validate.SchemaNotFoundError):
        kubernetes_validate.validate(
            {"apiVersion": "gpuconf.dev/v1", "kind": "Nope", "metadata": {"name": "x"}},
            "1.34.0",
            strict=True,
        )


@pytest.mark.slow
@pytest.mark.parametrize("name", EXAMPLES)
def test_kustomize_builds_the_cluster_folder(
    name: str,
    tmp_path: Path,
    compiled_examples,  # type: ignore[no-untyped-def]
) -> None:
    tree = compiled_examples.rendered[name]
    for relative, data in tree.items():
        (tmp_path / relative).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / relative).write_bytes(data)
    kubectl = shutil.which("kubectl")
    assert kubectl, "kubectl (with kustomize) is needed for this test"
    built = subprocess.run(
        [kubectl, "kustomize", str(tmp_path)],
        capture_output=True,
        check=False,
        timeout=120,
    )
    assert built.returncode == 0, built.stderr.decode()
    objects = _load(built.stdout)
    expected = _manifests(tree)
    key = lambda o: (o["kind"], o["metadata"].get("namespace", ""), o["metadata"]["name"])  # noqa: E731
    assert sorted(map(key, objects)) == sorted(key(o) for _, o in expected)
    for obj in objects:
        if obj["kind"] in CLUSTER_SCOPED:
            assert "namespace" not in obj["metadata"], f"{obj['kind']} {obj['metadata']['name']}"
        else:
            assert obj["metadata"].get("namespace"), f"{obj['kind']} {obj['metadata']['name']}"
