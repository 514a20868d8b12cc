"""Write a host plan: first originals kept, every file replaced atomically; and undo it."""

from __future__ import annotations

from collections.abc import Iterable

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


def revert(host: Host, host_paths: Iterable[str]) -> list[str]:
    """Put back the first originals of ``host_paths`` and forget them; returns the paths that
    changed."""
    backup_dir = host.path(BACKUP_DIR)
    reverted = []
    for host_path in host_paths:
        known, original = original_of(backup_dir, host_path)
        if not known:
            continue
        path = host.path(host_path)
        if read_optional(path) != original:
            if original is None:
                remove(path)
            else:
                write_atomically(path, original)
            reverted.append(host_path)
        forget_original(backup_dir, host_path)
    return reverted


def marker_text(config_hash: str, engine: str, reload: str) -> bytes:
    return f"hash: {config_hash}\nengine: {engine}\nreload: {reload}\n".encode()
