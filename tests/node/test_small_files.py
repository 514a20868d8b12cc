"""A state file is read only when it is a small regular file (gpuconf/node/small_files.py):
whatever else is at its path is refused at once, never waited on nor read without end."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import pytest

from gpuconf.node.small_files import STATE_FILE_LIMIT, NotAStateFile, read_small_file


def _link_to_a_file(path: Path) -> None:
    (path.parent / "elsewhere.json").write_text("{}")
    path.symlink_to(path.parent / "elsewhere.json")


NOT_STATE_FILES: dict[str, Callable[[Path], None]] = {
    "a FIFO": os.mkfifo,
    "a link to /dev/zero": lambda path: path.symlink_to("/dev/zero"),
    "a link to a file": _link_to_a_file,
    "a folder": lambda path: path.mkdir(),
    "a file over the limit": lambda path: path.write_bytes(b" " * (STATE_FILE_LIMIT + 1)),
}
"""Things that may be found at a state file's path, none of which a process of ours wrote."""


T = TypeVar("T")


def returning(call: Callable[[], T]) -> T:
    """``call()``, failing the test instead of hanging it when it waits (a FIFO's open)."""
    outcome: list[T] = []
    raised: list[BaseException] = []

    def run() -> None:
        try:
            outcome.append(call())
        except BaseException as error:  # re-raised below, on the test's thread
            raised.append(error)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(30)
    assert not thread.is_alive(), "it waits: reading what is at the path never returns"
    if raised:
        raise raised[0]
    return outcome[0]


@pytest.mark.parametrize("make", list(NOT_STATE_FILES.values()), ids=list(NOT_STATE_FILES))
def test_anything_but_a_small_regular_file_is_refused_at_once(
    tmp_path: Path, make: Callable[[Path], None]
) -> None:
    path = tmp_path / "state.json"
    make(path)
    with pytest.raises(NotAStateFile, match=r"state\.json: "):
        returning(lambda: read_small_file(path))


def test_a_regular_file_up_to_the_limit_is_read_whole(tmp_path: Path) -> None:
    path = tmp_path / "state.json"
    path.write_bytes(b"x" * 10)
    assert read_small_file(path, limit=10) == b"x" * 10
    with pytest.raises(NotAStateFile, match="larger than 9 bytes"):
        read_small_file(path, limit=9)


def test_nothing_at_the_path_is_file_not_found(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        read_small_file(tmp_path / "state.json")


def test_refusals_say_what_was_found(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "folder").mkdir()
    (tmp_path / "link").symlink_to("/dev/zero")
    messages = []
    for name in ("fifo", "folder", "link"):
        with pytest.raises(NotAStateFile) as refused:
            read_small_file(tmp_path / name)
        messages.append(str(refused.value).removeprefix(f"{tmp_path}/"))
    assert messages == [
        "fifo: a FIFO, not a regular file",
        "folder: a folder, not a regular file",
        "link: a symbolic link, not a regular file",
    ]
