"""Node labels NVIDIA's components write and rewrite, which a pool must not rely on alone.

GPU Feature Discovery (k8s-device-plugin `internal/lm`) writes `nvidia.com/gpu.*`, `mig.*`,
`mig-<profile>.*`, `cuda.*`, `mps.*` and `vgpu.*`; Node Feature Discovery writes
`feature.node.kubernetes.io/*`; the GPU Operator writes `nvidia.com/gpu.deploy.*` and
`nvidia.com/gpu.present`. Their values change with the plugin's config: `getProductName` in
`internal/lm/resource.go` (v0.20.0) appends `-SHARED` to `nvidia.com/gpu.product` when the GPUs
are shared and not renamed; and `helm uninstall` of NVIDIA's chart removes GFD's labels."""

from __future__ import annotations

from gpuconf.gpus.gfd_labels import PRODUCT as PRODUCT_LABEL

MANAGED_PREFIXES = (
    "nvidia.com/gpu.",
    "nvidia.com/gfd.",
    "nvidia.com/mig.",
    "nvidia.com/mig-",
    "nvidia.com/cuda.",
    "nvidia.com/mps.",
    "nvidia.com/vgpu.",
    "feature.node.kubernetes.io/",
)
__all__ = ["MANAGED_PREFIXES", "PRODUCT_LABEL", "managed_by_nvidia"]


def managed_by_nvidia(key: str) -> bool:
    """Whether GFD, NFD or the GPU Operator writes (and may rewrite or remove) this label."""
    return key.startswith(MANAGED_PREFIXES)
