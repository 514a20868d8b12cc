"""Jetson facts: the SoC behind each module generation, and the Jetson Linux (L4T) release each
JetPack carries.

Sources: Linux registers the SoC as /sys/devices/soc0 with family "Tegra" and soc_id the chip id
in decimal (drivers/soc/tegra/fuse/fuse-tegra.c; include/soc/tegra/fuse.h: TEGRA194 0x19,
TEGRA234 0x23); `/etc/nv_tegra_release` on JetPack 6.2 reads "# R36 (release), REVISION: 4.3";
JetPack 6 supports Orin only, Xavier ends with JetPack 5.
"""

from __future__ import annotations

from typing import NamedTuple

from gpuconf.api.base import version_parts
from gpuconf.api.gpu_model import GpuModel


class TegraSoc(NamedTuple):
    chip_id: int
    """What /sys/devices/soc0/soc_id holds (decimal)."""
    name: str
    """The SoC's kernel name (tegra234)."""
    family: str
    """The module generation, as people say it (Orin, Xavier)."""
    gpu_name: str
    """The integrated GPU's name: NVML's where the SoC has NVML (Orin), else CUDA's (Xavier)."""
    compute_capability: str
    l4t_majors: tuple[int, ...]
    """The Jetson Linux major releases that support it (35: JetPack 5, 36: JetPack 6)."""


SOCS = (
    TegraSoc(0x23, "tegra234", "Orin", "Orin (nvgpu)", "8.7", (35, 36)),
    TegraSoc(0x19, "tegra194", "Xavier", "Xavier", "7.2", (35,)),
)

JETPACK_L4T = {
    "5.1.2": "35.4.1",
    "6.0": "36.3.0",
    "6.1": "36.4.0",
    "6.2": "36.4.3",
    "6.2.1": "36.4.4",
}
"""JetPack release → the L4T release it installs (what /etc/nv_tegra_release shows)."""


def soc_of(model: GpuModel) -> TegraSoc | None:
    """The SoC an integrated model belongs to, by its compute capability (one per generation)."""
    if not model.integrated:
        return None
    return next((s for s in SOCS if s.compute_capability == model.compute_capability), None)


def soc_by_chip_id(chip_id: int) -> TegraSoc | None:
    return next((s for s in SOCS if s.chip_id == chip_id), None)


def jetpack_for_l4t_major(major: int) -> list[str]:
    return [jp for jp, l4t in JETPACK_L4T.items() if version_parts(l4t)[0] == major]
