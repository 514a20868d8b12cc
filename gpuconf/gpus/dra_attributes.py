"""The device attributes NVIDIA's DRA driver (gpu.nvidia.com) publishes, per release line.

Read from the driver's kubelet plugin (`cmd/gpu-kubelet-plugin/deviceinfo.go`) at v25.3.2,
v25.8.0, v25.12.0 and v0.4.0 (the project renamed to dra-driver-nvidia-gpu). Names without a
domain live under gpu.nvidia.com; `resource.kubernetes.io/…` names are Kubernetes' standard
attributes. `index`, `parentIndex` (commit 36fc80ab) and `minor` (50d90da0) were removed in
v25.8.0; `pcieBusID` became `resource.kubernetes.io/pciBusID` and `addressingMode` appeared in
v25.12.0. `pcieRoot` and `addressingMode` are published only where the driver can determine them.
"""

from __future__ import annotations

from typing import NamedTuple, get_args

from gpuconf.api.cluster.nvidia_components import Dra, DraDriverRelease

DRIVER = "gpu.nvidia.com"
STANDARD_DOMAIN = "resource.kubernetes.io"

RELEASES: tuple[str, ...] = get_args(DraDriverRelease)
CURRENT: str = Dra().driver_version

_COMMON = frozenset(
    {
        "type",
        "uuid",
        "productName",
        "brand",
        "architecture",
        "cudaComputeCapability",
        "driverVersion",
        "cudaDriverVersion",
        f"{STANDARD_DOMAIN}/pcieRoot",
    }
)
_MIG = frozenset({"parentUUID", "profile"})


# The feature gate each sharing strategy needs from v25.8.0 (pkg/featuregates; both alpha,
# off by default); without it the driver refuses the claim: "unknown GPU sharing strategy".
SHARING_GATES = {"time-slicing": "TimeSlicingSettings", "mps": "MPSSupport"}


class AttributeSet(NamedTuple):
    line: str
    """The release line, e.g. v25.8 (every patch release of a line publishes the same names)."""
    gpu: frozenset[str]
    mig: frozenset[str]
    sharing_gated: bool = True
    """Sharing needs a feature gate (SHARING_GATES) on this line."""

    def published(self, mig: bool) -> frozenset[str]:
        return self.mig if mig else self.gpu

    @property
    def has_indices(self) -> bool:
        return "index" in self.gpu


_V25_3 = AttributeSet(
    "v25.3",
    _COMMON | {"minor", "index", "pcieBusID"},
    _COMMON | _MIG | {"index", "parentIndex", "pcieBusID"},
    sharing_gated=False,
)
_V25_8 = AttributeSet("v25.8", _COMMON | {"pcieBusID"}, _COMMON | _MIG | {"pcieBusID"})
_V25_12 = AttributeSet(
    "v25.12",
    _COMMON | {f"{STANDARD_DOMAIN}/pciBusID", "addressingMode"},
    _COMMON | _MIG | {f"{STANDARD_DOMAIN}/pciBusID", "addressingMode"},
)

_BY_LINE = {
    "v25.3": _V25_3,
    "v25.8": _V25_8,
    "v25.12": _V25_12,
    # dra-driver-nvidia-gpu v0.4 publishes the names of v25.12.
    "v0.4": AttributeSet("v0.4", _V25_12.gpu, _V25_12.mig),
}


def attribute_set(release: str) -> AttributeSet:
    """The attribute names a release of the driver publishes for GPUs and MIG devices."""
    major, minor, _patch = release.removeprefix("v").split(".")
    return _BY_LINE[f"v{major}.{minor}"]


def qualified(name: str) -> tuple[str, str]:
    """(domain, attribute) as a CEL selector reaches it: device.attributes[domain].attribute."""
    domain, _, attribute = name.rpartition("/")
    return (domain or DRIVER, attribute)


def qualified_name(name: str) -> str:
    """The fully qualified attribute name a matchAttribute constraint takes: names without a
    domain are the driver's (productName -> gpu.nvidia.com/productName)."""
    domain, attribute = qualified(name)
    return f"{domain}/{attribute}"
