"""Write a host plan: first originals kept, every file replaced atomically; and undo it."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from gpuconf.api.runtime_files import BACKUP_DIR
from gpuconf.errors import UserError
from gpuconf.node.atomic_files import remove, write_atomically
from gpuconf.node.runtimes.changes import FileChange
from gpuconf.node.runtimes.host import Host
from gpuconf.node.runtimes.host_files import (
    back_up_once,
    digest,
    forget_original,
    original_of,
    read_optional,
    record_written,
    written_digests,
)


def write_changes(host: Host, changes: Iterable[FileChange]) -> list[str]:
    """Write every changed file; returns the host paths whose first original was just kept.

    A kept original stands only while the file holds it or what setup last wrote: otherwise
    the host changed the file since (while setup was stopped, or killed before its revert),
    and putting that older copy back would lose the change. It is forgotten: the file as it is
    now becomes the original."""
    backup_dir = host.path(BACKUP_DIR)
    kept = []
    for change in changes:
        try:
            if not _still_ours(backup_dir, change):
                forget_original(backup_dir, change.host_path)
            if not change.changed:
                continue
            if back_up_once(backup_dir, change.host_path, change.old):
                kept.append(change.host_path)
            record_written(backup_dir, change.host_path, change.new, before=change.old)
            write_atomically(change.path, change.new)
            record_written(backup_dir, change.host_path, change.new)
        except OSError as error:
            raise UserError(
                f"cannot write {change.host_path}: {error.strerror or error}; "
                "the host's file is unchanged"
            ) from None
    return kept


def _still_ours(backup_dir: Path, change: FileChange) -> bool:
    """Whether the file holds its kept original or what setup last wrote (True with no original)."""
    known, original = original_of(backup_dir, change.host_path)
    return (
        not known or change.old == original or _is_what_setup_wrote(backup_dir, change, change.old)
    )


def _is_what_setup_wrote(backup_dir: Path, change: FileChange, data: bytes | None) -> bool:
    recorded = written_digests(backup_dir, change.host_path)
    if recorded is None:  # kept by a setup that recorded nothing: this plan's bytes are the guess
        return data == change.new
    return digest(data) in recorded


@dataclass(frozen=True)
class Reverted:
    put_back: list[str]
    """Host paths whose first original is back."""
    left: list[str]
    """Host paths changed on the host since setup wrote them: left as they are, originals kept."""


def revert(host: Host, changes: Iterable[FileChange]) -> Reverted:
    """Put back the first originals of the files setup wrote, and forget them. A file that is
    no longer what setup last wrote (its recorded digest) was changed by someone else since:
    writing the original over it would lose that change, so it stays (the next setup forgets
    that original)."""
    backup_dir = host.path(BACKUP_DIR)
    put_back, left = [], []
    for change in changes:
        known, original = original_of(backup_dir, change.host_path)
        if not known:
            continue
        path = host.path(change.host_path)
        now = read_optional(path)
        if now != original and not _is_what_setup_wrote(backup_dir, change, now):
            left.append(change.host_path)
            continue
        if now != original:
            if original is None:
                remove(path)
            else:
                write_atomically(path, original)
            put_back.append(change.host_path)
        forget_original(backup_dir, change.host_path)
    return Reverted(put_back, left)


def marker_text(config_hash: str, engine: str, reload: str) -> bytes:
    return f"hash: {config_hash}\nengine: {engine}\nreload: {reload}\n".encode()
