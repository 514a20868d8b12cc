"""What gpuconf/node/nvml/pynvml_backend.py reads from the real driver, checked against another
reader of it: nvidia-smi, sysfs, or NVML queries the backend does not make. All read-only."""

from __future__ import annotations

import logging
import re
import shutil
import subprocess
from typing import Any

import pytest

from gpuconf.gpus.catalog import Catalog
from gpuconf.node.nvml.api import GpuInfo
from gpuconf.node.nvml.pynvml_backend import PynvmlNvml, normalize_bus_id

QUERY = ["index", "uuid", "name", "pci.bus_id", "memory.total", "compute_cap", "mig.mode.current"]


def nvidia_smi(*args: str) -> str:
    found = shutil.which("nvidia-smi")
    if found is None:
        pytest.skip("no nvidia-smi here to compare with")
    result = subprocess.run([found, *args], capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 0, f"nvidia-smi {' '.join(args)}: {result.stdout}{result.stderr}"
    return result.stdout


def queried(*fields: str) -> list[list[str]]:
    """nvidia-smi --query-gpu rows, one per GPU, its fields as printed without units."""
    out = nvidia_smi(f"--query-gpu={','.join(fields)}", "--format=csv,noheader,nounits")
    return [[field.strip() for field in line.split(",")] for line in out.splitlines() if line]


def as_gpu_row(gpu: GpuInfo) -> list[str]:
    """The backend's view of a GPU as nvidia-smi prints the QUERY fields."""
    major_minor = "{}.{}".format(*gpu.compute_capability) if gpu.compute_capability else ""
    mig = ("Enabled" if gpu.mig_enabled else "Disabled") if gpu.mig_capable else "[N/A]"
    memory = str(gpu.memory_mib)
    return [str(gpu.index), gpu.uuid, gpu.name, gpu.pci_bus_id, memory, major_minor, mig]


@pytest.mark.gpu
def test_discovered_gpus_are_the_ones_nvidia_smi_lists(real_gpus: tuple[GpuInfo, ...]) -> None:
    rows = queried(*QUERY)
    for row in rows:
        row[3] = normalize_bus_id(row[3])
    assert [as_gpu_row(gpu) for gpu in real_gpus] == rows


@pytest.mark.gpu
def test_driver_and_cuda_versions_are_the_ones_nvidia_smi_prints(real_nvml: PynvmlNvml) -> None:
    try:
        driver, cuda = real_nvml.driver_version(), real_nvml.cuda_driver_version()
    finally:
        real_nvml.close()
    assert {row[0] for row in queried("driver_version")} == {driver}
    header = re.search(r"CUDA Version:\s*(\d+)\.(\d+)", nvidia_smi())
    assert header is not None, "nvidia-smi printed no CUDA Version"
    assert cuda == (int(header.group(1)), int(header.group(2)))


@pytest.mark.gpu
def test_a_pending_row_remap_is_reported_as_nvidia_smi_reports_it(
    real_gpus: tuple[GpuInfo, ...],
) -> None:
    rows = queried("index", "remapped_rows.pending")
    by_index = {int(index): pending for index, pending in rows}
    for gpu in real_gpus:
        pending = by_index[gpu.index]
        if pending.startswith("["):  # [N/A]: before Ampere, page retirement stands in
            continue
        assert gpu.reset_pending == (pending == "Yes"), f"GPU {gpu.index}: nvidia-smi {pending}"


@pytest.mark.gpu
def test_the_numa_node_from_sysfs_is_one_nvml_gives_the_gpu_s_memory_affinity(
    real_gpus: tuple[GpuInfo, ...], raw_pynvml: Any
) -> None:
    placed = [gpu for gpu in real_gpus if gpu.numa_node is not None]
    if not placed:
        pytest.skip("sysfs gives no GPU here a NUMA node (numa_node -1: one node)")
    for gpu in placed:
        handle = raw_pynvml.nvmlDeviceGetHandleByIndex(gpu.index)
        words = raw_pynvml.nvmlDeviceGetMemoryAffinity(
            handle, 4, raw_pynvml.NVML_AFFINITY_SCOPE_NODE
        )
        nodes = {
            64 * w + bit for w, word in enumerate(words) for bit in range(64) if word >> bit & 1
        }
        assert gpu.numa_node in nodes, f"GPU {gpu.index}: sysfs {gpu.numa_node}, NVML {nodes}"


@pytest.mark.gpu
def test_nvlink_peers_are_within_the_active_links_and_the_catalog_s_count(
    real_gpus: tuple[GpuInfo, ...], raw_pynvml: Any
) -> None:
    catalog = Catalog.load()
    for gpu in real_gpus:
        handle = raw_pynvml.nvmlDeviceGetHandleByIndex(gpu.index)
        active = 0
        for link in range(raw_pynvml.NVML_NVLINK_MAX_LINKS):
            try:
                state = raw_pynvml.nvmlDeviceGetNvLinkState(handle, link)
            except raw_pynvml.NVMLError:
                break
            active += state == raw_pynvml.NVML_FEATURE_ENABLED
        model = catalog.by_nvml_name(gpu.name)
        assert gpu.index not in gpu.nvlinks
        assert sum(gpu.nvlinks.values()) <= active
        if model is not None:
            assert active <= model.nvlinks, f"{model.name}: {active} NVLinks up"


@pytest.mark.gpu
def test_every_gpu_registers_for_xid_events(
    real_nvml: PynvmlNvml, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, "gpuconf.node.nvml.pynvml_backend"):
        try:
            real_nvml.wait_for_events(0.1)
        finally:
            real_nvml.close()
    assert not caplog.records, [record.getMessage() for record in caplog.records]
