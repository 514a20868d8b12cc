"""End to end: the H100 pool's rendered node config against a fake node whose MIG layout drifts."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from builders import compile_example, load_yaml

from gpuconf.formats.yaml_writer import dump

NODE = "h100-node-1"


@pytest.fixture(scope="module")
def node_config_text() -> str:
    tree = compile_example("mig").rendered["mig"]
    config_map = load_yaml(tree["pools/h100/configmap-node-config.yaml"])
    text: str = config_map["data"]["node-config.yaml"]
    return text


def _fake_gpu(index: int, layout: dict[str, int] | None) -> dict[str, Any]:
    gpu: dict[str, Any] = {
        "index": index,
        "uuid": f"GPU-0000000{index}-0000-4000-8000-000000000000",
        "name": "NVIDIA H100 80GB HBM3",
        "memoryMiB": 81559,
        "pciBusId": f"0000:{index + 10}:00.0",
    }
    if layout is not None:
        gpu["migEnabled"] = True
        devices = [p for p, n in sorted(layout.items()) for _ in range(n)]
        gpu["migDevices"] = [
            {
                "uuid": f"MIG-{index}{k:02d}00000-0000-4000-8000-000000000000",
                "profile": profile,
                "gpuInstanceId": k + 1,
                "computeInstanceId": 0,
            }
            for k, profile in enumerate(devices)
        ]
    return gpu


def _check(
    tmp_path: Path, config: str, layouts: list[dict[str, int] | None]
) -> subprocess.CompletedProcess[str]:
    config_path = tmp_path / "node-config.yaml"
    config_path.write_text(config)
    fake = tmp_path / "fake.yaml"
    fake.write_text(
        dump(
            {"driverVersion": "550.54.15", "gpus": [_fake_gpu(i, m) for i, m in enumerate(layouts)]}
        )
    )
    command = [
        sys.executable, "-m", "gpuconf", "node", "check",
        "--config", str(config_path), "--node-name", NODE, "--nvml", f"fake:{fake}",
    ]  # fmt: skip
    return subprocess.run(
        command,
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        env={"PATH": "/usr/bin:/bin", "PYTHONHASHSEED": "0"},
        check=False,
    )


DECLARED: list[dict[str, int] | None] = [
    {"1g.10gb": 7} if index < 4 else {"3g.40gb": 2} for index in range(8)
]


def test_a_node_with_the_declared_mig_layout_passes(tmp_path: Path, node_config_text: str) -> None:
    result = _check(tmp_path, node_config_text, DECLARED)
    assert result.returncode == 0, result.stdout + result.stderr


def test_a_node_whose_mig_layout_differs_is_reported(tmp_path: Path, node_config_text: str) -> None:
    found = list(DECLARED)
    found[0] = None
    found[5] = {"1g.10gb": 3, "3g.40gb": 1}
    result = _check(tmp_path, node_config_text, found)
    assert result.returncode == 1, result.stdout + result.stderr
    report = result.stdout
    assert "MIG is declared (7×1g.10gb) but disabled" in report
    assert "MIG layout differs: declared 2×3g.40gb, found 3×1g.10gb + 1×3g.40gb" in report
