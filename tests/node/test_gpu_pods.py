"""Which pods on a node a driver upgrade must evict (node/gpu_pods.py), from pods and claims as
the API server returns them: every resource gpuconf advertises on the pool, NVIDIA's names
(what k8s-driver-manager's `podUsesGPU` knows, internal/kubernetes/client.go v0.12.0) and
claims allocated by NVIDIA's DRA driver; nothing else."""

from __future__ import annotations

from typing import Any

import pytest

from gpuconf.node.gpu_pods import (
    claim_names,
    holds_gpu,
    is_daemonset_pod,
    stopped_by_driver_manager,
)

POOL_RESOURCES = {"gpuconf.dev/t4-shared", "gpus.example.com/a100-train"}
CLAIMS: dict[tuple[str, str], dict[str, Any]] = {
    ("ml", "gpu-claim"): {
        "status": {"allocation": {"devices": {"results": [{"driver": "gpu.nvidia.com"}]}}}
    },
    ("ml", "nic-claim"): {
        "status": {"allocation": {"devices": {"results": [{"driver": "net.example.com"}]}}}
    },
    ("ml", "pending-claim"): {"status": {}},
}


def _read_claim(namespace: str, name: str) -> dict[str, Any] | None:
    return CLAIMS.get((namespace, name))


def _pod(**spec: Any) -> dict[str, Any]:
    status = spec.pop("status", {"phase": "Running"})
    return {"metadata": {"name": "p", "namespace": "ml"}, "spec": spec, "status": status}


def _asking(resource: str, kind: str = "limits", where: str = "containers") -> dict[str, Any]:
    return _pod(**{where: [{"name": "c", "resources": {kind: {resource: "1"}}}]})


@pytest.mark.parametrize(
    "pod",
    [
        pytest.param(_asking("gpuconf.dev/t4-shared"), id="gpuconf-class"),
        pytest.param(_asking("gpus.example.com/a100-train"), id="class-resource-name"),
        pytest.param(_asking("nvidia.com/gpu"), id="nvidia-gpu"),
        pytest.param(_asking("nvidia.com/gpu.shared", "requests"), id="nvidia-shared-request"),
        pytest.param(_asking("nvidia.com/mig-1g.10gb"), id="nvidia-mig"),
        pytest.param(_asking("gpuconf.dev/t4-shared", where="initContainers"), id="sidecar"),
        pytest.param(
            _pod(resourceClaims=[{"name": "g", "resourceClaimName": "gpu-claim"}]), id="claim"
        ),
        pytest.param(
            _pod(
                resourceClaims=[{"name": "g", "resourceClaimTemplateName": "t4"}],
                status={"resourceClaimStatuses": [{"name": "g", "resourceClaimName": "gpu-claim"}]},
            ),
            id="claim-from-template",
        ),
        pytest.param(
            _pod(status={"extendedResourceClaimStatus": {"resourceClaimName": "gpu-claim"}}),
            id="claim-for-an-extended-resource",
        ),
    ],
)
def test_a_pod_holding_a_gpu_is_found(pod: dict[str, Any]) -> None:
    assert holds_gpu(pod, POOL_RESOURCES, _read_claim)


@pytest.mark.parametrize(
    "pod",
    [
        pytest.param(_pod(containers=[{"name": "web"}]), id="no-resources"),
        pytest.param(_asking("cpu"), id="cpu"),
        pytest.param(_asking("gpuconf.dev/other-pools-class"), id="another-pools-class"),
        pytest.param(_asking("example.com/fpga"), id="another-device"),
        pytest.param(
            {**_asking("gpuconf.dev/t4-shared"), "status": {"phase": "Succeeded"}}, id="finished"
        ),
        pytest.param(
            _pod(resourceClaims=[{"name": "n", "resourceClaimName": "nic-claim"}]),
            id="other-driver",
        ),
        pytest.param(
            _pod(resourceClaims=[{"name": "n", "resourceClaimName": "pending-claim"}]),
            id="unallocated",
        ),
        pytest.param(
            _pod(resourceClaims=[{"name": "n", "resourceClaimName": "gone"}]), id="missing-claim"
        ),
        pytest.param(
            _pod(resourceClaims=[{"name": "g", "resourceClaimTemplateName": "t4"}]),
            id="template-not-yet-made",
        ),
    ],
)
def test_a_pod_holding_no_gpu_is_left_alone(pod: dict[str, Any]) -> None:
    assert not holds_gpu(pod, POOL_RESOURCES, _read_claim)


def test_the_claims_of_a_pod_are_named_in_its_spec_or_recorded_in_its_status() -> None:
    pod = _pod(
        resourceClaims=[
            {"name": "a", "resourceClaimName": "fixed"},
            {"name": "b", "resourceClaimTemplateName": "t"},
        ],
        status={
            "resourceClaimStatuses": [{"name": "b", "resourceClaimName": "made-b"}],
            "extendedResourceClaimStatus": {"resourceClaimName": "extended"},
        },
    )
    assert claim_names(pod) == ["fixed", "made-b", "extended"]


def test_only_a_pod_a_daemonset_controls_counts_as_a_daemonset_pod() -> None:
    owned = {"kind": "DaemonSet", "name": "d", "controller": True}
    assert is_daemonset_pod({"metadata": {"ownerReferences": [owned]}})
    assert not is_daemonset_pod({"metadata": {"ownerReferences": [{**owned, "controller": False}]}})
    assert not is_daemonset_pod(
        {"metadata": {"ownerReferences": [{**owned, "kind": "ReplicaSet"}]}}
    )
    assert not is_daemonset_pod({"metadata": {}})


def test_only_the_labels_the_driver_manager_pauses_mark_a_pod_it_stops_next() -> None:
    # evictAllGPUOperatorComponents (k8s-driver-manager v0.12.0) pauses these and waits for
    # their pods; the driver's own label and the DRA driver's are not among them.
    def scheduled_by(key: str) -> dict[str, Any]:
        return {"spec": {"nodeSelector": {key: "true"}}}

    assert stopped_by_driver_manager(scheduled_by("nvidia.com/gpu.deploy.client"))
    assert stopped_by_driver_manager(scheduled_by("nvidia.com/gpu.deploy.dra-validator"))
    assert not stopped_by_driver_manager(scheduled_by("nvidia.com/gpu.deploy.driver"))
    assert not stopped_by_driver_manager(scheduled_by("nvidia.com/gpu.deploy.dra-driver"))
    assert not stopped_by_driver_manager(scheduled_by("nvidia.com/gpu.deploy.something-else"))
