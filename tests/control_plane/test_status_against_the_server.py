"""`gpuconf status` against the real kube-apiserver: Nodes created through the API with the
status a kubelet would report, pods whose GPU requests the ResourceQuota admission counts (the
quota's `used` is the server's, not ours), and the cluster file's declaration beside them.
tests/adopt/test_status.py covers what only a fake can produce (pages of two, 403, 410)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from builders import REPO, run_cli
from control_plane.manifests import SETUP_MANAGER, delete_objects
from control_plane.server import Server

from gpuconf.node.drift import DriftReport
from gpuconf.node.node_annotation import annotations_for, pending_annotation

LAB = str(REPO / "clusters" / "lab.yaml")
RESOURCE = "gpuconf.dev/t4-shared"
DRIFT = "GPU 1: expected uuid GPU-5e1a0c52-3c4b-4d6e-9a2f-0c8e1f6b7a02, found GPU-00000000-0000-4000-8000-000000000001"
EXPECTED = """\
cluster lab
pool  declared  present  drifted  rolling out
t4    2         2        1        1

class      resource               capacity  allocatable  in use  quota
t4-shared  gpuconf.dev/t4-shared  16        12           9       20

5 problem(s):
  - pool t4: node lab-gpu-1 drifted: GPU 1: expected uuid GPU-5e1a0c52-3c4b-4d6e-9a2f-0c8e1f6b7a02, found GPU-00000000-0000-4000-8000-000000000001
  - pool t4: node lab-gpu-2 has 2 GPU change(s) waiting for running containers
  - namespace students: ResourceQuota gpuconf-gpus holds requests.gpuconf.dev/t4-shared: 12, rendered 4
  - class t4-shared: 12 of 16 gpuconf.dev/t4-shared allocatable
  - class t4-shared: quotas add up to 20, more than the 12 available
"""


def _node(name: str, pool: str | None, annotations: dict[str, str]) -> dict[str, Any]:
    labels = {"kubernetes.io/hostname": name, **({"gpuconf.dev/pool": pool} if pool else {})}
    metadata = {"name": name, "labels": labels, "annotations": annotations}
    return {"apiVersion": "v1", "kind": "Node", "metadata": metadata}


NODES = [
    _node(
        "lab-gpu-1",
        "t4",
        {
            # As the node runtime writes them (node/node_annotation.py), which status reads.
            **annotations_for(DriftReport([DRIFT], frozenset({0}))),
        },
    ),
    _node(
        "lab-gpu-2",
        "t4",
        {
            **annotations_for(DriftReport([], frozenset({0, 1}))),
            **pending_annotation([{"index": 0}, {"index": 1}]),
        },
    ),
    _node("cpu-0", None, {}),
]
ALLOCATABLE = {"lab-gpu-1": 8, "lab-gpu-2": 4, "cpu-0": 0}
# students' quota was raised by hand in the cluster: 8 + 12 is more than the 12 allocatable.
QUOTAS = {"research": 8, "students": 12}
IN_USE = {"research": 6, "students": 3}


def _report_allocatable(server: Server, name: str, gpus: int) -> None:
    """Report the node's resources as its kubelet would (there is none)."""
    resources = {"cpu": "8", "memory": "32Gi", "pods": "110"}
    if gpus:
        resources[RESOURCE] = str(gpus)
    status = {"capacity": resources, "allocatable": resources}
    server.request(
        "PATCH",
        server.path("v1", "Node", "", name) + "/status",
        {"status": status},
        content_type="application/merge-patch+json",
    )


def _quota(namespace: str, hard: int) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": {"name": "gpuconf-gpus", "namespace": namespace},
        "spec": {"hard": {f"requests.{RESOURCE}": str(hard)}},
    }


def _pod(namespace: str, gpus: int) -> dict[str, Any]:
    """A pod on a GPU node holding `gpus` of the class: the quota admission counts its request."""
    requests = {RESOURCE: str(gpus)}
    container = {
        "name": "job",
        "image": "registry.k8s.io/pause:3.10",
        "resources": {"requests": requests, "limits": requests},
    }
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "job", "namespace": namespace},
        "spec": {"nodeName": "lab-gpu-1", "containers": [container]},
    }


def _used(server: Server, namespace: str) -> int:
    quota = server.get("v1", "ResourceQuota", namespace, "gpuconf-gpus") or {}
    return int(quota.get("status", {}).get("used", {}).get(f"requests.{RESOURCE}", "-1"))


