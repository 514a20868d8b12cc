"""`gpuconf node driver-uncordon`: beside the driver container, wait until the new driver is
validated (its startup probe writes the driver-ready marker with the version nvidia-smi answered
on every GPU) and setup has readied the runtime for it (setup-ready), then label the node
`gpuconf.dev/driver-version=<that version>`, `gpuconf.dev/driver-upgrade=ready` and lift the
cordon driver-drain made."""

from __future__ import annotations

import argparse
import os
import signal
import threading
from pathlib import Path

from gpuconf.errors import UserError


def validated_version(marker: Path) -> str:
    versions = {line.strip() for line in marker.read_text(encoding="utf-8").splitlines()}
    versions.discard("")
    if len(versions) != 1:
        found = ", ".join(sorted(versions)) or "none"
        raise UserError(f"{marker}: expected the one driver version of every GPU, found {found}")
    return versions.pop()


def run(options: argparse.Namespace) -> int:
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    markers = [Path(options.driver_ready), Path(options.setup_ready)]
    while not all(marker.exists() for marker in markers):
        if stop.wait(options.interval):
            return 1
    version = validated_version(markers[0])
    from gpuconf.node.driver_upgrade import NodeUpgrade, in_cluster_client

    with in_cluster_client() as client:
        NodeUpgrade(client, options.node_name).finish(version)
    print(f"node {options.node_name}: driver {version} ready; uncordoned", flush=True)
    if options.done_file:
        Path(options.done_file).write_text(version + "\n", encoding="utf-8")
    if options.then_sleep:
        # Stay up (the pod's other containers run on) with nothing of Python resident.
        os.execvp("sleep", ["sleep", "infinity"])
    return 0
