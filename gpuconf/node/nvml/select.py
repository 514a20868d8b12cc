"""Pick the NVML implementation the command line names."""

from __future__ import annotations

from pathlib import Path

from gpuconf.node.nvml.api import Nvml

FAKE_PREFIX = "fake:"


def open_nvml(spec: str) -> Nvml:
    """``real`` for the GPUs of this machine, ``fake:FILE`` for an inventory played from FILE."""
    if spec == "real":
        from gpuconf.node.nvml.pynvml_backend import PynvmlNvml

        return PynvmlNvml()
    if spec.startswith(FAKE_PREFIX) and spec != FAKE_PREFIX:
        from gpuconf.node.nvml.fake import FakeNvml

        return FakeNvml(Path(spec.removeprefix(FAKE_PREFIX)))
    raise ValueError(
        f"unknown NVML source {spec!r}: use 'real' or 'fake:FILE' (a fake inventory YAML file)"
    )
