"""Which pods on a node hold its GPUs, from the pods as the API server returns them (JSON).

A superset of what NVIDIA's k8s-driver-manager evicts (`podUsesGPU`,
internal/kubernetes/client.go v0.12.0: a container asking for `nvidia.com/gpu*` or
`nvidia.com/mig-*`, or a ResourceClaim allocated by `gpu.nvidia.com`), plus every resource gpuconf
advertises on the pool (its node config: `gpuconf.dev/<class>` or a class's own resourceName)."""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator, Mapping
from typing import Any

from gpuconf.gpus.gpu_operator import DEPLOY_PREFIX
from gpuconf.gpus.resource_names import NVIDIA_GPU

NVIDIA_PREFIXES = (NVIDIA_GPU, "nvidia.com/mig-")
DRA_DRIVER = "gpu.nvidia.com"
TERMINAL_PHASES = frozenset({"Succeeded", "Failed"})
"""A pod in these phases has no running container left: it holds no device."""

Pod = Mapping[str, Any]
ClaimReader = Callable[[str, str], Mapping[str, Any] | None]
"""(namespace, name) → the ResourceClaim, or None where there is none."""


def pod_name(pod: Pod) -> str:
    meta = pod["metadata"]
    return f"{meta['namespace']}/{meta['name']}"


def is_daemonset_pod(pod: Pod) -> bool:
    """Its DaemonSet would put it back at once (DaemonSets tolerate the cordon): evicting it
    frees nothing, so it is reported instead."""
    owners = pod["metadata"].get("ownerReferences") or []
    return any(o.get("controller") and o.get("kind") == "DaemonSet" for o in owners)


# The node labels k8s-driver-manager pauses before it unloads the driver, so the pods they
# schedule go (evictAllGPUOperatorComponents, cmd/driver-manager/main.go v0.12.0). Not among
# them: gpu.deploy.driver (the driver's own) and gpu.deploy.dra-driver (evicted after the others).
PAUSED_BY_DRIVER_MANAGER = frozenset(
    f"{DEPLOY_PREFIX}{component}"
    for component in (
        "operator-validator", "container-toolkit", "device-plugin", "gpu-feature-discovery",
        "dcgm-exporter", "dcgm", "nvsm", "sandbox-validator", "sandbox-device-plugin",
        "vgpu-device-manager", "dra-validator", "dcgm-dra", "dcgm-exporter-dra", "mig-manager",
        "client",
    )
)  # fmt: skip


def stopped_by_driver_manager(pod: Pod) -> bool:
    """A pod scheduled by a node label k8s-driver-manager pauses right after the drain (sets
    to `paused-for-driver-upgrade`, then waits for its pods to go)."""
    selector = (pod.get("spec") or {}).get("nodeSelector") or {}
    return any(key in PAUSED_BY_DRIVER_MANAGER for key in selector)


def _resource_names(pod: Pod) -> Iterator[str]:
    spec = pod.get("spec") or {}
    for container in [*(spec.get("initContainers") or []), *(spec.get("containers") or [])]:
        resources = container.get("resources") or {}
        for kind in ("limits", "requests"):
            yield from resources.get(kind) or {}


def claim_names(pod: Pod) -> list[str]:
    """The ResourceClaims the pod holds: named in its spec, made from a template (the name the
    pod's status records) or made for an extended resource (DRAExtendedResource)."""
    status = pod.get("status") or {}
    generated = {
        s["name"]: s["resourceClaimName"]
        for s in status.get("resourceClaimStatuses") or []
        if s.get("resourceClaimName")
    }
    names = []
    for claim in (pod.get("spec") or {}).get("resourceClaims") or []:
        name = claim.get("resourceClaimName") or generated.get(claim["name"])
        if name:
            names.append(name)
    extended = (status.get("extendedResourceClaimStatus") or {}).get("resourceClaimName")
    if extended:
        names.append(extended)
    return names


def allocated_by_gpu_driver(claim: Mapping[str, Any]) -> bool:
    allocation = (claim.get("status") or {}).get("allocation") or {}
    results = (allocation.get("devices") or {}).get("results") or []
    return any(r.get("driver") == DRA_DRIVER for r in results)


def holds_gpu(pod: Pod, resources: Collection[str], read_claim: ClaimReader) -> bool:
    if (pod.get("status") or {}).get("phase") in TERMINAL_PHASES:
        return False
    for name in _resource_names(pod):
        if name in resources or name.startswith(NVIDIA_PREFIXES):
            return True
    namespace = pod["metadata"]["namespace"]
    for name in claim_names(pod):
        claim = read_claim(namespace, name)
        if claim is not None and allocated_by_gpu_driver(claim):
            return True
    return False
