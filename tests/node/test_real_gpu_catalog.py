"""The catalog entry (gpuconf/gpus/catalog.yaml) of the GPU this machine really has, checked
against what its driver says through NVML. Read-only: nothing here changes MIG mode or creates
a GPU instance; where NVML answers MIG profile queries only with MIG mode on, and it is off, the
MIG parts skip and say so."""

from __future__ import annotations

import ctypes
import re
from typing import Any, NamedTuple

import pytest

from gpuconf.api.gpu_model import GpuModel
from gpuconf.gpus.catalog import Catalog
from gpuconf.node.nvml.api import GpuInfo

# gpuconf's profile names are nvidia-smi's; NVML's profile info names them "MIG 1g.10gb". The
# catalog lists the plain profiles (mig-parted's); NVML adds variants with a media-engine or
# graphics suffix (1g.10gb+me, 1g.10gb-me, 1g.24gb+gfx, ...), which are not compared.
PLAIN_PROFILE = re.compile(r"\d+g\.\d+gb")
# pynvml's NVML_DEVICE_ARCH_* suffix for each catalog architecture.
NVML_ARCHITECTURE = {
    "Volta": "VOLTA",
    "Turing": "TURING",
    "Ampere": "AMPERE",
    "Ada Lovelace": "ADA",
    "Hopper": "HOPPER",
    "Blackwell": "BLACKWELL",
}


class ProfileFacts(NamedTuple):
    """What the catalog says of a MIG profile, in the catalog's own terms."""

    compute: int
    max: int
    memory_mib: int


def catalog_model(gpu: GpuInfo) -> GpuModel:
    model = Catalog.load().by_nvml_name(gpu.name)
    assert model is not None, (
        f"GPU {gpu.index} is {gpu.name!r} ({gpu.memory_mib} MiB, compute capability "
        f"{gpu.compute_capability}): no catalog model has that nvmlName"
    )
    return model


def text(value: str | bytes) -> str:
    return value.decode() if isinstance(value, bytes) else value


def nvml_error_is(pynvml: Any, error: Exception, *names: str) -> bool:
    return getattr(error, "value", None) in {getattr(pynvml, name) for name in names}


def gpu_instance_profiles(pynvml: Any, handle: Any) -> dict[str, Any]:
    """nvmlDeviceGetGpuInstanceProfileInfoV (its v2 struct carries the profile's name) for every
    profile id this nvidia-ml-py knows, by name; ids the GPU lacks are left out."""
    found: dict[str, Any] = {}
    for profile in range(pynvml.NVML_GPU_INSTANCE_PROFILE_COUNT):
        try:
            info = pynvml.nvmlDeviceGetGpuInstanceProfileInfo(handle, profile, 2)
        except pynvml.NVMLError as error:
            if nvml_error_is(
                pynvml, error, "NVML_ERROR_NOT_SUPPORTED", "NVML_ERROR_INVALID_ARGUMENT"
            ):
                continue
            raise
        found[text(info.name).removeprefix("MIG ").strip()] = info
    return found


def mig_profiles_or_skip(pynvml: Any, gpu: GpuInfo, model: GpuModel) -> dict[str, Any]:
    """The GPU's instance profiles; skips where the catalog has none or NVML describes none
    (some drivers do only with MIG mode on, and these tests never turn it on)."""
    if model.mig is None:
        pytest.skip(f"the catalog lists no MIG profiles for {model.name}")
    handle = pynvml.nvmlDeviceGetHandleByIndex(gpu.index)
    mode = "on" if gpu.mig_enabled else "off"
    try:
        profiles = gpu_instance_profiles(pynvml, handle)
    except pynvml.NVMLError as error:
        if gpu.mig_enabled:
            raise
        pytest.skip(f"GPU {gpu.index} ({gpu.name}), MIG mode off: NVML refused profiles: {error}")
    if not profiles:
        pytest.skip(
            f"NVML describes no GPU instance profile of GPU {gpu.index} ({gpu.name}) with MIG "
            f"mode {mode}; these tests never change MIG mode"
        )
    return profiles


@pytest.mark.gpu
def test_every_gpu_s_model_is_in_the_catalog_with_nvml_s_memory_and_compute_capability(
    real_gpus: tuple[GpuInfo, ...],
) -> None:
    for gpu in real_gpus:
        model = catalog_model(gpu)
        # Both in MiB: NVML's total memory // 2**20, the figure nvidia-smi prints as memory.total
        # and the catalog copies (not the GB of the model's name, which NVIDIA rounds).
        assert (gpu.name, gpu.memory_mib) == (model.nvml_name, model.memory_mib)
        assert gpu.compute_capability is not None
        assert "{}.{}".format(*gpu.compute_capability) == model.compute_capability


