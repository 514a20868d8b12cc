"""The Nvml protocol on the real driver, through nvidia-ml-py (``import pynvml``)."""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any, TypeVar

from gpuconf.node.nvml.api import GpuInfo, MigAttributes, MigDevice, NvmlError, XidEvent

log = logging.getLogger(__name__)

SYSFS_PCI_DEVICES = Path("/sys/bus/pci/devices")
# NVML's "this event is not about one GPU instance".
NO_GPU_INSTANCE = 0xFFFFFFFF

T = TypeVar("T")


def _load_pynvml() -> ModuleType:
    try:
        import pynvml
    except ImportError as error:
        raise NvmlError(f"nvidia-ml-py is not installed: {error}") from None
    module: ModuleType = pynvml
    return module


def normalize_bus_id(bus_id: str | bytes) -> str:
    """NVML's ``00000000:18:00.0`` as sysfs names it: ``0000:18:00.0``, lower case."""
    text = _text(bus_id).strip().lower()
    parts = text.split(":")
    if len(parts) != 3:
        return text
    domain, bus, device_function = parts
    return f"{int(domain, 16):04x}:{bus}:{device_function}"


def numa_node_of(bus_id: str, sysfs: Path = SYSFS_PCI_DEVICES) -> int | None:
    try:
        node = int((sysfs / bus_id / "numa_node").read_text().strip())
    except (OSError, ValueError):
        return None
    return None if node < 0 else node


def mig_profile_from_name(name: str) -> str | None:
    """``NVIDIA H100 80GB HBM3 MIG 1g.10gb`` → ``1g.10gb``."""
    _, marker, profile = name.rpartition(" MIG ")
    if not marker or not profile.strip():
        return None
    return profile.strip()


def _text(value: str | bytes) -> str:
    return value.decode() if isinstance(value, bytes) else value


