"""Write host config files so that a crash never leaves a half-written file behind."""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

BACKUP_SUFFIX = ".gpuconf.bak"
NEW_FILE_MODE = 0o644


def read_optional(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None


def backup_path(path: Path) -> Path:
    return path.with_name(path.name + BACKUP_SUFFIX)


def back_up_once(path: Path) -> Path | None:
    """Copy ``path`` to its backup unless a backup exists: the first original is the one to keep."""
    backup = backup_path(path)
    if backup.exists() or not path.exists():
        return None
    write_atomically(backup, path.read_bytes(), like=path)
    return backup


def write_atomically(path: Path, data: bytes, like: Path | None = None) -> None:
    """Replace ``path`` with ``data``, keeping the mode and owner of ``like`` (or ``path``)."""
    template = like if like is not None else path
    try:
        stat: os.stat_result | None = template.stat()
    except FileNotFoundError:
        stat = None
    path.parent.mkdir(parents=True, exist_ok=True)
    descriptor, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
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


def _owner(path: str) -> tuple[int, int]:
    stat = os.stat(path)
    return (stat.st_uid, stat.st_gid)


def _fsync_directory(directory: Path) -> None:
    descriptor = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)
