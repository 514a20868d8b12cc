"""The runtime's gRPC loop: a caller's timeout bounds its wait and cancels the call."""

from __future__ import annotations

import asyncio

import pytest

from gpuconf.node.kubelet.io_loop import IoLoop


def test_a_call_past_its_timeout_is_cancelled_and_the_loop_serves_the_next() -> None:
    loop = IoLoop()
    cancelled = asyncio.Event()

    async def hang() -> None:
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            cancelled.set()
            raise

    async def answer() -> int:
        return 42

    with pytest.raises(TimeoutError):
        loop.run(hang(), timeout=0.1)
    assert loop.run(answer(), timeout=5) == 42
    assert loop.run(cancelled.wait(), timeout=5) is True
    loop.close()