@pytest.fixture
def live_lab(api_server: Server) -> Iterator[Server]:
    namespaces = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}} for name in QUOTAS
    ]
    objects = [*NODES, *namespaces, *(_quota(ns, hard) for ns, hard in QUOTAS.items())]
    pods = [_pod(namespace, gpus) for namespace, gpus in IN_USE.items()]
    try:
        for document in objects:
            api_server.apply(document, manager=SETUP_MANAGER)
        for name, gpus in ALLOCATABLE.items():
            _report_allocatable(api_server, name, gpus)
        # The quota controller fills in `used` once the quota exists; admission then counts pods.
        deadline = time.monotonic() + 30
        while any(_used(api_server, ns) != 0 for ns in QUOTAS):
            assert time.monotonic() < deadline, "the quota controller never counted usage"
            time.sleep(0.2)
        for pod in pods:
            api_server.create(pod)
        yield api_server
    finally:
        delete_objects(api_server, [("test", d) for d in [*pods, *objects]])


def test_status_against_the_real_server_reads_nodes_quotas_and_what_admission_counted(
    live_lab: Server, kubeconfig: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    assert {ns: _used(live_lab, ns) for ns in QUOTAS} == IN_USE
    result = run_cli("status", LAB, "--kubeconfig", str(kubeconfig))
    assert (result.code, result.out) == (1, EXPECTED), result.err
    report = json.loads(run_cli("status", LAB, "--kubeconfig", str(kubeconfig), "-o", "json").out)
    assert report["classes"][0]["in_use"] == sum(IN_USE.values())


def test_status_of_a_healthy_cluster_exits_zero(
    api_server: Server, kubeconfig: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    nodes = [_node(name, "t4", {"gpuconf.dev/inventory-drift": "false"}) for name in ALLOCATABLE]
    nodes = nodes[:2]
    # The namespaces and quotas as rendered, as the GitOps agent syncs them.
    synced = [
        yaml.safe_load(path.read_text())
        for folder in ("namespaces", "quotas")
        for path in sorted((REPO / "rendered" / "lab" / folder).glob("*.yaml"))
        if path.stem != "gpuconf-system"
    ]
    try:
        for document in nodes:
            api_server.apply(document, manager=SETUP_MANAGER)
        for document in synced:  # as rendered objects are applied elsewhere in the suite
            api_server.apply(document)
        for document in nodes:
            _report_allocatable(api_server, document["metadata"]["name"], 8)
        result = run_cli("status", LAB, "--kubeconfig", str(kubeconfig))
    finally:
        delete_objects(api_server, [("test", d) for d in [*nodes, *synced]])
    assert result.code == 0, result.out + result.err
    assert "t4-shared  gpuconf.dev/t4-shared  16        16" in result.out


STATUS_ROLE = REPO / "rendered" / "lab" / "cluster" / "clusterrole-gpuconf-status.yaml"
READER = "gpuconf-status-reader"


def _reader_kubeconfig(server: Server, admin: Path, folder: Path) -> Path:
    """A kubeconfig for the READER service account: the admin's server and CA, its token."""
    request = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {}}
    path = f"/api/v1/namespaces/default/serviceaccounts/{READER}/token"
    token = server.request("POST", path, request).body["status"]["token"]
    config = json.loads(admin.read_text(encoding="utf-8"))
    config["users"] = [{"name": READER, "user": {"token": token}}]
    for context in config["contexts"]:
        context["context"]["user"] = READER
    written = folder / "reader.kubeconfig"
    written.write_text(json.dumps(config), encoding="utf-8")
    return written


def test_the_read_only_role_gpuconf_renders_is_all_status_needs(
    live_lab: Server, kubeconfig: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # What the 403 hint tells a user to bind (adopt/live/cluster_api.py READ_ONLY_ROLE_HINT).
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    role = yaml.safe_load(STATUS_ROLE.read_text(encoding="utf-8"))
    account = {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": {"name": READER, "namespace": "default"},
    }
    binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": READER},
        "roleRef": {
            "apiGroup": "rbac.authorization.k8s.io",
            "kind": "ClusterRole",
            "name": role["metadata"]["name"],
        },
        "subjects": [{"kind": "ServiceAccount", "name": READER, "namespace": "default"}],
    }
    objects = [role, account, binding]
    try:
        for document in objects:
            live_lab.apply(document, manager=SETUP_MANAGER)
        reader = _reader_kubeconfig(live_lab, kubeconfig, tmp_path)
        result = run_cli("status", LAB, "--kubeconfig", str(reader))
    finally:
        delete_objects(live_lab, [("test", d) for d in objects])
    assert (result.code, result.out) == (1, EXPECTED), result.err
