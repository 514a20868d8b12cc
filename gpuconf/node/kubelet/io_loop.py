"""The one asyncio loop the runtime's gRPC traffic runs on, in a thread of its own.

Everything else in the node runtime is threads; gRPC (grpclib) is asyncio. Servers and calls
are handed to this loop; a thread waits for a call with a timeout of its own, so a kubelet
that never answers holds up only the thread that asked.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


class IoLoop:
    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name="grpc-io", daemon=True)
        self._thread.start()

    def run(self, call: Coroutine[Any, Any, T], timeout: float) -> T:
        """Run ``call`` on the loop; TimeoutError (the call cancelled) past ``timeout``."""
        future = asyncio.run_coroutine_threadsafe(call, self.loop)
        try:
            return future.result(timeout)
        except TimeoutError:
            future.cancel()
            raise

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(timeout=5)
        self.loop.close()


_shared: IoLoop | None = None
_shared_lock = threading.Lock()


def io_loop() -> IoLoop:
    """The process's loop, started on first use (a process serves and calls on one loop)."""
    global _shared
    with _shared_lock:
        if _shared is None:
            _shared = IoLoop()
        return _shared
