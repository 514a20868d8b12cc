"""What setup would do to one host file: its bytes before and after, and the diff between them."""

from __future__ import annotations

import difflib
import hashlib
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from gpuconf.node.runtimes.host import Host, HostPathError
from gpuconf.node.runtimes.host_files import read_optional


@dataclass(frozen=True)
class FileChange:
    host_path: str
    """The path setup was asked about, as the host names it (e.g. /etc/docker/daemon.json)."""
    path: Path
    """Where this process reaches the file, symlinks resolved inside the host root."""
    old: bytes | None
    new: bytes

    @property
    def changed(self) -> bool:
        return self.old != self.new


MAX_HOST_FILE_BYTES = 2**20
"""The largest host file setup reads. Setup holds a file a few times over (text, parsed
tables, the merged copy, the diff) and its container's limit is 128 MiB: bench/setup.py
measured 60 MiB peak at 1 MiB, 153 MiB at 4 MiB. Real engine configs are a few KiB."""


def current(host: Host, host_path: str) -> tuple[Path, bytes | None]:
    """The file's real location and its bytes (None when it does not exist); a HostPathError,
    with nothing read past the limit, for a file over MAX_HOST_FILE_BYTES."""
    path = host.path(host_path)
    try:
        data = read_optional(path, MAX_HOST_FILE_BYTES)
        if data is not None and len(data) > MAX_HOST_FILE_BYTES:
            raise too_large(host_path, path.stat().st_size)
        return path, data
    except IsADirectoryError:
        raise HostPathError(f"{host_path} is a directory; left untouched") from None
    except OSError as error:
        raise HostPathError(f"cannot read {host_path}: {error.strerror}") from None


def too_large(what: str, size: int) -> HostPathError:
    return HostPathError(
        f"{what} is {size / 2**20:.1f} MiB; setup reads host files up to "
        f"{MAX_HOST_FILE_BYTES // 2**20} MiB (its container's memory limit is 128 MiB): left "
        "untouched; trim it (containerd: registry mirrors belong in config_path's hosts.toml "
        "files)"
    )


def unified_diff(change: FileChange) -> str:
    old = (change.old or b"").decode("utf-8", "replace").splitlines(keepends=True)
    new = change.new.decode("utf-8", "replace").splitlines(keepends=True)
    before = "/dev/null" if change.old is None else change.host_path
    text = "".join(difflib.unified_diff(old, new, before, change.host_path))
    return text if text.endswith("\n") or not text else text + "\n\\ No newline at end of file\n"


def config_hash(changes: Iterable[FileChange]) -> str:
    """One hash over every file setup manages, as they will be: it names the configuration."""
    digest = hashlib.sha256()
    for change in sorted(changes, key=lambda c: c.host_path):
        digest.update(change.host_path.encode() + b"\0")
        digest.update(hashlib.sha256(change.new).digest())
    return "sha256:" + digest.hexdigest()
