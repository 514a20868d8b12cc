"""How many clients one GPU's MPS control daemon accepts: 48 from Volta, 16 before it."""

from __future__ import annotations

from gpuconf.api.base import version_parts

MAX_CLIENTS_FROM_VOLTA = 48
MAX_CLIENTS_BEFORE_VOLTA = 16
CUDA_VOLTA = (7, 0, 0)
"""CUDA's MPS documentation: 48 client contexts per device from Volta (7.0); gpuconf's node
runtime starts nvidia-cuda-mps-control itself, so this is the limit its GPUs have."""
NVIDIA_PLUGIN_VOLTA = (7, 5, 0)
"""NVIDIA's mps-control-daemon compares with v7.5 (cmd/mps-control-daemon/mps/device.go,
isAtLeastVolta), so it refuses more than 16 replicas on a V100."""


def max_mps_clients(compute_capability: str, plugin: str) -> int:
    volta = NVIDIA_PLUGIN_VOLTA if plugin == "nvidia" else CUDA_VOLTA
    if version_parts(compute_capability) >= volta:
        return MAX_CLIENTS_FROM_VOLTA
    return MAX_CLIENTS_BEFORE_VOLTA
