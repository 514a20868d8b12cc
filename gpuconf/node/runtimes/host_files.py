"""Host config files: each first original kept, one setup at a time (written with
`node/atomic_files.py`, so a crash never leaves half a file behind).

The first original of every file setup changes is kept under the backup directory (outside
the engines' config directories: CRI-O reads every file in crio.conf.d, whatever its name).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
from collections.abc import Iterator
from pathlib import Path

from gpuconf.node.atomic_files import remove, write_atomically

ABSENT_SUFFIX = ".gpuconf-absent"
WRITTEN_SUFFIX = ".gpuconf-written"
"""Beside a kept original: the sha256 of the bytes setup last wrote to the file, one a line."""


def read_optional(path: Path, limit: int = -1) -> bytes | None:
    """The file's bytes, None when it does not exist; with ``limit``, at most limit + 1 bytes
    (so a caller sees a file over the limit without holding it)."""
    try:
        with path.open("rb") as handle:
            return handle.read(limit + 1 if limit >= 0 else -1)
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


def digest(data: bytes | None) -> str | None:
    return None if data is None else hashlib.sha256(data).hexdigest()


def record_written(
    backup_dir: Path, host_path: str, data: bytes, before: bytes | None = None
) -> None:
    """Remember what setup writes to the file, so a later run tells its own bytes from a host
    edit. Recorded before the file is written, with ``before`` (the bytes it holds now, known
    to be setup's or the original) beside it: killed between this and the file's write, either
    bytes are setup's; once the file is written, a second call records ``data`` alone."""
    backup = backup_of(backup_dir, host_path)
    digests = [digest(data), *([] if before is None else [digest(before)])]
    text = "".join(f"{line}\n" for line in dict.fromkeys(digests))
    write_atomically(backup.with_name(backup.name + WRITTEN_SUFFIX), text.encode())


def written_digests(backup_dir: Path, host_path: str) -> frozenset[str] | None:
    """The sha256 of each of the bytes setup may last have written to the file (two while a
    write was under way); None when not recorded (an older setup)."""
    backup = backup_of(backup_dir, host_path)
    recorded = read_optional(backup.with_name(backup.name + WRITTEN_SUFFIX))
    return None if recorded is None else frozenset(recorded.decode().split())


def forget_original(backup_dir: Path, host_path: str) -> None:
    """Drop the kept original once it is back in place, or once the host changed the file: the
    next setup keeps the file as it is then (with whatever was changed on the host meanwhile),
    not this older copy."""
    backup = backup_of(backup_dir, host_path)
    remove(backup)
    remove(backup.with_name(backup.name + ABSENT_SUFFIX))
    remove(backup.with_name(backup.name + WRITTEN_SUFFIX))


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
