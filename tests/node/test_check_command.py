from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest
from builders import run_reader_gone

H100 = "NVIDIA H100 80GB HBM3"

NODE_CONFIG = f"""\
apiVersion: gpuconf.dev/v1alpha1
kind: NodeConfig
cluster: lab
pool: h100
runtime: {{engine: containerd, setAsDefault: false, binaryPath: /usr/bin/nvidia-container-runtime}}
health: {{ignoredXids: [], recoverAfterSeconds: 0}}
inventory:
  default:
    - {{index: 0, model: H100-80GB, nvmlName: {H100}, memoryMiB: 81559}}
    - {{index: 1, model: H100-80GB, nvmlName: {H100}, memoryMiB: 81559}}
  nodes:
    node-b:
      - {{index: 0, model: H100-80GB, nvmlName: {H100}, memoryMiB: 81559, uuid: GPU-b0}}
  common:
    - {{index: 0, model: H100-80GB, nvmlName: {H100}, memoryMiB: 81559}}
    - {{index: 1, model: H100-80GB, nvmlName: {H100}, memoryMiB: 81559}}
  uuids:
    node-c: [GPU-0, GPU-1]
    node-d: [GPU-0, GPU-d1]
"""

FAKE_GPU = '{{index: {index}, uuid: GPU-{index}, name: {name}, memoryMiB: 81559, pciBusId: "0000:1{index}:00.0"}}'


def fake_inventory(tmp_path: Path, *names: str) -> Path:
    path = tmp_path / "fake.yaml"
    gpus = "".join(f"  - {FAKE_GPU.format(index=i, name=n)}\n" for i, n in enumerate(names))
    path.write_text(f'driverVersion: "550.54.15"\ngpus:\n{gpus}')
    return path


def node_config(tmp_path: Path, text: str = NODE_CONFIG) -> Path:
    path = tmp_path / "node-config.yaml"
    path.write_text(text)
    return path


def gpuconf_node(*args: str) -> subprocess.CompletedProcess[str]:
    if importlib.util.find_spec("gpuconf.cli") is not None:
        command = [sys.executable, "-m", "gpuconf", "node", *args]
    else:  # until the top-level command line lands, call the node command line directly
        launcher = "import sys; from gpuconf.node.commands.parser import main; sys.exit(main(sys.argv[1:]))"
        command = [sys.executable, "-c", launcher, *args]
    environment = {"PATH": "/usr/bin:/bin", "PYTHONHASHSEED": "0"}
    return subprocess.run(
        command, capture_output=True, text=True, timeout=120, env=environment, check=False
    )


def check(config: Path, node: str, fake: Path) -> subprocess.CompletedProcess[str]:
    return gpuconf_node(
        "check", "--config", str(config), "--node-name", node, "--nvml", f"fake:{fake}"
    )


def test_matching_node_exits_0_with_a_table(tmp_path: Path) -> None:
    result = check(node_config(tmp_path), "node-a", fake_inventory(tmp_path, H100, H100))
    assert result.returncode == 0, result.stderr
    assert "node node-a (pool h100, driver 550.54.15)" in result.stdout
    assert "GPU  declared" in result.stdout
    assert "inventory matches: 2 GPUs as declared" in result.stdout
    assert result.stderr == ""


def test_drift_exits_1_and_lists_the_problems(tmp_path: Path) -> None:
    result = check(
        node_config(tmp_path), "node-a", fake_inventory(tmp_path, H100, "Tesla T4", H100)
    )
    assert result.returncode == 1
    assert f"GPU 1: expected model {H100}, found Tesla T4" in result.stdout
    assert "GPU 2: found but not declared" in result.stdout
    assert "DRIFT" in result.stdout
    assert "Traceback" not in result.stderr


def test_drift_exits_1_when_the_reader_of_stdout_goes_early(tmp_path: Path) -> None:
    """`gpuconf node check … | head`: the drift was found, whoever stopped reading."""
    fake = fake_inventory(tmp_path, H100, "Tesla T4", H100)
    config = node_config(tmp_path)
    result = run_reader_gone(
        "node", "check", "--config", str(config), "--node-name", "node-a", "--nvml", f"fake:{fake}"
    )
    assert result.returncode == 1, result.stderr
    assert result.stderr == ""


def test_a_node_with_its_own_inventory_is_checked_against_it(tmp_path: Path) -> None:
    result = check(node_config(tmp_path), "node-b", fake_inventory(tmp_path, H100))
    assert result.returncode == 1
    assert "GPU 0: expected uuid GPU-b0, found GPU-0" in result.stdout


def test_a_node_with_the_common_gpus_is_checked_against_its_own_uuids(tmp_path: Path) -> None:
    fake = fake_inventory(tmp_path, H100, H100)
    matching = check(node_config(tmp_path), "node-c", fake)
    assert matching.returncode == 0, matching.stderr
    assert "inventory matches: 2 GPUs as declared" in matching.stdout
    drifted = check(node_config(tmp_path), "node-d", fake)
    assert drifted.returncode == 1
    assert "GPU 1: expected uuid GPU-d1, found GPU-1" in drifted.stdout


def test_bad_config_exits_1_with_a_located_message(tmp_path: Path) -> None:
    config = node_config(tmp_path, NODE_CONFIG.replace("memoryMiB: 81559}", "memoryMiB: lots}", 1))
    result = check(config, "node-a", fake_inventory(tmp_path, H100, H100))
    assert result.returncode == 1
    assert f"{config}:9:" in result.stderr
    assert "inventory.default[0].memoryMiB" in result.stderr
    assert "Traceback" not in result.stderr


def test_bad_fake_inventory_exits_1_without_a_traceback(tmp_path: Path) -> None:
    fake = tmp_path / "fake.yaml"
    fake.write_text("gpus: [{index: zero}]\n")
    result = check(node_config(tmp_path), "node-a", fake)
    assert result.returncode == 1
    assert f"{fake}:1:" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("spec", ["simulated", "fake:"])
def test_unknown_nvml_source_is_a_usage_error(tmp_path: Path, spec: str) -> None:
    result = gpuconf_node(
        "check", "--config", str(node_config(tmp_path)), "--node-name", "n", "--nvml", spec
    )
    assert result.returncode == 2
    assert "use 'real', 'tegra', 'tegra:DIR', 'auto' or 'fake:FILE'" in result.stderr
