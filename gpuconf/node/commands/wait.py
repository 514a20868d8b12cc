"""`gpuconf node wait FILE…`: an init container's wait until setup (or the driver) is ready."""

from __future__ import annotations

import argparse
from pathlib import Path

from gpuconf.errors import UserError
from gpuconf.node.wait_until import wait_until


def run(options: argparse.Namespace) -> int:
    files = [Path(path) for path in options.files]
    absent = [str(p) for p in files if not p.exists()]
    if absent:  # what `kubectl logs` shows while a pod sits in Init
        print("waiting for: " + ", ".join(absent), flush=True)
    try:
        if not wait_until(
            lambda: all(p.exists() for p in files), options.interval, options.timeout
        ):
            return 1
    except TimeoutError:
        missing = ", ".join(str(p) for p in files if not p.exists())
        raise UserError(f"still missing after {options.timeout}s: {missing}") from None
    print("ready: " + ", ".join(str(p) for p in files), flush=True)
    return 0
