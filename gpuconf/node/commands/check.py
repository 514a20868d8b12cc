"""`gpuconf node check`: does this node have the GPUs its node config declares?"""

from __future__ import annotations

import argparse
import json
import urllib.request
from collections.abc import Sequence
from pathlib import Path

from gpuconf.api.node_config import ExpectedGpu, NodeConfig
from gpuconf.api.runtime_files import RELOAD_OWED_MARKER
from gpuconf.errors import ExitCode, UsageError, UserError
from gpuconf.node.config_watch import read_config
from gpuconf.node.drift import DriftReport, compare
from gpuconf.node.node_annotation import annotate_node
from gpuconf.node.nvml.api import GpuInfo, NvmlError
from gpuconf.node.nvml.select import open_nvml
from gpuconf.node.reclass import PendingChange
from gpuconf.node.runtimes.host import Host
from gpuconf.node.runtimes.host_plan import plan_host

MISSING = "-"
STATUS_TIMEOUT = 2.0


def run(options: argparse.Namespace) -> int:
    config = read_config(Path(options.config)).config
    host = (
        Host(Path(options.root), chroot=options.host_commands == "chroot")
        if options.root is not None
        else None
    )
    expected = config.inventory.for_node(options.node_name)
    try:
        nvml = open_nvml(options.nvml)
    except ValueError as error:
        raise UsageError(f"--nvml: {error}") from None
    except NvmlError as error:
        raise UserError(f"cannot open NVML: {error}") from None
    try:
        discovered = list(nvml.devices())
        driver = nvml.driver_version()
    except NvmlError as error:
        raise UserError(f"GPU discovery failed: {error}") from None
    finally:
        nvml.close()
    report = compare(expected, discovered)
    print(f"node {options.node_name} (pool {config.pool}, driver {driver})")
    print(inventory_table(expected, discovered, report))
    print(report.as_text(), end="")
    url = options.runtime_url or f"http://127.0.0.1:{config.metrics_port}"
    print(pending_text(url), end="")
    runtime_ok = True
    if host is not None:
        runtime_ok, text = host_runtime_text(config, host)
        print(text)
    annotate_node(options.node_name, report)
    return ExitCode.INVALID_INPUT if report.drifted or not runtime_ok else ExitCode.OK


def host_runtime_text(config: NodeConfig, host: Host) -> tuple[bool, str]:
    """Whether the host's engine runs GPU pods as setup leaves it, and what to say about it:
    what setup would refuse (a file loading after its own that undoes it), or change."""
    engine = config.runtime.engine
    try:
        changed = plan_host(config, host).changed
    except UserError as refused:
        return False, f"host runtime ({engine}): setup would refuse: {refused}"
    if changed:
        files = ", ".join(change.host_path for change in changed)
        return False, (
            f"host runtime ({engine}): not configured: setup would change {files} "
            "(`gpuconf node setup --dry-run` shows how)"
        )
    if host.path(RELOAD_OWED_MARKER).exists():
        return False, (
            f"host runtime ({engine}): configured, not loaded: setup wrote its config but "
            f"did not get to reload {engine} (the next setup run does; {RELOAD_OWED_MARKER})"
        )
    return True, f"host runtime ({engine}): configured as setup leaves it"


def pending_text(runtime_url: str) -> str:
    """The running node runtime's deferred GPU changes, or why they are unknown."""
    try:
        with urllib.request.urlopen(f"{runtime_url}/status", timeout=STATUS_TIMEOUT) as reply:
            status = json.loads(reply.read())
        pending = [PendingChange.from_dict(c) for c in status["pendingChanges"]]
    except (OSError, ValueError, KeyError, TypeError) as error:
        return f"pending GPU changes: unknown (no node runtime at {runtime_url}: {error})\n"
    if not pending:
        return "pending GPU changes: none\n"
    lines = [f"pending GPU changes: {len(pending)}"]
    lines += [f"  {change.as_text()}" for change in pending]
    return "\n".join(lines) + "\n"


def inventory_table(
    expected: Sequence[ExpectedGpu], discovered: Sequence[GpuInfo], report: DriftReport
) -> str:
    declared = {gpu.index: gpu for gpu in expected}
    found = {gpu.index: gpu for gpu in discovered}
    rows = [("GPU", "declared", "discovered", "uuid", "MIG", "state")]
    for index in sorted(declared.keys() | found.keys()):
        want, have = declared.get(index), found.get(index)
        rows.append(
            (
                str(index),
                want.nvml_name if want else MISSING,
                have.name if have else MISSING,
                have.uuid if have else (want.uuid or MISSING) if want else MISSING,
                _mig_state(have),
                "ok" if index in report.matching_indices else "DRIFT",
            )
        )
    widths = [max(len(row[column]) for row in rows) for column in range(len(rows[0]))]
    lines = ["  ".join(map(str.ljust, row, widths)).rstrip() for row in rows]
    return "\n".join(lines) + "\n"


def _mig_state(gpu: GpuInfo | None) -> str:
    if gpu is None:
        return MISSING
    if not gpu.mig_enabled:
        return "off"
    return f"on ({len(gpu.mig_devices)} devices)"
