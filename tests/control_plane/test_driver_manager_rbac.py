"""The RBAC gpuconf renders for the driver installer's account (NVIDIA's k8s-driver-manager and
gpuconf's driver-drain and driver-uncordon, compiler/plan/driver_manager.py), held by the real
API server: as its service account, every call a driver upgrade makes is authorized (read and
cordon its Node, list the node's pods, evict GPU pods through the Eviction API, where a
PodDisruptionBudget answers 429, not RBAC's 403), and nothing beyond them is (not even reading
DaemonSets, which only kubectl's drain helper did, with the driver manager's eviction on)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from builders import RENDERED
from control_plane.manifests import SETUP_MANAGER, delete_objects, ensure_namespaces
from control_plane.server import Refused, Server

FLEET = RENDERED / "fleet"
RBAC_FILES = [
    "cluster/serviceaccount-gpuconf-driver-manager.yaml",
    "cluster/clusterrole-gpuconf-driver-manager.yaml",
    "cluster/clusterrolebinding-gpuconf-driver-manager.yaml",
]
NODE, WORKLOADS = "gpu-node-upgrading", "gpuconf-test-driver-upgrade"
MERGE = "application/merge-patch+json"


def _pod(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": WORKLOADS, "labels": {"app": "trainer"}},
        "spec": {
            "nodeName": NODE,
            "containers": [{"name": "job", "image": "registry.k8s.io/pause:3.10"}],
        },
    }


@pytest.fixture
def driver_manager(api_server: Server, kubeconfig: Path) -> Iterator[Server]:
    setup = [yaml.safe_load((FLEET / f).read_text(encoding="utf-8")) for f in RBAC_FILES]
    # Bare, as the tests' own: the rendered Namespace is another test's to apply as gpuconf.
    ensure_namespaces(api_server, [("", d) for d in setup])
    setup += [
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": NODE}},
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": WORKLOADS}},
        {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": "trainer", "namespace": WORKLOADS},
            "spec": {"maxUnavailable": 0, "selector": {"matchLabels": {"app": "trainer"}}},
        },
    ]
    for document in setup:
        api_server.apply(document, manager=SETUP_MANAGER)
    scratch = {**_pod("scratch"), "metadata": {"name": "scratch", "namespace": WORKLOADS}}
    pods = [_pod("trainer-0"), scratch]
    for pod in pods:
        api_server.create(pod)
    _running(api_server, "trainer-0")  # a Pending pod is evicted whatever its budget says
    account = "system:serviceaccount:gpuconf-system:gpuconf-driver-manager"
    impersonated = Server.from_kubeconfig(kubeconfig, {"Impersonate-User": account})
    try:
        _own_node_policy_gone(impersonated)
        yield impersonated
    finally:
        delete_objects(api_server, [("test", d) for d in [*pods, *setup]])


def _own_node_policy_gone(impersonated: Server) -> None:
    """RBAC alone, as this file tests it: an impersonated request carries no pod's node, so the
    installer's own-Node policy (rendered with the fleet, applied by other tests) refuses it
    for as long as the API server still enforces that policy after its deletion."""
    path = impersonated.path("v1", "Node", "", NODE)
    cordon = {"spec": {"unschedulable": True}}
    deadline = time.monotonic() + 30
    while True:
        try:
            impersonated.request("PATCH", path, cordon, [("dryRun", "All")], MERGE)
            return
        except Refused as refused:
            if "ValidatingAdmissionPolicy" not in refused.message:
                return  # RBAC's answer, which the tests check
            if time.monotonic() > deadline:
                raise
        time.sleep(0.2)


def _running(server: Server, name: str) -> None:
    """Report the pod Running and Ready, as its kubelet would (there is none)."""
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    status = {
        "phase": "Running",
        "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": now}],
    }
    path = server.path("v1", "Pod", WORKLOADS, name) + "/status"
    server.request("PATCH", path, {"status": status}, content_type=MERGE)


def _evict(server: Server, name: str) -> None:
    eviction = {
        "apiVersion": "policy/v1",
        "kind": "Eviction",
        "metadata": {"name": name, "namespace": WORKLOADS},
    }
    server.request("POST", server.path("v1", "Pod", WORKLOADS, name) + "/eviction", eviction)


def test_the_driver_manager_may_do_what_an_upgrade_needs(driver_manager: Server) -> None:
    assert driver_manager.get("v1", "Node", "", NODE) is not None
    cordon = {"spec": {"unschedulable": True}}
    node_path = driver_manager.path("v1", "Node", "", NODE)
    assert driver_manager.request("PATCH", node_path, cordon, content_type=MERGE).body["spec"][
        "unschedulable"
    ]
    pods = driver_manager.request(
        "GET", "/api/v1/pods", query=[("fieldSelector", f"spec.nodeName={NODE}")]
    ).body["items"]
    assert {p["metadata"]["name"] for p in pods} == {"trainer-0", "scratch"}
    # A pod its budget protects: the Eviction API (not RBAC) refuses, so the manager retries.
    with pytest.raises(Refused) as protected:
        _evict(driver_manager, "trainer-0")
    assert protected.value.status == 429
    _evict(driver_manager, "scratch")


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("DELETE", f"/api/v1/nodes/{NODE}"),
        ("GET", "/api/v1/secrets"),
        ("GET", f"/apis/apps/v1/namespaces/{WORKLOADS}/daemonsets/none"),
        ("DELETE", f"/api/v1/namespaces/{WORKLOADS}/pods/scratch"),
        ("POST", f"/api/v1/namespaces/{WORKLOADS}/pods"),
    ],
)
def test_the_driver_manager_may_do_nothing_else(
    driver_manager: Server, method: str, path: str
) -> None:
    body = _pod("intruder") if method == "POST" else None
    with pytest.raises(Refused) as refused:
        driver_manager.request(method, path, body)
    assert refused.value.status == 403