@pytest.mark.gpu
def test_the_catalog_s_architecture_and_pci_device_id_are_nvml_s(
    real_gpus: tuple[GpuInfo, ...], raw_pynvml: Any
) -> None:
    for gpu in real_gpus:
        model = catalog_model(gpu)
        handle = raw_pynvml.nvmlDeviceGetHandleByIndex(gpu.index)
        architecture = raw_pynvml.nvmlDeviceGetArchitecture(handle)
        expected = getattr(raw_pynvml, f"NVML_DEVICE_ARCH_{NVML_ARCHITECTURE[model.architecture]}")
        assert architecture == expected, f"{model.name} is {model.architecture} in the catalog"
        # pciDeviceId: the device id in the high 16 bits, NVIDIA's vendor id 0x10DE in the low.
        pci = raw_pynvml.nvmlDeviceGetPciInfo(handle)
        assert pci.pciDeviceId & 0xFFFF == 0x10DE
        assert model.pci_device_id is not None
        assert pci.pciDeviceId >> 16 == int(model.pci_device_id, 16)


@pytest.mark.gpu
def test_a_mig_capable_model_is_mig_capable_on_the_gpu(real_gpus: tuple[GpuInfo, ...]) -> None:
    for gpu in real_gpus:
        model = catalog_model(gpu)
        if model.mig is not None:
            assert gpu.mig_capable, f"the catalog gives {model.name} MIG profiles; NVML has no MIG"


@pytest.mark.gpu
def test_the_catalog_s_mig_profiles_are_nvml_s_gpu_instance_profiles(
    real_gpus: tuple[GpuInfo, ...], raw_pynvml: Any
) -> None:
    gpu = real_gpus[0]
    model = catalog_model(gpu)
    profiles = mig_profiles_or_skip(raw_pynvml, gpu, model)
    assert model.mig is not None
    from_nvml = {
        name: ProfileFacts(info.sliceCount, info.instanceCount, info.memorySizeMB)
        for name, info in profiles.items()
        if PLAIN_PROFILE.fullmatch(name)
    }
    from_catalog = {
        name: ProfileFacts(p.compute, p.max, p.memory_mib) for name, p in model.mig.profiles.items()
    }
    assert from_catalog == from_nvml
    assert max(p.compute for p in from_nvml.values()) == model.mig.compute_slices


@pytest.mark.gpu
def test_the_catalog_s_memory_slices_are_nvml_s_placement_sizes(
    real_gpus: tuple[GpuInfo, ...], raw_pynvml: Any
) -> None:
    """A profile's placements on the GPU take `size` memory slices each (nvidia-smi mig -lgipp
    prints them as {starts}:size)."""
    gpu = real_gpus[0]
    model = catalog_model(gpu)
    profiles = mig_profiles_or_skip(raw_pynvml, gpu, model)
    assert model.mig is not None
    handle = raw_pynvml.nvmlDeviceGetHandleByIndex(gpu.index)
    sizes = {}
    for name in model.mig.profiles:
        count = ctypes.c_uint(0)
        raw_pynvml.nvmlDeviceGetGpuInstancePossiblePlacements(
            handle, profiles[name].id, None, ctypes.byref(count)
        )
        placements = (raw_pynvml.c_nvmlGpuInstancePlacement_t * count.value)()
        raw_pynvml.nvmlDeviceGetGpuInstancePossiblePlacements(
            handle, profiles[name].id, placements, ctypes.byref(count)
        )
        sizes[name] = {placement.size for placement in placements[: count.value]}
    assert sizes == {name: {p.memory} for name, p in model.mig.profiles.items()}
    assert max(p.memory for p in model.mig.profiles.values()) == model.mig.memory_slices


@pytest.mark.gpu
def test_mig_devices_have_catalog_profiles(real_gpus: tuple[GpuInfo, ...]) -> None:
    enabled = [gpu for gpu in real_gpus if gpu.mig_enabled]
    if not enabled:
        pytest.skip("no GPU here has MIG mode on")
    for gpu in enabled:
        model = catalog_model(gpu)
        assert model.mig is not None
        for device in gpu.mig_devices:
            plain = PLAIN_PROFILE.match(device.profile)
            assert plain is not None, f"{device.uuid}: NVML's profile {device.profile!r}"
            profile = model.mig.profiles.get(plain.group())
            assert profile is not None, f"{device.uuid}: {device.profile} is not in the catalog"
            if device.attributes is not None:
                assert device.attributes.gpu_instance_slice_count == profile.compute
                assert device.attributes.memory_size_mb == profile.memory_mib
