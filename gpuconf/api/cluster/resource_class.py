"""A ResourceClass: a named, selected set of GPUs that workloads request, and how it is shared."""

from __future__ import annotations

from typing import Annotated, Literal

from gpuconf.api.base import (
    INT32_MAX,
    DnsLabel,
    DnsSubdomain,
    DriverVersion,
    ExtendedResourceName,
    MemoryQuantity,
    MigProfileName,
    Model,
)
from gpuconf.api.cluster.pool import GpuIndex
from gpuconf.api.gpu_model import ComputeCapability, GpuModelReference
from gpuconf.api.record import Limits, field

Architecture = Literal[
    "Kepler",
    "Maxwell",
    "Pascal",
    "Volta",
    "Turing",
    "Ampere",
    "Ada Lovelace",
    "Hopper",
    "Blackwell",
]


class Selector(Model):
    """Which GPUs belong to the class: every condition given must hold."""

    model: GpuModelReference | list[GpuModelReference] | None = None
    """GPU model name(s): from the catalog or spec.gpuModels."""
    memory_at_least: MemoryQuantity | None = None
    """Minimum GPU memory, as a quantity ("40Gi") or MiB ("40960")."""
    pools: list[DnsLabel] | None = None
    """Only GPUs in these pools."""
    nodes: list[DnsSubdomain] | None = None
    """Only GPUs on these declared nodes."""
    indices: list[GpuIndex] | None = None
    """Only GPUs with these indices on their node."""
    mig_profile: MigProfileName | None = None
    """Select MIG devices of this profile (on MIG-partitioned GPUs) instead of whole GPUs."""
    architecture: Architecture | list[Architecture] | None = None
    """GPU architecture(s) as NVML names them (NVIDIA's DRA driver publishes the same)."""
    compute_capability_at_least: ComputeCapability | None = None
    """Minimum CUDA compute capability, quoted ("8.0")."""
    driver_version_at_least: DriverVersion | None = None
    """Minimum driver version, quoted ("550.54"); the pools' driver.version tells."""


class NoSharing(Model):
    strategy: Literal["none"]
    """Each GPU goes to one container."""


class TimeSlicing(Model):
    strategy: Literal["time-slicing"]
    """Each GPU is offered as `replicas` devices that share it in time."""
    replicas: Annotated[int | None, Limits(ge=2, le=64)] = None
    """Device-plugin mode (required there): how many containers may share one GPU (at least 2).
    Not under DRA, where the containers and pods sharing one ResourceClaim share its GPU."""
    fail_requests_greater_than_one: bool = False
    """Refuse requests for more than one replica, which would not give more GPU."""


class Mps(Model):
    strategy: Literal["mps"]
    """CUDA Multi-Process Service: containers share a GPU with separated memory."""
    replicas: Annotated[int | None, Limits(ge=2, le=48)] = None
    """Device-plugin mode (required there): how many clients may share one GPU (at least 2).
    Not under DRA, where the containers and pods sharing one ResourceClaim share its GPU."""
    memory_limit_mi_b: Annotated[int | None, Limits(ge=1, le=INT32_MAX)] = field(
        default=None, key="memoryLimitMiB"
    )
    """Pinned device memory per client, in MiB; defaults to the GPU's memory / replicas (under
    DRA: no limit unless given)."""
    active_thread_percentage: Annotated[int | None, Limits(ge=1, le=100)] = None
    """Share of the GPU's threads each client may use."""


Sharing = Annotated[NoSharing | TimeSlicing | Mps, Limits(discriminator="strategy")]


class Claim(Model):
    """DRA only: what the class's ResourceClaimTemplate asks for (default: one device)."""

    count: Annotated[int, Limits(ge=1, le=64)] = 1
    """Devices per claim, all on one node."""
    allocation_mode: Literal["ExactCount", "All"] = "ExactCount"
    """All: every device of the class on the node the pod lands on (count must stay 1)."""
    first_available: list[DnsLabel] | None = None
    """Other classes to fall back to, in order, when none of this class's devices is free
    (Kubernetes' prioritized list; beta and on from 1.34, alpha in 1.33)."""
    match_attribute: Annotated[str, Limits(max_length=317)] | None = None
    """An attribute all devices of a claim share, as NVIDIA's DRA driver publishes it, e.g.
    resource.kubernetes.io/pcieRoot (same PCIe root) or gpu.nvidia.com/productName."""
    extended_resource: bool = False
    """Pods may also ask for the class as the extended resource it has in device-plugin mode
    (<resourceDomain>/<name> or resourceName), unchanged: DeviceClass extendedResourceName
    (alpha in 1.34, feature gate DRAExtendedResource)."""


class ResourceClass(Model):
    name: DnsLabel
    """Class name: a DNS label, unique in the cluster."""
    resource_name: ExtendedResourceName | None = None
    """The extended resource pods request; defaults to <resourceDomain>/<name>."""
    description: Annotated[str, Limits(max_length=1024)] = ""
    """Free text shown by `gpuconf explain`."""
    select: Selector
    """Which GPUs (or MIG devices) the class holds."""
    sharing: Sharing = NoSharing(strategy="none")
    """How the class's GPUs are shared between containers."""
    allocation_policy: Literal["spread", "pack"] = "spread"
    """For shared GPUs: spread replicas over physical GPUs, or pack them onto few."""
    claim: Claim | None = None
    """DRA only: devices per claim, all devices, fallbacks, a shared attribute, extended resource."""
    overcommit: bool = False
    """Allow quotas that add up to more than the class's capacity (a warning, not an error)."""
