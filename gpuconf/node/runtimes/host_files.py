"""Write host config files so that a crash never leaves a half-written file behind.

The first original of every file setup changes is kept under the backup directory (outside
the engines' config directories: CRI-O reads every file in crio.conf.d, whatever its name).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

NEW_FILE_MODE = 0o644
ABSENT_SUFFIX = ".gpuconf-absent"


def read_optional(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None


def backup_of(backup_dir: Path, host_path: str) -> Path:
    return backup_dir / host_path.lstrip("/")


def back_up_once(backup_dir: Path, host_path: str, original: bytes | None) -> bool:
    """Keep ``original`` (None: the file did not exist) unless a first original is already kept."""
    backup = backup_of(backup_dir, host_path)
    absent = backup.with_name(backup.name + ABSENT_SUFFIX)
    if backup.exists() or absent.exists():
        return False
    if original is None:
        write_atomically(absent, b"")
    else:
        write_atomically(backup, original)
    return True


def original_of(backup_dir: Path, host_path: str) -> tuple[bool, bytes | None]:
    """(known, bytes): the kept first original; bytes None when the file did not exist."""
    backup = backup_of(backup_dir, host_path)
    if backup.with_name(backup.name + ABSENT_SUFFIX).exists():
        return True, None
    kept = read_optional(backup)
    return (kept is not None, kept)


def write_atomically(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data``, keeping its mode and owner when it exists."""
    try:
        stat: os.stat_result | None = path.stat()
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


def remove(path: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        path.unlink()
        _fsync_directory(path.parent)


@contextlib.contextmanager
def exclusive_lock(path: Path) -> Iterator[None]:
    """Hold an exclusive lock on ``path``: a second setup on the same host waits for the first."""
    path.parent.mkdir(parents=True, exist_ok=True)
    descriptor = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX)
        yield
    finally:
        os.close(descriptor)


def _owner(path: str) -> tuple[int, int]:
    stat = os.stat(path)
    return (stat.st_uid, stat.st_gid)


def _fsync_directory(directory: Path) -> None:
    descriptor = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)
