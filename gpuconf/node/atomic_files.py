"""Replace a file so that a crash leaves the old one or the new one, never half of either."""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

NEW_FILE_MODE = 0o644


def write_atomically(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data``, keeping its mode and owner when it exists."""
    try:
        stat: os.stat_result | None = path.stat()
    except FileNotFoundError:
        stat = None
    path.parent.mkdir(parents=True, exist_ok=True)
    descriptor, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=_staging(path.parent))
    try:
        with os.fdopen(descriptor, "wb") as stream:
            stream.write(data)
            stream.flush()
            os.fsync(stream.fileno())
        os.chmod(temporary, (stat.st_mode & 0o7777) if stat is not None else NEW_FILE_MODE)
        if stat is not None and (stat.st_uid, stat.st_gid) != _owner(temporary):
            os.chown(temporary, stat.st_uid, stat.st_gid)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
        raise
    _fsync_directory(path.parent)


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
