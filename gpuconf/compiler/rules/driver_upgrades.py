"""Driver upgrades NVIDIA's k8s-driver-manager can drain: it evicts only the pods it knows as GPU
pods (`podUsesGPU`, internal/kubernetes/client.go v0.12.0), by their resource names."""

from __future__ import annotations

from collections.abc import Iterator

from gpuconf.compiler.rules.context import RuleContext, pool_path
from gpuconf.diagnostics import Diagnostic

GPU_RESOURCE_PREFIXES = ("nvidia.com/gpu", "nvidia.com/mig-")


def check(ctx: RuleContext) -> Iterator[Diagnostic]:
    if ctx.cluster.spec.allocation == "dra":
        return  # it finds pods holding gpu.nvidia.com claims
    for i, pool in enumerate(ctx.cluster.spec.node_pools):
        if pool.driver is None or not pool.driver.install:
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
