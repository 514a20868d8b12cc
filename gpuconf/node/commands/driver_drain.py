"""`gpuconf node driver-drain`: the driver installer's first init container. Before NVIDIA's
k8s-driver-manager unloads the old driver, cordon the node and evict every pod holding its GPUs
(node/driver_upgrade.py); give up after --timeout, leaving the node cordoned and labelled
`gpuconf.dev/driver-upgrade=eviction-timed-out`, and exit 1 so the kubelet tries again.

It drains only where the driver manager goes on to unload (cmd/driver-manager/main.go v0.12.0,
uninstallDriver): not on a host-installed driver (the driver manager stops there, before any
unload, and nothing would lift a cordon), not where no driver is loaded, and not where the loaded
driver's DRIVER_CONFIG_DIGEST equals the one to install (shouldSkipUninstall)."""

from __future__ import annotations

import argparse
import logging
import subprocess
from pathlib import Path

from gpuconf.api.driver_upgrade import EVICTION_TIMED_OUT, INSTALLING, UPGRADE_LABEL
from gpuconf.errors import UserError
from gpuconf.node.config_watch import read_config

log = logging.getLogger(__name__)

HOST_NVIDIA_SMI_SECONDS = 60


def driver_loaded(sys_module: Path) -> bool:
    """What k8s-driver-manager asks too (isDriverLoaded): with no nvidia module loaded (a fresh
    node, a reboot) nothing holds the driver and it evicts nothing either."""
    return (sys_module / "nvidia" / "refcnt").exists()


def host_driver_version(host_root: Path) -> str | None:
    """The version a driver installed on the host answers with, asked as k8s-driver-manager's
    isHostDriver asks (`chroot /host nvidia-smi --query-gpu=driver_version
    --format=csv,noheader`: a host driver where it succeeds with output); None otherwise."""
    command = ["chroot", str(host_root), "nvidia-smi"]
    command += ["--query-gpu=driver_version", "--format=csv,noheader"]
    try:
        answer = subprocess.run(
            command, capture_output=True, text=True, timeout=HOST_NVIDIA_SMI_SECONDS, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    if answer.returncode != 0 or not answer.stdout:
        return None
    return ", ".join(sorted({line.strip() for line in answer.stdout.splitlines()} - {""}))


def driver_unchanged(sys_module: Path, state_file: Path, digest: str) -> bool:
    """The driver manager's shouldSkipUninstall (without FORCE_REINSTALL, which gpuconf never
    sets): a driver is loaded and the state file the driver container wrote when it loaded it
    holds the digest of the driver to install (both trimmed, as readStoredDigest does)."""
    if not digest or not driver_loaded(sys_module):
        return False
    try:
        stored = state_file.read_text(encoding="utf-8").strip()
    except OSError:
        return False
    return stored == digest.strip()


def run(options: argparse.Namespace) -> int:
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    config = read_config(Path(options.config)).config
    node = options.node_name
    host_driver = host_driver_version(Path(options.host_root))
    if host_driver is not None:
        print(
            f"node {node}: the host's own driver {host_driver} is installed; not draining (the "
            "driver manager labels the node nvidia.com/gpu.deploy.driver=pre-installed and "
            "stops here, before unloading anything)",
            flush=True,
        )
        return 0
    sys_module = Path(options.sys_module)
    if driver_unchanged(sys_module, Path(options.state_file), options.config_digest):
        print(
            f"node {node}: the loaded driver is the one to install (driver config digest "
            f"{options.config_digest}); it stays loaded, nothing to evict",
            flush=True,
        )
        return 0
    from gpuconf.node.driver_upgrade import NodeUpgrade, claim_reader, in_cluster_client

    with in_cluster_client() as client:
        upgrade = NodeUpgrade(client, node)
        if not driver_loaded(sys_module):
            log.info("no NVIDIA driver loaded on %s: nothing to evict", node)
            upgrade.set_state(INSTALLING)
            return 0
        resources = {resource.name for resource in config.resources}
        blocked = upgrade.drain(resources, claim_reader(client), options.timeout, options.interval)
    if blocked:
        pods = "; ".join(f"{b.pod} ({b.reason})" for b in blocked)
        raise UserError(
            f"gave up after {options.timeout:g}s with {len(blocked)} GPU pod(s) on node "
            f"{node}: {pods}; the node stays cordoned and labelled "
            f"{UPGRADE_LABEL}={EVICTION_TIMED_OUT}, the old driver loaded, and the kubelet "
            "runs this container again"
        )
    print(f"node {node}: no pod holds a GPU; the driver may change", flush=True)
    return 0
