"""Driver upgrades NVIDIA's k8s-driver-manager can drain: it evicts only the pods it knows as GPU
pods (`podUsesGPU`, internal/kubernetes/client.go v0.12.0), by their resource names."""

from __future__ import annotations

from collections.abc import Iterator

from gpuconf.api.base import kubernetes_minor
from gpuconf.compiler.rules.context import RuleContext, pool_path
from gpuconf.diagnostics import Diagnostic

GPU_RESOURCE_PREFIXES = ("nvidia.com/gpu", "nvidia.com/mig-")


# It reads a pod's claims through resource.k8s.io/v1 alone (podHasGPUResourceClaim,
# ResourceV1().ResourceClaims; NotFound means "no GPU claim"), which serves from 1.34.
CLAIMS_READ_FROM_MINOR = 34


def check(ctx: RuleContext) -> Iterator[Diagnostic]:
    dra = ctx.cluster.spec.allocation == "dra"
    if dra and kubernetes_minor(ctx.cluster.spec.kubernetes.version) >= CLAIMS_READ_FROM_MINOR:
        return  # it finds the pods holding gpu.nvidia.com claims
    for i, pool in enumerate(ctx.cluster.spec.node_pools):
        if pool.driver is None or not pool.driver.install:
            continue
        if dra:
            yield ctx.warning(
                pool_path(i, "driver", "version"),
                f"a driver change on pool {pool.name!r} cannot evict pods that hold GPU claims: "
                "NVIDIA's k8s-driver-manager reads claims through resource.k8s.io/v1, which "
                f"Kubernetes {ctx.cluster.spec.kubernetes.version} does not serve, so such a pod "
                "keeps the old driver loaded and the node's upgrade stops until it ends",
                "drain the pool's nodes yourself before changing driver.version "
                "(docs/operations.md, Driver upgrades)",
            )
            continue
        unseen = sorted(
            {
                c.resource_name
                for c in ctx.classes
                if pool.name in c.pools and not c.resource_name.startswith(GPU_RESOURCE_PREFIXES)
            }
        )
        if unseen:
            yield ctx.warning(
                pool_path(i, "driver", "version"),
                f"a driver change on pool {pool.name!r} cannot evict pods that hold "
                f"{', '.join(unseen)}: NVIDIA's k8s-driver-manager evicts only pods requesting "
                "nvidia.com/gpu* or nvidia.com/mig-* resources, so such a pod keeps the old "
                "driver loaded and the node's upgrade stops until it ends",
                "drain the pool's nodes yourself before changing driver.version "
                "(docs/operations.md, Driver upgrades)",
            )
