"""How NVIDIA's device plugin names the resources it advertises; the one place that knows."""

from __future__ import annotations

NVIDIA_GPU = "nvidia.com/gpu"
MIG_PREFIX = "nvidia.com/mig-"
"""Under migStrategy mixed, NVIDIA's plugin names MIG devices nvidia.com/mig-<profile>."""
SHARED_SUFFIX = ".shared"
"""renameByDefault appends this to every shared resource, MIG ones included."""


def mig_resource(profile: str) -> str:
    return f"{MIG_PREFIX}{profile}"


def nvidia_resource(profile: str | None, shared: bool, single_mig: bool = False) -> str:
    """The name NVIDIA's plugin gives a class's devices: whole GPUs (and MIG devices under
    migStrategy single) are nvidia.com/gpu, MIG devices under mixed nvidia.com/mig-<profile>."""
    base = NVIDIA_GPU if profile is None or single_mig else mig_resource(profile)
    return base + SHARED_SUFFIX if shared else base


def nvidia_resources(profile: str | None, shared: bool) -> set[str]:
    """Every name NVIDIA's plugin may use for such devices (a shared device may also go by
    the unshared name: renameByDefault off)."""
    sharing = (False, True) if shared else (False,)
    layouts = (None,) if profile is None else (True, False)
    return {
        nvidia_resource(profile, s, single_mig=bool(single)) for s in sharing for single in layouts
    }


def unshared(resource: str) -> str:
    """The resource NVIDIA's config names: renameByDefault adds the suffix itself."""
    return resource.removesuffix(SHARED_SUFFIX)
