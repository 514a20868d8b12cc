from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from gpuconf.node.nvml.api import MigAttributes, MigDevice, NvmlError, XidEvent
from gpuconf.node.nvml.pynvml_backend import (
    PynvmlNvml,
    mig_profile_from_name,
    normalize_bus_id,
    numa_node_of,
)


@pytest.mark.parametrize(
    ("nvml", "sysfs"),
    [
        ("00000000:18:00.0", "0000:18:00.0"),
        (b"00000001:AB:00.1", "0001:ab:00.1"),
        ("0000:18:00.0", "0000:18:00.0"),
    ],
)
def test_bus_ids_are_written_as_sysfs_names_them(nvml: str | bytes, sysfs: str) -> None:
    assert normalize_bus_id(nvml) == sysfs


def test_numa_node_comes_from_sysfs(tmp_path: Path) -> None:
    for bus_id, node in [("0000:18:00.0", "1\n"), ("0000:19:00.0", "-1\n")]:
        (tmp_path / bus_id).mkdir()
        (tmp_path / bus_id / "numa_node").write_text(node)
    assert numa_node_of("0000:18:00.0", tmp_path) == 1
    assert numa_node_of("0000:19:00.0", tmp_path) is None
    assert numa_node_of("0000:20:00.0", tmp_path) is None


@pytest.mark.parametrize(
    ("name", "profile"),
    [
        ("NVIDIA H100 80GB HBM3 MIG 1g.10gb", "1g.10gb"),
        ("NVIDIA A100-SXM4-40GB MIG 1g.5gb+me", "1g.5gb+me"),
        ("Tesla T4", None),
    ],
)
def test_mig_profile_from_the_device_name(name: str, profile: str | None) -> None:
    assert mig_profile_from_name(name) == profile


@pytest.mark.gpu
def test_real_gpus_are_discovered(real_nvml: PynvmlNvml) -> None:
    try:
        gpus = real_nvml.devices()
        assert gpus, "NVML initialised but found no GPU"
        assert [gpu.index for gpu in gpus] == list(range(len(gpus)))
        for gpu in gpus:
            assert gpu.uuid.startswith("GPU-")
            assert gpu.memory_mib > 0
            assert normalize_bus_id(gpu.pci_bus_id) == gpu.pci_bus_id
            assert all(0 <= peer < len(gpus) and links > 0 for peer, links in gpu.nvlinks.items())
        assert real_nvml.driver_version()
        assert all(gpu.compute_capability for gpu in gpus)
        cuda = real_nvml.cuda_driver_version()
        assert cuda is not None
        assert cuda[0] >= 10
        assert all(event.uuid for event in real_nvml.wait_for_events(0.1))
    finally:
        real_nvml.close()


class StubNvmlError(Exception):
    def __init__(self, value: int) -> None:
        super().__init__(f"NVML error {value}")
        self.value = value


