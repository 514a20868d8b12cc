"""The shape of a GPU model: what gpuconf knows about a part, for the catalog and for models
users declare in their cluster file (`spec.gpuModels`)."""

from __future__ import annotations

from typing import Annotated

from gpuconf.api.base import MigProfileName, Model
from gpuconf.api.record import Limits, field

GPU_MODEL_NAME = r"^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$"
PCI_DEVICE_ID = r"^0x[0-9A-F]{4}$"
COMPUTE_CAPABILITY = r"^[0-9]{1,2}\.[0-9]$"
# Where a model is referred to, the schema says so with this marker; the schema generator turns
# it into a definition holding the catalog's names (api/ knows no catalog).
GPU_MODEL_REFERENCE = "gpuconf:gpu-model-reference"

ComputeCapability = Annotated[str, Limits(pattern=COMPUTE_CAPABILITY)]
GpuModelName = Annotated[str, Limits(pattern=GPU_MODEL_NAME)]
"""A model's own name, where it is defined."""
GpuModelReference = Annotated[
    str, Limits(pattern=GPU_MODEL_NAME, json_schema={"$comment": GPU_MODEL_REFERENCE})
]
"""A name that refers to a catalog model or one declared in spec.gpuModels."""


class MigProfile(Model):
    compute: Annotated[int, Limits(ge=1, le=8)]
    """Compute slices the profile takes."""
    memory: Annotated[int, Limits(ge=1, le=8)]
    """Memory slices the profile takes."""
    max: Annotated[int, Limits(ge=1, le=7)]
    """The most instances of this profile one GPU holds."""
    memory_mib: Annotated[int, Limits(ge=1)] = field(key="memoryMiB")
    """Memory of one instance in MiB, as `nvidia-smi mig -lgip` shows it (GiB × 1024)."""


class MigCapability(Model):
    compute_slices: Annotated[int, Limits(ge=1, le=8)] = field(key="computeSlices")
    """Compute slices of the whole GPU (7 on A100/H100/H200)."""
    memory_slices: Annotated[int, Limits(ge=1, le=8)] = field(key="memorySlices")
    """Memory slices of the whole GPU (8 on A100/H100/H200)."""
    profiles: Annotated[dict[MigProfileName, MigProfile], Limits(min_length=1)]
    """The GPU instance profiles, by name (e.g. 1g.10gb)."""
    balanced: Annotated[
        dict[MigProfileName, Annotated[int, Limits(ge=1, le=7)]], Limits(min_length=1)
    ]
    """The layout NVIDIA's mig-parted calls all-balanced for this model."""


class GpuModel(Model):
    name: GpuModelName
    """The name cluster files use for the model (e.g. "L40S", "Jetson-AGX-Orin-64GB")."""
    nvml_name: Annotated[str, Limits(min_length=1, max_length=96)] = field(key="nvmlName")
    """What NVML's nvmlDeviceGetName returns (NVIDIA's DRA driver publishes it as productName)."""
    memory_mib: Annotated[int, Limits(ge=1, le=16 * 1024 * 1024)] = field(key="memoryMiB")
    """Total memory in MiB as NVML reports it; for an integrated GPU, the module's memory, which it
    shares with the CPU."""
    pci_device_id: Annotated[str, Limits(pattern=PCI_DEVICE_ID)] | None = field(
        default=None, key="pciDeviceId"
    )
    """PCI device id ("0x2330"); mig-parted selects MIG layouts by it. Integrated GPUs have none."""
    architecture: Annotated[str, Limits(min_length=1, max_length=32)]
    """GPU architecture as NVIDIA names it (Turing, Ampere, Ada Lovelace, Hopper, Blackwell)."""
    compute_capability: ComputeCapability = field(key="computeCapability")
    """CUDA compute capability, quoted ("8.9")."""
    nvlinks: Annotated[int, Limits(ge=0, le=18)] = 0
    """NVLinks per GPU (0: none)."""
    integrated: bool = False
    """An integrated GPU (Jetson/Tegra): part of the SoC, no PCI device, memory shared with the CPU."""
    mig: MigCapability | None = None
    """Multi-Instance GPU profiles; absent when the model has none (or none are known)."""


class GpuCatalog(Model):
    """The file of GPU models gpuconf knows (`gpuconf/gpus/catalog.yaml`)."""

    models: Annotated[list[GpuModel], Limits(min_length=1)]
