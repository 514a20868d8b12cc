"""What the node runtime needs from NVML, and nothing more."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol


@dataclass(frozen=True)
class MigAttributes:
    """nvmlDeviceGetAttributes on a MIG device (nvmlDeviceAttributes_t), field for field."""

    multiprocessor_count: int
    shared_copy_engine_count: int
    shared_decoder_count: int
    shared_encoder_count: int
    shared_jpeg_count: int
    shared_ofa_count: int
    gpu_instance_slice_count: int
    compute_instance_slice_count: int
    memory_size_mb: int


@dataclass(frozen=True)
class MigDevice:
    uuid: str
    """MIG-<uuid>, as NVML reports it."""
    profile: str
    """e.g. "1g.10gb"."""
    gpu_instance_id: int
    compute_instance_id: int
    attributes: MigAttributes | None = None
    """None where NVML cannot tell them (then no label that needs them is written)."""


@dataclass(frozen=True)
class GpuInfo:
    index: int
    uuid: str
    name: str
    """nvmlDeviceGetName, e.g. "NVIDIA H100 80GB HBM3"."""
    memory_mib: int
    pci_bus_id: str
    """Domain:bus:device.function, e.g. "0000:18:00.0"."""
    numa_node: int | None = None
    nvlinks: Mapping[int, int] = field(default_factory=dict)
    """Peer GPU index -> number of NVLinks between the two."""
    mig_enabled: bool = False
    mig_devices: Sequence[MigDevice] = ()
    reset_pending: bool = False
    """NVML says the GPU waits for a reset (row remapping or page retirement pending)."""
    compute_capability: tuple[int, int] | None = None
    """CUDA compute capability (major, minor); None where unknown."""
    mig_capable: bool = False
    """The GPU supports MIG (whether or not MIG is enabled now)."""


@dataclass(frozen=True)
class XidEvent:
    uuid: str
    """The GPU's (or MIG device's) UUID."""
    xid: int
    gpu_instance_id: int | None = None
    """Set when the event concerns one GPU instance of a MIG-enabled GPU."""


class NvmlError(Exception):
    """NVML could not answer; the caller treats the devices it asked about as unhealthy."""


class Nvml(Protocol):
    def driver_version(self) -> str: ...

    def cuda_driver_version(self) -> tuple[int, int] | None:
        """The CUDA version the driver supports (nvmlSystemGetCudaDriverVersion); None if unknown."""
        ...

    def devices(self) -> Sequence[GpuInfo]:
        """Every GPU NVML sees now (a GPU that fell off the bus is missing)."""
        ...

    def wait_for_events(self, timeout_seconds: float) -> Sequence[XidEvent]:
        """Critical-error (XID) events that arrived within the timeout; empty on timeout."""
        ...

    def close(self) -> None: ...