class StubPynvml:
    """Two NVLinked GPUs, the first MIG-enabled with one 3g.40gb device, and one queued XID."""

    NVMLError = StubNvmlError
    NVML_ERROR_NOT_SUPPORTED, NVML_ERROR_INVALID_ARGUMENT, NVML_ERROR_NOT_FOUND = 3, 2, 6
    NVML_ERROR_TIMEOUT, NVML_FEATURE_ENABLED, NVML_DEVICE_MIG_ENABLE = 10, 1, 1
    NVML_NVLINK_MAX_LINKS, NVML_GPU_INSTANCE_PROFILE_COUNT = 18, 0
    NVML_ERROR_FUNCTION_NOT_FOUND = 13
    nvmlEventTypeXidCriticalError = 8
    bus_ids = ("00000000:18:00.0", "00000000:19:00.0")

    def __init__(self) -> None:
        self.events = [
            SimpleNamespace(device="gpu1", eventType=8, eventData=79, gpuInstanceId=0xFFFFFFFF)
        ]
        self.shut_down = False

    def nvmlInit(self) -> None: ...
    def nvmlShutdown(self) -> None:
        self.shut_down = True

    def nvmlSystemGetDriverVersion(self) -> bytes:
        return b"550.54.15"

    def nvmlSystemGetCudaDriverVersion(self) -> int:
        return 13000  # what an H100 with driver 580.159.04 answered; nvidia-smi says 13.0

    def nvmlDeviceGetCudaComputeCapability(self, handle: str) -> tuple[int, int]:
        return (9, 0)

    def nvmlDeviceGetCount(self) -> int:
        return 2

    def nvmlDeviceGetHandleByIndex(self, index: int) -> str:
        return f"gpu{index}"

    def nvmlDeviceGetPciInfo(self, handle: str) -> SimpleNamespace:
        return SimpleNamespace(busId=self.bus_ids[int(handle[-1])].encode())

    def nvmlDeviceGetUUID(self, handle: str) -> str:
        return f"GPU-{handle}" if handle.startswith("gpu") else f"MIG-{handle}"

    def nvmlDeviceGetName(self, handle: str) -> str:
        return "NVIDIA H100 80GB HBM3 MIG 3g.40gb" if handle == "mig0" else "NVIDIA H100 80GB HBM3"

    def nvmlDeviceGetMemoryInfo(self, handle: str) -> SimpleNamespace:
        return SimpleNamespace(total=81559 * 1024 * 1024)

    def nvmlDeviceGetNvLinkState(self, handle: str, link: int) -> int:
        if link >= 4:
            raise StubNvmlError(self.NVML_ERROR_INVALID_ARGUMENT)
        return 1

    def nvmlDeviceGetNvLinkRemotePciInfo(self, handle: str, link: int) -> SimpleNamespace:
        return SimpleNamespace(busId=self.bus_ids[1 - int(handle[-1])].encode())

    def nvmlDeviceGetMigMode(self, handle: str) -> list[int]:
        if handle == "gpu1":
            raise StubNvmlError(self.NVML_ERROR_NOT_SUPPORTED)
        return [1, 1]

    def nvmlDeviceGetRemappedRows(self, handle: str) -> tuple[int, int, int, int]:
        if handle == "gpu1":
            raise StubNvmlError(self.NVML_ERROR_NOT_SUPPORTED)
        return (0, 1, 1, 0)

    def nvmlDeviceGetRetiredPagesPendingStatus(self, handle: str) -> int:
        return 0

    def nvmlDeviceGetMaxMigDeviceCount(self, handle: str) -> int:
        return 2

    def nvmlDeviceGetMigDeviceHandleByIndex(self, handle: str, slot: int) -> str:
        if slot:
            raise StubNvmlError(self.NVML_ERROR_NOT_FOUND)
        return "mig0"

    def nvmlDeviceGetGpuInstanceId(self, handle: str) -> int:
        return 2

    def nvmlDeviceGetComputeInstanceId(self, handle: str) -> int:
        return 0

    def nvmlDeviceGetAttributes(self, handle: str) -> SimpleNamespace:
        # Distinct numbers, so that a field read into the wrong place shows.
        return SimpleNamespace(
            multiprocessorCount=60,
            sharedCopyEngineCount=3,
            sharedDecoderCount=4,
            sharedEncoderCount=5,
            sharedJpegCount=6,
            sharedOfaCount=7,
            gpuInstanceSliceCount=8,
            computeInstanceSliceCount=9,
            memorySizeMB=40448,
        )

    def nvmlEventSetCreate(self) -> str:
        return "event-set"

    def nvmlDeviceRegisterEvents(self, handle: str, types: int, event_set: str) -> None: ...

    def nvmlEventSetWait_v2(self, event_set: str, timeout_ms: int) -> SimpleNamespace:
        if not self.events:
            raise StubNvmlError(self.NVML_ERROR_TIMEOUT)
        return self.events.pop()

    def nvmlEventSetFree(self, event_set: str) -> None: ...


@pytest.fixture
def stub(monkeypatch: pytest.MonkeyPatch) -> StubPynvml:
    module = StubPynvml()
    monkeypatch.setitem(sys.modules, "pynvml", module)
    return module


def test_mig_attributes_a_driver_does_not_answer_are_left_unknown(
    stub: StubPynvml, monkeypatch: pytest.MonkeyPatch
) -> None:
    def unsupported(handle: str) -> SimpleNamespace:
        raise StubNvmlError(stub.NVML_ERROR_NOT_SUPPORTED)

    monkeypatch.setattr(stub, "nvmlDeviceGetAttributes", unsupported)
    first, _second = PynvmlNvml().devices()
    assert first.mig_devices == (MigDevice("MIG-mig0", "3g.40gb", 2, 0),)


def test_stubbed_nvml_is_translated(stub: StubPynvml) -> None:
    nvml = PynvmlNvml()
    first, second = nvml.devices()
    assert nvml.driver_version() == "550.54.15"
    assert (first.pci_bus_id, first.memory_mib, dict(first.nvlinks)) == (
        "0000:18:00.0",
        81559,
        {1: 4},
    )
    attributes = MigAttributes(60, 3, 4, 5, 6, 7, 8, 9, 40448)
    assert first.mig_devices == (MigDevice("MIG-mig0", "3g.40gb", 2, 0, attributes),)
    assert (second.mig_enabled, dict(second.nvlinks)) == (False, {0: 4})
    assert (first.reset_pending, second.reset_pending) == (True, False)
    assert (first.compute_capability, nvml.cuda_driver_version()) == ((9, 0), (13, 0))
    # MIG mode answers only on a GPU that supports MIG (the second raises NOT_SUPPORTED).
    assert (first.mig_capable, second.mig_capable) == (True, False)
    assert nvml.wait_for_events(0.01) == [XidEvent("GPU-gpu1", 79)]
    assert nvml.wait_for_events(0.01) == []
    nvml.close()
    assert stub.shut_down


def test_nvml_errors_become_nvml_error(stub: StubPynvml, monkeypatch: pytest.MonkeyPatch) -> None:
    def lost(handle: str) -> str:
        raise StubNvmlError(15)

    monkeypatch.setattr(stub, "nvmlDeviceGetUUID", lost)
    with pytest.raises(NvmlError, match="failed: NVML error 15"):
        PynvmlNvml().devices()
