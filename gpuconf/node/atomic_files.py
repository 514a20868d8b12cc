"""Replace a file so that a crash leaves the old one or the new one, never half of either
(unsynced: a crash of the writer; synced, the default: of the machine too)."""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path
from typing import NamedTuple

NEW_FILE_MODE = 0o644


class Staged(NamedTuple):
    """New bytes waiting, synced unless ``synced`` is False and with their target's mode and
    owner, in a temporary beside the target: `put_in_place` renames them over it (a rename
    needs no room on the disk) and, when ``synced``, syncs the folder."""

    target: Path
    temporary: Path
    synced: bool = True


def write_atomically(path: Path, data: bytes, *, sync: bool = True) -> None:
    """Replace ``path`` with ``data``, keeping its mode and owner when it exists. Unsynced
    (``sync=False``), any process still reads the old bytes or the new ones, also after the
    writer dies mid-write (the kernel keeps what was written), but after a machine crash the
    file may be old or empty: for state that a reboot voids anyway, written where a sync would
    cost a caller waiting on it."""
    staged = stage(path, data, sync=sync)
    try:
        put_in_place(staged)
    except BaseException:
        discard(staged)
        raise


def stage(path: Path, data: bytes, *, sync: bool = True) -> Staged:
    """``data`` written (and synced) to a temporary that can replace ``path``, with the mode
    and owner ``path`` has (a new file's when it does not exist); nothing left behind if it
    fails."""
    try:
        stat: os.stat_result | None = path.stat()
    except FileNotFoundError:
        stat = None
    path.parent.mkdir(parents=True, exist_ok=True)
    descriptor, temporary = tempfile.mkstemp(
        prefix=_temporary_prefix(path), dir=_staging(path.parent)
    )
    try:
        _fill(descriptor, data, sync)
        os.chmod(temporary, (stat.st_mode & 0o7777) if stat is not None else NEW_FILE_MODE)
        if stat is not None and (stat.st_uid, stat.st_gid) != _owner(temporary):
            os.chown(temporary, stat.st_uid, stat.st_gid)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
        raise
    return Staged(path, Path(temporary), sync)


def put_in_place(staged: Staged) -> None:
    os.replace(staged.temporary, staged.target)
    if staged.synced:
        _fsync_directory(staged.target.parent)


def discard(staged: Staged) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.unlink(staged.temporary)


def remove_temporaries(path: Path) -> None:
    """Remove the temporaries a writer of ``path`` that died mid-write left (call where no
    other process writes ``path``)."""
    with contextlib.suppress(OSError):
        for leftover in _staging(path.parent).glob(f"{_temporary_prefix(path)}*"):
            with contextlib.suppress(OSError):
                leftover.unlink()


def _temporary_prefix(path: Path) -> str:
    return f".{path.name}."


def _fill(descriptor: int, data: bytes, sync: bool) -> None:
    """Write ``data`` to the open temporary and, if asked, sync it; closes the descriptor."""
    with os.fdopen(descriptor, "wb") as stream:
        stream.write(data)
        if sync:
            stream.flush()
            os.fsync(stream.fileno())


def _staging(folder: Path) -> Path:
    """Where the new bytes wait for their rename. A `.d` folder is read whole by the program it
    configures (CRI-O reads every file under crio.conf.d, dotfiles too), so a temporary that a
    crash left there could stop it starting: those wait in the folder above, when it is on the
    same filesystem (a rename cannot cross one)."""
    above = folder.parent
    if folder.name.endswith(".d") and above.stat().st_dev == folder.stat().st_dev:
        return above
    return folder


def remove(path: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        path.unlink()
        _fsync_directory(path.parent)


def _owner(path: str) -> tuple[int, int]:
    stat = os.stat(path)
    return (stat.st_uid, stat.st_gid)


def _fsync_directory(directory: Path) -> None:
    descriptor = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)
