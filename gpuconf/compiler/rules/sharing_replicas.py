"""`replicas` means what the output does: device-plugin mode advertises each shared GPU that many
times, so it is required there; under DRA nothing splits a GPU N ways, so it is refused.

NVIDIA's DRA driver (k8s-dra-driver-gpu `api/nvidia.com/resource/v1beta1/sharing.go`) shares a
device between the containers, and the pods, that use one ResourceClaim: TimeSlicing (with an
interval) or MPS (active-thread and pinned-memory limits) in the GpuConfig. Its sharing settings
hold no count; every ResourceClaim gets whole devices."""

from __future__ import annotations

from collections.abc import Iterator

from gpuconf.compiler.rules.context import RuleContext, class_path
from gpuconf.diagnostics import Diagnostic


def check(ctx: RuleContext) -> Iterator[Diagnostic]:
    dra = ctx.cluster.spec.allocation == "dra"
    for i, resource_class in enumerate(ctx.cluster.spec.resource_classes):
        sharing = resource_class.sharing
        if sharing.strategy == "none":
            continue
        if dra and sharing.replicas is not None:
            yield ctx.error(
                class_path(i, "sharing", "replicas"),
                "under DRA no GPU is split into replicas: NVIDIA's DRA driver "
                f"{'time-slices' if sharing.strategy == 'time-slicing' else 'runs MPS for'} the "
                "containers and pods that share one ResourceClaim, and each claim takes whole devices",
                "remove replicas; to share a GPU, let a pod's containers use its one claim, or "
                "have several pods name one ResourceClaim (resourceClaimName) instead of the template",
            )
        elif not dra and sharing.replicas is None:
            yield ctx.error(
                class_path(i, "sharing"),
                f"{sharing.strategy} needs replicas: how many containers share one GPU",
                "add replicas: 2 or more",
            )
