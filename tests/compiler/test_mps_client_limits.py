"""MPS replicas against the limit of the daemon that serves them: CUDA's own 48 clients from
Volta for gpuconf's node runtime, NVIDIA's plugin's 48 only from compute capability 7.5."""

from __future__ import annotations

from typing import Any

from builders import DECLARED_H20, cluster, errors, pool, valid


def _mps(model: str, replicas: int, plugin: str = "gpuconf", **spec: Any) -> dict[str, Any]:
    mps = {"name": "shared", "select": {"model": model}}
    mps["sharing"] = {"strategy": "mps", "replicas": replicas}
    return cluster([pool("v", model, 2)], [mps], plugin=plugin, **spec)


def test_gpuconf_serves_more_than_16_clients_on_a_volta_gpu() -> None:
    valid(_mps("Tesla-V100-SXM2-32GB", 20))


def test_no_daemon_serves_more_than_48_clients() -> None:
    [error] = errors(_mps("Tesla-V100-SXM2-32GB", 49))
    assert error.message == "must be at most 48, not 49"


def test_nvidia_s_daemon_serves_16_clients_below_compute_capability_7_5() -> None:
    [error] = errors(_mps("Tesla-V100-SXM2-32GB", 20, plugin="nvidia"))
    assert "NVIDIA's MPS control daemon accepts" in error.message
    assert "at most 16" in error.message


def test_a_gpu_older_than_volta_serves_16_clients() -> None:
    pascal = {
        **DECLARED_H20,
        "name": "P100-Lab",
        "computeCapability": "6.0",
        "architecture": "Pascal",
    }
    [error] = errors(_mps("P100-Lab", 20, gpuModels=[pascal]))
    assert "compute capability 6.0: at most 16" in error.message