class PynvmlNvml:
    """One NVML session for the life of the process; call close() to shut it down."""

    def __init__(self) -> None:
        self._pynvml = _load_pynvml()
        self._call(self._pynvml.nvmlInit)
        self._event_set: Any = None

    def driver_version(self) -> str:
        return _text(self._call(self._pynvml.nvmlSystemGetDriverVersion))

    def cuda_driver_version(self) -> tuple[int, int] | None:
        nvml = self._pynvml
        try:
            version = int(nvml.nvmlSystemGetCudaDriverVersion())
        except nvml.NVMLError:
            return None
        return version // 1000, version % 1000 // 10

    def devices(self) -> Sequence[GpuInfo]:
        nvml = self._pynvml
        count = self._call(nvml.nvmlDeviceGetCount)
        handles = [self._call(nvml.nvmlDeviceGetHandleByIndex, i) for i in range(count)]
        bus_ids = [
            normalize_bus_id(self._call(nvml.nvmlDeviceGetPciInfo, h).busId) for h in handles
        ]
        index_by_bus_id = {bus_id: index for index, bus_id in enumerate(bus_ids)}
        return [
            self._gpu(index, handle, bus_ids[index], index_by_bus_id)
            for index, handle in enumerate(handles)
        ]

    def wait_for_events(self, timeout_seconds: float) -> Sequence[XidEvent]:
        nvml = self._pynvml
        if self._event_set is None:
            self._event_set = self._register_for_xids()
        events: list[XidEvent] = []
        timeout_ms = max(0, int(timeout_seconds * 1000))
        while True:
            try:
                data = nvml.nvmlEventSetWait_v2(self._event_set, timeout_ms)
            except nvml.NVMLError as error:
                if error.value == nvml.NVML_ERROR_TIMEOUT:
                    return events
                raise NvmlError(f"waiting for NVML events failed: {error}") from None
            if data.eventType == nvml.nvmlEventTypeXidCriticalError:
                uuid = _text(self._call(nvml.nvmlDeviceGetUUID, data.device))
                instance = (
                    None if data.gpuInstanceId == NO_GPU_INSTANCE else int(data.gpuInstanceId)
                )
                events.append(
                    XidEvent(uuid=uuid, xid=int(data.eventData), gpu_instance_id=instance)
                )
            timeout_ms = 0  # drain what already arrived, then return

    def close(self) -> None:
        nvml = self._pynvml
        try:
            if self._event_set is not None:
                nvml.nvmlEventSetFree(self._event_set)
                self._event_set = None
            nvml.nvmlShutdown()
        except nvml.NVMLError as error:
            log.warning("NVML shutdown failed: %s", error)

    def _call(self, function: Callable[..., T], *args: Any) -> T:
        try:
            return function(*args)
        except self._pynvml.NVMLError as error:
            raise NvmlError(f"{function.__name__} failed: {error}") from None

    def _gpu(
        self, index: int, handle: Any, bus_id: str, index_by_bus_id: dict[str, int]
    ) -> GpuInfo:
        nvml = self._pynvml
        mig_enabled = self._mig_enabled(handle)
        return GpuInfo(
            index=index,
            uuid=_text(self._call(nvml.nvmlDeviceGetUUID, handle)),
            name=_text(self._call(nvml.nvmlDeviceGetName, handle)),
            memory_mib=int(self._call(nvml.nvmlDeviceGetMemoryInfo, handle).total) // (1024 * 1024),
            pci_bus_id=bus_id,
            numa_node=numa_node_of(bus_id),
            nvlinks=self._nvlink_peers(handle, index_by_bus_id),
            mig_enabled=mig_enabled,
            mig_devices=self._mig_devices(handle) if mig_enabled else (),
            reset_pending=self._reset_pending(handle),
            compute_capability=self._compute_capability(handle),
            mig_capable=mig_enabled or self._mig_capable(handle),
        )

    def _compute_capability(self, handle: Any) -> tuple[int, int] | None:
        nvml = self._pynvml
        try:
            major, minor = nvml.nvmlDeviceGetCudaComputeCapability(handle)
        except nvml.NVMLError:
            return None
        return int(major), int(minor)

    def _mig_capable(self, handle: Any) -> bool:
        """NVML answers MIG mode queries only on GPUs that support MIG (as GFD's IsMigCapable)."""
        nvml = self._pynvml
        try:
            nvml.nvmlDeviceGetMigMode(handle)
        except nvml.NVMLError:
            return False
        return True

    def _reset_pending(self, handle: Any) -> bool:
        """Row remapping (Ampere and later) or page retirement (before) waiting for a reset."""
        nvml = self._pynvml
        try:
            _corrected, _uncorrected, pending, _failed = nvml.nvmlDeviceGetRemappedRows(handle)
            return bool(pending)
        except nvml.NVMLError as error:
            if error.value != nvml.NVML_ERROR_NOT_SUPPORTED:
                raise NvmlError(f"nvmlDeviceGetRemappedRows failed: {error}") from None
        try:
            status = nvml.nvmlDeviceGetRetiredPagesPendingStatus(handle)
        except nvml.NVMLError as error:
            if error.value != nvml.NVML_ERROR_NOT_SUPPORTED:
                raise NvmlError(f"nvmlDeviceGetRetiredPagesPendingStatus failed: {error}") from None
            return False
        return bool(status == nvml.NVML_FEATURE_ENABLED)

    def _nvlink_peers(self, handle: Any, index_by_bus_id: dict[str, int]) -> dict[int, int]:
        nvml = self._pynvml
        peers: dict[int, int] = {}
        for link in range(nvml.NVML_NVLINK_MAX_LINKS):
            try:
                if nvml.nvmlDeviceGetNvLinkState(handle, link) != nvml.NVML_FEATURE_ENABLED:
                    continue
                remote = nvml.nvmlDeviceGetNvLinkRemotePciInfo(handle, link)
            except nvml.NVMLError as error:
                if error.value in (nvml.NVML_ERROR_NOT_SUPPORTED, nvml.NVML_ERROR_INVALID_ARGUMENT):
                    break  # no NVLink, or past this GPU's last link
                raise NvmlError(f"reading NVLink {link} failed: {error}") from None
            peer = index_by_bus_id.get(normalize_bus_id(remote.busId))
            if peer is not None:  # NVSwitch links lead to no GPU of ours
                peers[peer] = peers.get(peer, 0) + 1
        return dict(sorted(peers.items()))

    def _mig_enabled(self, handle: Any) -> bool:
        nvml = self._pynvml
        try:
            current, _pending = nvml.nvmlDeviceGetMigMode(handle)
        except nvml.NVMLError as error:
            if error.value == nvml.NVML_ERROR_NOT_SUPPORTED:
                return False
            raise NvmlError(f"nvmlDeviceGetMigMode failed: {error}") from None
        return bool(current == nvml.NVML_DEVICE_MIG_ENABLE)

    def _mig_devices(self, handle: Any) -> tuple[MigDevice, ...]:
        nvml = self._pynvml
        devices = []
        for slot in range(self._call(nvml.nvmlDeviceGetMaxMigDeviceCount, handle)):
            try:
                mig = nvml.nvmlDeviceGetMigDeviceHandleByIndex(handle, slot)
            except nvml.NVMLError as error:
                if error.value == nvml.NVML_ERROR_NOT_FOUND:
                    continue  # an empty slot
                raise NvmlError(f"nvmlDeviceGetMigDeviceHandleByIndex failed: {error}") from None
            gpu_instance = int(self._call(nvml.nvmlDeviceGetGpuInstanceId, mig))
            name = _text(self._call(nvml.nvmlDeviceGetName, mig))
            devices.append(
                MigDevice(
                    uuid=_text(self._call(nvml.nvmlDeviceGetUUID, mig)),
                    profile=mig_profile_from_name(name) or self._profile_of(handle, gpu_instance),
                    gpu_instance_id=gpu_instance,
                    compute_instance_id=int(self._call(nvml.nvmlDeviceGetComputeInstanceId, mig)),
                    attributes=self._mig_attributes(mig),
                )
            )
        return tuple(devices)

    def _mig_attributes(self, mig: Any) -> MigAttributes | None:
        """What GFD's nvmlMigDevice.GetAttributes reads (NVIDIA/k8s-device-plugin v0.20.0,
        internal/resource/nvml-mig-device.go); None where this driver does not answer."""
        nvml = self._pynvml
        try:
            found = nvml.nvmlDeviceGetAttributes(mig)
        except nvml.NVMLError as error:
            if error.value in (nvml.NVML_ERROR_NOT_SUPPORTED, nvml.NVML_ERROR_FUNCTION_NOT_FOUND):
                return None
            raise NvmlError(f"nvmlDeviceGetAttributes failed: {error}") from None
        return MigAttributes(
            multiprocessor_count=int(found.multiprocessorCount),
            shared_copy_engine_count=int(found.sharedCopyEngineCount),
            shared_decoder_count=int(found.sharedDecoderCount),
            shared_encoder_count=int(found.sharedEncoderCount),
            shared_jpeg_count=int(found.sharedJpegCount),
            shared_ofa_count=int(found.sharedOfaCount),
            gpu_instance_slice_count=int(found.gpuInstanceSliceCount),
            compute_instance_slice_count=int(found.computeInstanceSliceCount),
            memory_size_mb=int(found.memorySizeMB),
        )

    def _profile_of(self, handle: Any, gpu_instance_id: int) -> str:
        """``<slices>g.<GiB>gb`` from the GPU instance's profile, as nvidia-smi names it."""
        nvml = self._pynvml
        instance = self._call(nvml.nvmlDeviceGetGpuInstanceById, handle, gpu_instance_id)
        profile_id = self._call(nvml.nvmlGpuInstanceGetInfo, instance).profileId
        for profile in range(nvml.NVML_GPU_INSTANCE_PROFILE_COUNT):
            try:
                info = nvml.nvmlDeviceGetGpuInstanceProfileInfo(handle, profile)
            except nvml.NVMLError:
                continue
            if info.id == profile_id:
                return f"{info.sliceCount}g.{math.ceil(info.memorySizeMB / 1024)}gb"
        return f"profile-{profile_id}"

    def _register_for_xids(self) -> Any:
        nvml = self._pynvml
        event_set = self._call(nvml.nvmlEventSetCreate)
        for index in range(self._call(nvml.nvmlDeviceGetCount)):
            handle = self._call(nvml.nvmlDeviceGetHandleByIndex, index)
            try:
                nvml.nvmlDeviceRegisterEvents(handle, nvml.nvmlEventTypeXidCriticalError, event_set)
            except nvml.NVMLError as error:
                if error.value != nvml.NVML_ERROR_NOT_SUPPORTED:
                    raise NvmlError(
                        f"registering GPU {index} for XID events failed: {error}"
                    ) from None
                log.warning("GPU %d does not report XID events; its health is not watched", index)
        return event_set
