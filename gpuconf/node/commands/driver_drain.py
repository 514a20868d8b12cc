"""`gpuconf node driver-drain`: the driver installer's first init container. Before NVIDIA's
k8s-driver-manager unloads the old driver, cordon the node and evict every pod holding its GPUs
(node/driver_upgrade.py); give up after --timeout, leaving the node cordoned and labelled
`gpuconf.dev/driver-upgrade=eviction-timed-out`, and exit 1 so the kubelet tries again."""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

from gpuconf.api.driver_upgrade import EVICTION_TIMED_OUT, INSTALLING, UPGRADE_LABEL
from gpuconf.errors import UserError
from gpuconf.node.config_watch import read_config

log = logging.getLogger(__name__)


def driver_loaded(sys_module: Path) -> bool:
    """What k8s-driver-manager asks too (isDriverLoaded): with no nvidia module loaded (a fresh
    node, a reboot) nothing holds the driver and it evicts nothing either."""
    return (sys_module / "nvidia" / "refcnt").exists()


def run(options: argparse.Namespace) -> int:
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    config = read_config(Path(options.config)).config
    from gpuconf.node.driver_upgrade import NodeUpgrade, claim_reader, in_cluster_client

    with in_cluster_client() as client:
        upgrade = NodeUpgrade(client, options.node_name)
        if not driver_loaded(Path(options.sys_module)):
            log.info("no NVIDIA driver loaded on %s: nothing to evict", options.node_name)
            upgrade.set_state(INSTALLING)
            return 0
        resources = {resource.name for resource in config.resources}
        blocked = upgrade.drain(resources, claim_reader(client), options.timeout, options.interval)
    if blocked:
        pods = "; ".join(f"{b.pod} ({b.reason})" for b in blocked)
        raise UserError(
            f"gave up after {options.timeout:g}s with {len(blocked)} GPU pod(s) on node "
            f"{options.node_name}: {pods}; the node stays cordoned and labelled "
            f"{UPGRADE_LABEL}={EVICTION_TIMED_OUT}, the old driver loaded, and the kubelet "
            "runs this container again"
        )
    print(f"node {options.node_name}: no pod holds a GPU; the driver may change", flush=True)
    return 0
