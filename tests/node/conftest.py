"""Fixtures for the node runtime's API calls (an HTTPS stand-in for its Node and the view of a
pod that reaches it) and for the tests on a real NVIDIA GPU (marker gpu)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from in_pod import as_pod
from node_api import NODE, TOKEN, NodeApi, make_pki

from gpuconf.node.nvml.api import GpuInfo, NvmlError
from gpuconf.node.nvml.pynvml_backend import PynvmlNvml


@pytest.fixture(scope="session")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_pki(tmp_path_factory.mktemp("pki"))


@pytest.fixture
def node_api(pki: Path) -> Iterator[NodeApi]:
    with NodeApi(NODE, pki) as server:
        yield server


@pytest.fixture
def pod(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, node_api: NodeApi, pki: Path) -> Path:
    """In a pod whose API server is the stand-in; the service account folder."""
    ca = (pki / "ca.crt").read_bytes()
    return as_pod(monkeypatch, tmp_path / "serviceaccount", "127.0.0.1", node_api.port, TOKEN, ca)


@pytest.fixture
def real_nvml() -> PynvmlNvml:
    """NVML on this machine's driver (the test closes it); skips where there is none."""
    try:
        return PynvmlNvml()
    except NvmlError as error:
        pytest.skip(f"no NVIDIA driver here: {error}")


@pytest.fixture
def real_gpus(real_nvml: PynvmlNvml) -> tuple[GpuInfo, ...]:
    """This machine's GPUs as the node runtime discovers them; skips where there are none."""
    try:
        gpus = tuple(real_nvml.devices())
    finally:
        real_nvml.close()
    if not gpus:
        pytest.skip("NVML found no GPU here")
    return gpus


@pytest.fixture
def raw_pynvml(real_gpus: tuple[GpuInfo, ...]) -> Iterator[Any]:
    """nvidia-ml-py itself, initialised, for the read-only queries the runtime does not make."""
    import pynvml

    pynvml.nvmlInit()
    try:
        yield pynvml
    finally:
        pynvml.nvmlShutdown()
