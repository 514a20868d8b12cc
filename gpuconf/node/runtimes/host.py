"""The host as setup sees it: its file tree mounted at a root, its commands, its processes.

Paths are host paths ("/etc/containerd/config.toml"); symlinks are followed the way the host
would follow them, so an absolute link target is read under the root, never in this
container, and a link that climbs out of the root is refused by name.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from gpuconf.errors import UserError

MAX_SYMLINKS = 40  # what Linux allows in one lookup (MAXSYMLINKS)
COMMAND_TIMEOUT_SECONDS = 60
HOST_PATH = ("/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin")


class HostPathError(UserError):
    """A host path cannot be resolved inside the host root; nothing was written."""


class HostCommandHung(UserError):
    """A host program did not finish in time; setup stops there, the ready marker unwritten."""


@dataclass(frozen=True)
class Host:
    root: Path
    """Where the host's / is mounted (the DaemonSet mounts it at /host)."""
    chroot: bool = True
    """Run host commands chrooted into root; false runs the host's binary found under root
    (HOST_PATH) directly, in this container's environment."""
    proc: Path = Path("/proc")
    """The host's /proc (the pod shares the host's PID namespace)."""

    def __post_init__(self) -> None:
        if not self.root.is_dir():
            raise HostPathError(
                f"the host root {self.root} is not a folder (--root: where the host's / is "
                "mounted); nothing read, nothing written"
            )

    def path(self, host_path: str) -> Path:
        """Where this process reaches ``host_path``, every symlink on the way resolved in the root."""
        return self.root / resolve_in_root(self.root, host_path).relative_to("/")

    def run(self, argv: list[str]) -> subprocess.CompletedProcess[str] | None:
        """Run a host command; None when the host has no such program. Raises HostCommandHung
        when it does not finish within COMMAND_TIMEOUT_SECONDS."""
        if self._chrooted:
            command = ["chroot", str(self.root), *argv]
        else:
            program = self.program(argv[0])
            if program is None:
                return None
            command = [str(program), *argv[1:]]
        try:
            return subprocess.run(
                command,
                capture_output=True,
                text=True,
                timeout=COMMAND_TIMEOUT_SECONDS,
                check=False,
            )
        except FileNotFoundError:
            return None
        except subprocess.TimeoutExpired:
            # nvidia-ctk, say, waiting on a GPU that fell off the bus: killed, and said so.
            raise HostCommandHung(
                f"`{' '.join(argv)}` on the host did not finish within "
                f"{COMMAND_TIMEOUT_SECONDS} s; it was stopped"
            ) from None

    def program(self, name: str) -> Path | None:
        """The host's ``name`` on the host's usual PATH, as this process reaches it."""
        for folder in HOST_PATH:
            candidate = self.root / folder.lstrip("/") / name
            if candidate.is_file() and os.access(candidate, os.X_OK):
                return candidate
        return None

    @property
    def _chrooted(self) -> bool:
        return self.chroot and self.root.resolve() != Path("/")


def resolve_in_root(root: Path, host_path: str) -> PurePosixPath:
    """The host path ``host_path`` names once its symlinks are followed, as an absolute host path.

    Missing components are fine (the file may be created). Raises HostPathError for a link
    that leads above the root or a loop."""
    pending = list(PurePosixPath(host_path).parts[1:])
    resolved = PurePosixPath("/")
    hops = 0
    while pending:
        part = pending.pop(0)
        if part in ("", "."):
            continue
        if part == "..":
            resolved = resolved.parent
            continue
        candidate = resolved / part
        on_disk = root / candidate.relative_to("/")
        if not on_disk.is_symlink():
            resolved = candidate
            continue
        hops += 1
        if hops > MAX_SYMLINKS:
            raise HostPathError(f"{host_path}: too many levels of symbolic links")
        target = os.readlink(on_disk)
        if _climbs_out(resolved, target):
            raise HostPathError(
                f"{candidate} is a symlink to {target}, outside the host root {root}; "
                "left untouched"
            )
        if target.startswith("/"):
            resolved = PurePosixPath("/")
        pending = list(PurePosixPath(target).parts[1 if target.startswith("/") else 0 :]) + pending
    return resolved


def _climbs_out(directory: PurePosixPath, target: str) -> bool:
    depth = 0 if target.startswith("/") else len(directory.parts) - 1
    for part in PurePosixPath(target).parts:
        if part == "..":
            depth -= 1
            if depth < 0:
                return True
        elif part not in ("/", "."):
            depth += 1
    return False
