"""Polling until something is ready, the way an init container or a sidecar waits: stopped early
by SIGTERM (the kubelet ending the container), optionally bounded by a timeout."""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Callable


def wait_until(ready: Callable[[], bool], interval: float, timeout: float = 0) -> bool:
    """True once `ready()` is; False when SIGTERM came first. After `timeout` s (0: never)
    raises TimeoutError."""
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    deadline = time.monotonic() + timeout if timeout else None
    while not ready():
        if deadline is not None and time.monotonic() > deadline:
            raise TimeoutError(f"not ready after {timeout}s")
        if stop.wait(interval):
            return False
    return True
