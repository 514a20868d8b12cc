"""A Jetson module end to end: the node config the compiler renders for clusters/jetson-edge.yaml,
served by the real `gpuconf node run` process over real sockets, its iGPU found without NVML."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from builders import compile_example, jetson_root, load_yaml
from kubelet_stub import KubeletStub
from plugin_process import NodeProcess, allocate, serving

from gpuconf.formats.yaml_writer import dump as yaml_text
from gpuconf.node.nvml.tegra import IGPU_ID

RESOURCE = "gpuconf.dev/orin-vision"


def _rendered_node_config(pool: str) -> dict[str, Any]:
    tree = compile_example("jetson-edge").rendered["jetson-edge"]
    config_map = load_yaml(tree[f"pools/{pool}/configmap-node-config.yaml"])
    config: dict[str, Any] = load_yaml(config_map["data"]["node-config.yaml"])
    return config


class JetsonProcess(NodeProcess):
    """`gpuconf node run --nvml tegra:DIR`, DIR holding a Jetson module's files."""

    def __init__(self, files: Path, config: dict[str, Any]) -> None:
        super().__init__(files, config, gpus=[])
        self.root = jetson_root(files / "root")

    def command(self) -> list[str]:
        command = super().command()
        command[command.index("--nvml") + 1] = f"tegra:{self.root}"
        return command


@pytest.fixture(scope="module")
def node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[JetsonProcess, KubeletStub]]:
    config = _rendered_node_config("agx-orin") | {"metricsPort": 0}
    process = JetsonProcess(tmp_path_factory.mktemp("jetson"), config)
    with serving(process) as kubelet:
        yield process, kubelet


def test_the_igpu_registers_and_is_listed_as_time_sliced_replicas(
    node: tuple[JetsonProcess, KubeletStub],
) -> None:
    _, kubelet = node
    assert kubelet.wait_registered(RESOURCE, timeout=10).version == "v1beta1"
    devices = kubelet.wait_devices(RESOURCE, timeout=10)
    assert sorted(devices) == [f"{IGPU_ID}::{n}" for n in range(4)]
    assert {health for health, _ in devices.values()} == {"Healthy"}


def test_a_container_is_given_the_igpu_as_the_toolkit_csv_mode_names_it(
    node: tuple[JetsonProcess, KubeletStub],
) -> None:
    process, kubelet = node
    kubelet.wait_devices(RESOURCE, timeout=10)
    with process.plugin(RESOURCE) as plugin:
        response = allocate(plugin, [f"{IGPU_ID}::2"])
    (container,) = response.container_responses
    # agx-orin runs Docker, so its default device list is volume-mounts: the ID is the mount's name.
    assert container.envs["NVIDIA_VISIBLE_DEVICES"] == "/var/run/nvidia-container-devices"
    assert [m.container_path for m in container.mounts] == ["/var/run/nvidia-container-devices/0"]


def test_the_declared_module_matches_what_the_soc_shows(
    node: tuple[JetsonProcess, KubeletStub],
) -> None:
    process, kubelet = node
    kubelet.wait_devices(RESOURCE, timeout=10)
    assert process.metric("gpuconf_node_devices", resource=RESOURCE, health="Healthy") == 4
    assert process.metric("gpuconf_node_inventory_drift") == 0


def _check_orin_nx(tmp_path: Path, root: Path) -> subprocess.CompletedProcess[str]:
    """`gpuconf node check` on node edge-nx-1 of the example, the module's files under `root`."""
    config = tmp_path / "node-config.yaml"
    config.write_text(yaml_text(_rendered_node_config("orin-nx")), encoding="utf-8")
    return subprocess.run(
        [sys.executable, "-m", "gpuconf", "node", "check", "--config", str(config),
         "--node-name", "edge-nx-1", "--nvml", f"tegra:{root}"],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip


def test_node_check_on_a_jetson_reports_the_l4t_release_and_no_drift(tmp_path: Path) -> None:
    result = _check_orin_nx(tmp_path, jetson_root(tmp_path / "root", mem_total_kb=15_950_000))
    assert result.returncode == 0, result.stderr
    assert "driver L4T 36.4.3" in result.stdout
    assert "Orin (nvgpu)" in result.stdout
    assert "inventory matches: 1 GPU as declared" in result.stdout


def test_node_check_on_a_xavier_declared_as_orin_reports_drift(tmp_path: Path) -> None:
    result = _check_orin_nx(tmp_path, jetson_root(tmp_path / "root", chip_id=0x19))
    assert result.returncode == 1
    assert "GPU 0: expected model Orin (nvgpu), found Xavier" in result.stdout
