"""The control plane runs the controllers a driver rollout depends on: the disruption
controller keeps a PodDisruptionBudget's status, and the Eviction API refuses to evict a pod
the budget protects (429) and evicts it once another healthy pod covers the budget. Pods are
created through the API and their status is set as a kubelet would (there is none)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from control_plane.manifests import SETUP_MANAGER, delete_objects
from control_plane.server import Refused, Server

NAMESPACE = "gpuconf-test-eviction"
LABELS = {"app": "gpu-job"}


def _pod(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": NAMESPACE, "labels": LABELS},
        "spec": {
            "nodeName": "gpu-node-eviction",
            "containers": [{"name": "job", "image": "registry.k8s.io/pause:3.10"}],
        },
    }


def _running(server: Server, name: str) -> None:
    """Report the pod Running and Ready, as the kubelet would."""
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    status = {
        "phase": "Running",
        "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": now}],
    }
    path = server.path("v1", "Pod", NAMESPACE, name) + "/status"
    server.request("PATCH", path, {"status": status}, content_type="application/merge-patch+json")


def _budget(server: Server) -> dict[str, Any]:
    found = server.get("policy/v1", "PodDisruptionBudget", NAMESPACE, "gpu-job")
    assert found is not None
    return found


def _allowed_disruptions(server: Server, expected: int) -> None:
    """Wait until the disruption controller has counted the pods (it alone writes the status
    the Eviction API reads)."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        status = _budget(server).get("status", {})
        if status.get("disruptionsAllowed") == expected and status.get("currentHealthy"):
            return
        time.sleep(0.2)
    raise TimeoutError(f"the budget's status is {_budget(server).get('status')}")


def _evict(server: Server, name: str) -> None:
    eviction = {
        "apiVersion": "policy/v1",
        "kind": "Eviction",
        "metadata": {"name": name, "namespace": NAMESPACE},
    }
    server.request("POST", server.path("v1", "Pod", NAMESPACE, name) + "/eviction", eviction)


@pytest.fixture
def budget(api_server: Server) -> Iterator[Server]:
    objects: list[tuple[str, dict[str, Any]]] = [
        ("test", {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "gpu-node-eviction"}}),
        ("test", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}),
        (
            "test",
            {
                "apiVersion": "policy/v1",
                "kind": "PodDisruptionBudget",
                "metadata": {"name": "gpu-job", "namespace": NAMESPACE},
                "spec": {"minAvailable": 1, "selector": {"matchLabels": LABELS}},
            },
        ),
    ]
    for _, document in objects:
        api_server.apply(document, manager=SETUP_MANAGER)
    pods = [("test", _pod("job-a")), ("test", _pod("job-b"))]
    try:
        yield api_server
    finally:
        delete_objects(api_server, [*pods, *objects])


def test_a_pod_the_budget_protects_is_not_evicted_until_another_covers_it(budget: Server) -> None:
    budget.create(_pod("job-a"))
    _running(budget, "job-a")
    _allowed_disruptions(budget, 0)
    with pytest.raises(Refused) as refused:
        _evict(budget, "job-a")
    assert refused.value.status == 429
    assert "would violate the pod's disruption budget" in refused.value.message

    budget.create(_pod("job-b"))
    _running(budget, "job-b")
    _allowed_disruptions(budget, 1)
    _evict(budget, "job-a")
    evicted = budget.get("v1", "Pod", NAMESPACE, "job-a")
    assert evicted is None or "deletionTimestamp" in evicted["metadata"]
