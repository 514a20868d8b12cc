"""`gpuconf node driver-uncordon`: beside the driver container, wait until the declared driver
is validated (its startup probe writes the driver-ready marker with the version nvidia-smi
answered on every GPU; a marker naming another version, left by an older pod, is waited past)
and setup has readied the runtime for it (setup-ready), then label the node
`gpuconf.dev/driver-version=<that version>`, `gpuconf.dev/driver-upgrade=ready` and lift the
cordon driver-drain made."""

from __future__ import annotations

import argparse
import logging
import os
from pathlib import Path

from gpuconf.errors import UserError
from gpuconf.node.wait_until import wait_until

log = logging.getLogger(__name__)


def validated_version(marker: Path) -> str:
    versions = {line.strip() for line in marker.read_text(encoding="utf-8").splitlines()}
    versions.discard("")
    if len(versions) != 1:
        found = ", ".join(sorted(versions)) or "none"
        raise UserError(f"{marker}: expected the one driver version of every GPU, found {found}")
    return versions.pop()


class DeclaredDriverReady:
    """Both markers there, the driver's naming the declared version; logs each other version
    it sees once."""

    def __init__(self, driver_ready: Path, setup_ready: Path, version: str) -> None:
        self.driver_ready, self.setup_ready, self.version = driver_ready, setup_ready, version
        self.seen: set[str] = set()

    def __call__(self) -> bool:
        if not self.setup_ready.exists():
            return False
        try:
            found = validated_version(self.driver_ready)
        except (FileNotFoundError, UserError):
            return False
        if found != self.version and found not in self.seen:
            self.seen.add(found)
            log.info("%s names driver %s; waiting for %s", self.driver_ready, found, self.version)
        return found == self.version


def run(options: argparse.Namespace) -> int:
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    ready = DeclaredDriverReady(
        Path(options.driver_ready), Path(options.setup_ready), options.version
    )
    if not ready():
        log.info(
            "waiting for %s to name driver %s, and for %s",
            ready.driver_ready, ready.version, ready.setup_ready,
        )  # fmt: skip
    if not wait_until(ready, options.interval):
        return 1
    version = options.version
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
