"""Write a host plan: first originals kept, every file replaced atomically; and undo it."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from gpuconf.api.runtime_files import BACKUP_DIR
from gpuconf.errors import UserError
from gpuconf.node.atomic_files import remove, write_atomically
from gpuconf.node.runtimes.changes import FileChange
from gpuconf.node.runtimes.host import Host
from gpuconf.node.runtimes.host_files import (
    back_up_once,
    forget_original,
    original_of,
    read_optional,
)


def write_changes(host: Host, changes: Iterable[FileChange]) -> list[str]:
    """Write every changed file; returns the host paths whose first original was just kept."""
    backup_dir = host.path(BACKUP_DIR)
    kept = []
    for change in changes:
        if not change.changed:
            continue
        try:
            if back_up_once(backup_dir, change.host_path, change.old):
                kept.append(change.host_path)
            write_atomically(change.path, change.new)
        except OSError as error:
            raise UserError(
                f"cannot write {change.host_path}: {error.strerror or error}; "
                "the host's file is unchanged"
            ) from None
    return kept


@dataclass(frozen=True)
class Reverted:
    put_back: list[str]
    """Host paths whose first original is back."""
    left: list[str]
    """Host paths changed on the host since setup wrote them: left as they are, originals kept."""


def revert(host: Host, changes: Iterable[FileChange]) -> Reverted:
    """Put back the first originals of the files setup wrote, and forget them. A file that is
    no longer what setup wrote was changed by someone else since: writing the original over it
    would lose that change, so it stays."""
    backup_dir = host.path(BACKUP_DIR)
    put_back, left = [], []
    for change in changes:
        known, original = original_of(backup_dir, change.host_path)
        if not known:
            continue
        path = host.path(change.host_path)
        now = read_optional(path)
        if now not in (change.new, original):
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
