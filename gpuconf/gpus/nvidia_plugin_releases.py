"""NVIDIA's device plugin releases gpuconf can configure, and what each one reads.

Read from k8s-device-plugin's `api/config/v1` and `cmd/nvidia-device-plugin` at each tag."""

from __future__ import annotations

from typing import get_args

from gpuconf.api.base import version_parts
from gpuconf.api.cluster import Cluster
from gpuconf.api.cluster.nvidia_components import NvidiaPlugin, NvidiaPluginRelease

RELEASES: tuple[str, ...] = get_args(NvidiaPluginRelease)
CURRENT: str = NvidiaPlugin().version
IMAGE_REPOSITORY = "nvcr.io/nvidia/k8s-device-plugin"

NVIDIA_DEVICE_LISTS = {"cdi": "cdi-cri", "volume-mounts": "volume-mounts", "envvar": "envvar"}
"""NVIDIA's deviceListStrategy for each of gpuconf's; the plugin hands CDI names to the kubelet
as cdi_devices under `cdi-cri`."""
# Flags gpuconf renders as NVIDIA's plugin defaults them (cmd/nvidia-device-plugin/main.go);
# the chart importer names a source that sets another value.
PASS_DEVICE_SPECS = False
DEVICE_ID_STRATEGY = "uuid"
FAIL_ON_INIT_ERROR = True

# flags.plugin.sharedDevicesAllocationPolicy (distributed | packed) exists from v0.20.0 (PR #1621).
ALLOCATION_POLICY_SINCE = "v0.20.0"


def at_least(release: str, minimum: str) -> bool:
    return version_parts(release) >= version_parts(minimum)


def image(release: str) -> str:
    return f"{IMAGE_REPOSITORY}:{release}"


def image_release(reference: str | None) -> str | None:
    """The plugin release an image's tag names ("…:v0.19.3" -> v0.19.3); None for other tags."""
    if reference is None or "@" in reference or ":" not in reference.rsplit("/", 1)[-1]:
        return None
    tag = reference.rsplit(":", 1)[1]
    return tag if tag.startswith("v0.") else None


def plugin_release(cluster: Cluster) -> str:
    """The release gpuconf writes NVIDIA's config for: spec.nvidiaPlugin.version when given,
    else the release the image's tag names, else the current one."""
    settings = cluster.spec.nvidia_plugin
    tagged = image_release(cluster.spec.images.nvidia_device_plugin)
    if "version" in settings.fields_given or tagged not in RELEASES:
        return settings.version
    return str(tagged)


def allocation_policy(policy: str) -> str:
    """gpuconf's class allocationPolicy as NVIDIA's sharedDevicesAllocationPolicy."""
    return {"spread": "distributed", "pack": "packed"}[policy]
