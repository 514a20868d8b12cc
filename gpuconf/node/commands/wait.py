"""`gpuconf node wait FILE…`: an init container's wait until setup (or the driver) is ready."""

from __future__ import annotations

import argparse
import signal
import threading
import time
from pathlib import Path

from gpuconf.errors import UserError


def run(options: argparse.Namespace) -> int:
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    files = [Path(path) for path in options.files]
    deadline = time.monotonic() + options.timeout if options.timeout else None
    while not all(path.exists() for path in files):
        if deadline is not None and time.monotonic() > deadline:
            missing = ", ".join(str(p) for p in files if not p.exists())
            raise UserError(f"still missing after {options.timeout}s: {missing}")
        if stop.wait(options.interval):
            return 1
    print("ready: " + ", ".join(str(p) for p in files), flush=True)
    return 0
