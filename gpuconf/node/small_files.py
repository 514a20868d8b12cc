"""Read a small state file that a process of ours wrote, refusing anything else found at its
path: a FIFO (reading it would wait for a writer that never comes), a device such as /dev/zero
(it never ends), a symbolic link, a folder or a file larger than any we write."""

from __future__ import annotations

import errno
import json
import os
import stat
from pathlib import Path

STATE_FILE_LIMIT = 1 << 20
"""Bytes: a state file of ours is a few kilobytes; a larger one was not written by us."""


class NotAStateFile(OSError):
    """Something other than a small regular file is at the path."""


def read_json_state(path: Path) -> object | None:
    """A JSON state file of ours: None when there is none; NotAStateFile (an OSError) when
    it cannot be read or is not JSON, nested past what json reads included."""
    try:
        return json.loads(read_small_file(path).decode("utf-8"))  # type: ignore[no-any-return]
    except FileNotFoundError:
        return None
    except NotAStateFile:
        raise
    except (OSError, ValueError, RecursionError) as error:  # RecursionError: nesting too deep
        raise NotAStateFile(f"{path}: {error}") from None


def read_small_file(path: Path, limit: int = STATE_FILE_LIMIT) -> bytes:
    """The bytes of the regular file at ``path``, at most ``limit`` of them: FileNotFoundError
    when nothing is there, NotAStateFile when something else is, OSError when it cannot be
    read. Opening never waits (O_NONBLOCK: a FIFO with no writer opens at once) and never
    follows a link (O_NOFOLLOW)."""
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as error:
        if error.errno == errno.ELOOP:
            raise NotAStateFile(f"{path}: a symbolic link, not a regular file") from None
        raise
    try:
        mode = os.fstat(descriptor).st_mode
        if not stat.S_ISREG(mode):
            raise NotAStateFile(f"{path}: {_kind(mode)}, not a regular file")
        chunks: list[bytes] = []
        size = 0
        while chunk := os.read(descriptor, limit + 1 - size):
            chunks.append(chunk)
            size += len(chunk)
            if size > limit:
                raise NotAStateFile(f"{path}: larger than {limit} bytes")
        return b"".join(chunks)
    finally:
        os.close(descriptor)


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "an unknown kind of file"
