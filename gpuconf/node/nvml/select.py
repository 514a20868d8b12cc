"""Pick the GPU discovery the command line names."""

from __future__ import annotations

from pathlib import Path

from gpuconf.node.nvml.api import Nvml
from gpuconf.node.nvml.tegra import TegraGpu, is_tegra

FAKE_PREFIX = "fake:"
TEGRA = "tegra"
TEGRA_PREFIX = "tegra:"
SOURCES = "'real', 'tegra', 'tegra:DIR', 'auto' or 'fake:FILE'"


def open_nvml(spec: str, host_root: Path = Path("/")) -> Nvml:
    """``real``: NVML; ``tegra``: a Jetson's integrated GPU, from the SoC's files under
    `host_root` (``tegra:DIR``: under DIR); ``auto``: tegra where `host_root` shows Tegra files,
    else NVML; ``fake:FILE``: an inventory played from FILE."""
    if spec == "auto":
        spec = TEGRA if is_tegra(host_root) else "real"
    if spec == "real":
        from gpuconf.node.nvml.pynvml_backend import PynvmlNvml

        return PynvmlNvml()
    if spec == TEGRA:
        return TegraGpu(host_root)
    if spec.startswith(TEGRA_PREFIX) and spec != TEGRA_PREFIX:
        return TegraGpu(Path(spec.removeprefix(TEGRA_PREFIX)))
    if spec.startswith(FAKE_PREFIX) and spec != FAKE_PREFIX:
        from gpuconf.node.nvml.fake import FakeNvml

        return FakeNvml(Path(spec.removeprefix(FAKE_PREFIX)))
    raise ValueError(f"unknown NVML source {spec!r}: use {SOURCES}")
