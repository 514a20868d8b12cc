"""GPUs awaiting a reset survive a restart (gpuconf/node/reset_state.py); what cannot be read
back is reported as unreadable, never waited on, read without end or raised as a crash."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from test_small_files import NOT_STATE_FILES, returning

from gpuconf.node import reset_state
from gpuconf.node.reset_state import STATE_FILE, StateUnreadable


def test_saved_gpus_are_loaded_back(tmp_path: Path) -> None:
    reset_state.save(tmp_path / STATE_FILE, frozenset({"GPU-2", "GPU-1"}))
    assert reset_state.load(tmp_path / STATE_FILE) == {"GPU-1", "GPU-2"}
    assert reset_state.load(tmp_path / "absent.json") == frozenset()


@pytest.mark.parametrize("make", list(NOT_STATE_FILES.values()), ids=list(NOT_STATE_FILES))
def test_anything_but_a_small_regular_file_is_unreadable_state(
    tmp_path: Path, make: Callable[[Path], None]
) -> None:
    make(tmp_path / STATE_FILE)
    with pytest.raises(StateUnreadable, match=f"{STATE_FILE}: "):
        returning(lambda: reset_state.load(tmp_path / STATE_FILE))


@pytest.mark.parametrize(
    "content",
    [b'{"awaitingReset": ["GPU-1"', b'{"awaitingReset": "GPU-1"}', b"\xff", b"[" * 100_000],
    ids=["cut", "not a list", "not UTF-8", "nested past what json reads"],
)
def test_a_file_not_in_the_format_is_unreadable_state(tmp_path: Path, content: bytes) -> None:
    (tmp_path / STATE_FILE).write_bytes(content)
    with pytest.raises(StateUnreadable):
        reset_state.load(tmp_path / STATE_FILE)
