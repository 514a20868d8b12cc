"""NVIDIA's device plugin releases gpuconf can configure, and what each one reads.

Read from k8s-device-plugin's `api/config/v1` and `cmd/nvidia-device-plugin` at each tag."""

from __future__ import annotations

from typing import get_args

from gpuconf.api.base import version_parts
from gpuconf.api.cluster.nvidia_components import NvidiaPlugin, NvidiaPluginRelease

RELEASES: tuple[str, ...] = get_args(NvidiaPluginRelease)
CURRENT: str = NvidiaPlugin().version
IMAGE_REPOSITORY = "nvcr.io/nvidia/k8s-device-plugin"

# flags.plugin.sharedDevicesAllocationPolicy (distributed | packed) exists from v0.20.0 (PR #1621).
ALLOCATION_POLICY_SINCE = "v0.20.0"


def at_least(release: str, minimum: str) -> bool:
    return version_parts(release) >= version_parts(minimum)


def image(release: str) -> str:
    return f"{IMAGE_REPOSITORY}:{release}"


def allocation_policy(policy: str) -> str:
    """gpuconf's class allocationPolicy as NVIDIA's sharedDevicesAllocationPolicy."""
    return {"spread": "distributed", "pack": "packed"}[policy]
