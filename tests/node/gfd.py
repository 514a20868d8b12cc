"""NVIDIA's GPU Feature Discovery, the real program, to compare gpuconf's node labels with: the
binary $GPUCONF_GFD_BIN names, or one built from gfd_go/ where this machine has Go.

gfd_go/ pins NVIDIA/k8s-device-plugin v0.19.0 (commit 1ae8e5f0). The project cites v0.20.0
(commit 1b826acc), which the Go module proxy refuses ("403 This module version is not
available"); between the two tags the labellers (internal/lm) changed only getArchFamily, which
gained compute major 13 ("rubin"): `git diff v0.19.0 v0.20.0 -- internal/lm`."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import yaml
from go_program import prebuilt_or_built

ENV = "GPUCONF_GFD_BIN"
SOURCE = Path(__file__).with_name("gfd_go")
PACKAGE = "github.com/NVIDIA/k8s-device-plugin/cmd/gpu-feature-discovery"
NAME = "gpu-feature-discovery"


def gfd_binary() -> Path:
    return prebuilt_or_built(ENV, "GPU Feature Discovery binary", SOURCE, NAME, NAME, PACKAGE)


def gfd_labels(
    binary: Path, folder: Path, config: dict[str, Any], machine_type_file: str
) -> dict[str, str]:
    """One labelling by GFD on this machine's GPUs (flags: cmd/gpu-feature-discovery/main.go),
    written to a file as the NFD local source reads it: key=value lines."""
    config_file = folder / "gfd-config.yaml"
    config_file.write_text(yaml.safe_dump(config))
    output = folder / "gfd-labels"
    result = subprocess.run(
        [
            str(binary),
            "--oneshot",
            "--no-timestamp",
            "--use-node-feature-api=false",
            "--device-discovery-strategy=nvml",  # as `gpuconf node labels --nvml real`
            f"--output-file={output}",
            f"--config-file={config_file}",
            f"--machine-type-file={machine_type_file}",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, f"{binary} exited {result.returncode}:\n{result.stderr}"
    return dict(line.split("=", 1) for line in output.read_text().splitlines() if line)
