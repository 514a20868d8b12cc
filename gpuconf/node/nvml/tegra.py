"""Jetson's integrated GPU, discovered from the SoC's files instead of NVML (which Jetson lacks).

Detection follows NVIDIA's device plugin (go-nvlib `HasTegraFiles`): `/etc/nv_tegra_release` is a
file, or `/sys/devices/soc0/family` starts with "tegra". The SoC's chip id in
`/sys/devices/soc0/soc_id` names the GPU; `/proc/meminfo` gives the memory it shares with the CPU.
Everything is read under a root directory, so a test (or `--nvml tegra:DIR`) can stand in for a
module with a folder holding those files.
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from pathlib import Path

from gpuconf.gpus.jetson import soc_by_chip_id
from gpuconf.node.nvml.api import GpuInfo, NvmlError, XidEvent

RELEASE_FILE = "etc/nv_tegra_release"
FAMILY_FILE = "sys/devices/soc0/family"
SOC_ID_FILE = "sys/devices/soc0/soc_id"
MEMINFO_FILE = "proc/meminfo"

# The ID a container is given for the iGPU. NVIDIA's container toolkit (CSV mode, v1.19+:
# pkg/nvcdi/lib-csv.go) accepts only "0" or "all" there and refuses the "tegra" NVIDIA's plugin
# uses; "0" is also the CDI name `nvidia-ctk cdi generate --mode=csv` gives the iGPU.
IGPU_ID = "0"

_RELEASE = re.compile(r"^# R(\d+) \(release\), REVISION: (\d+)\.(\d+)")
_MEM_TOTAL = re.compile(r"^MemTotal:\s+(\d+) kB$", re.MULTILINE)


def is_tegra(root: Path) -> bool:
    if (root / RELEASE_FILE).is_file():
        return True
    try:
        family = (root / FAMILY_FILE).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False
    return family.lower().startswith("tegra")


def l4t_release(text: str) -> str | None:
    """ "# R36 (release), REVISION: 4.3, …" -> "36.4.3"."""
    found = _RELEASE.match(text)
    return ".".join(found.groups()) if found else None


class TegraGpu:
    """The `Nvml` of a Jetson module: one GPU, index 0, no XID events (no NVML to report them)."""

    def __init__(self, root: Path = Path("/")) -> None:
        self._root = root
        if not is_tegra(root):
            raise NvmlError(
                f"not a Jetson: neither {root / RELEASE_FILE} nor a Tegra "
                f"{root / FAMILY_FILE} found"
            )

    def driver_version(self) -> str:
        """The L4T (Jetson Linux) release, which carries the GPU driver."""
        try:
            text = (self._root / RELEASE_FILE).read_text(encoding="utf-8", errors="replace")
        except OSError:
            return "L4T unknown"
        release = l4t_release(text)
        return f"L4T {release}" if release else "L4T unknown"

    def cuda_driver_version(self) -> tuple[int, int] | None:
        return None  # no NVML on a Jetson to ask

    def devices(self) -> Sequence[GpuInfo]:
        soc_id = self._read(SOC_ID_FILE).strip()
        soc = soc_by_chip_id(int(soc_id)) if soc_id.isdigit() else None
        if soc is None:
            raise NvmlError(
                f"{self._root / SOC_ID_FILE}: unknown Tegra chip id {soc_id!r} "
                "(gpuconf knows Orin (35) and Xavier (25))"
            )
        memory = _MEM_TOTAL.search(self._read(MEMINFO_FILE))
        if memory is None:
            raise NvmlError(f"{self._root / MEMINFO_FILE}: no MemTotal line")
        return (
            GpuInfo(
                index=0,
                uuid=IGPU_ID,
                name=soc.gpu_name,
                memory_mib=int(memory.group(1)) // 1024,
                pci_bus_id="",
            ),
        )

    def wait_for_events(self, timeout_seconds: float) -> Sequence[XidEvent]:
        time.sleep(timeout_seconds)
        return ()

    def close(self) -> None:
        pass

    def _read(self, relative: str) -> str:
        try:
            return (self._root / relative).read_text(encoding="utf-8", errors="replace")
        except OSError as error:
            raise NvmlError(f"cannot read {self._root / relative}: {error.strerror}") from None
