"""`gpuconf node labels`: print the labels this node would publish on its Node, publishing nothing."""

from __future__ import annotations

import argparse
from pathlib import Path

from gpuconf.errors import ExitCode, UsageError, UserError
from gpuconf.node.config_watch import read_config
from gpuconf.node.labels import NodeFacts, machine_type, node_labels
from gpuconf.node.nvml.api import NvmlError
from gpuconf.node.nvml.select import open_nvml


def run(options: argparse.Namespace) -> int:
    config = read_config(Path(options.config)).config
    try:
        nvml = open_nvml(options.nvml)
    except ValueError as error:
        raise UsageError(f"--nvml: {error}") from None
    except NvmlError as error:
        raise UserError(f"cannot open NVML: {error}") from None
    try:
        facts = NodeFacts(
            tuple(nvml.devices()),
            nvml.driver_version(),
            nvml.cuda_driver_version(),
            machine_type(Path(options.machine_type_file)),
        )
    except NvmlError as error:
        raise UserError(f"GPU discovery failed: {error}") from None
    finally:
        nvml.close()
    labels = node_labels(config, options.node_name, facts)
    if not labels:
        print(
            f"# no labels: spec.node.labels.owner is {config.labels.owner} for pool {config.pool}"
        )
    for key, value in labels.items():
        print(f"{key}={value}")
    return ExitCode.OK
