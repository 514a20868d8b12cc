"""`gpuconf node apply-runtime`: install the pool's nvidia runtime config on the host.

Runs in an init container with the host's / mounted at --root. Existing files are merged,
not replaced; the first original is kept as a backup; a second run changes nothing.
"""

from __future__ import annotations

import argparse
import difflib
import json
import re
import sys
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from gpuconf.api import runtime_files
from gpuconf.api.node_config import RuntimeSettings
from gpuconf.errors import UserError
from gpuconf.node.config_watch import read_config
from gpuconf.node.runtimes.containerd_imports import (
    ImportsEditError,
    ensure_imported,
    new_main_config,
)
from gpuconf.node.runtimes.host_files import (
    BACKUP_SUFFIX,
    back_up_once,
    read_optional,
    write_atomically,
)

RESTART_HINTS = {
    "docker": "restart docker (systemctl restart docker)",
    "containerd": "restart containerd (systemctl restart containerd)",
    "k3s": "restart k3s (systemctl restart k3s, or k3s-agent on agent nodes)",
}


class HostFileError(UserError):
    """An existing host file cannot be merged with; nothing was written."""


@dataclass(frozen=True)
class PlannedFile:
    host_path: str
    """Where the file is on the host, e.g. /etc/docker/daemon.json."""
    path: Path
    """Where this process reaches it (under --root)."""
    old: bytes | None
    new: bytes

    @property
    def changed(self) -> bool:
        return self.old != self.new


def run(options: argparse.Namespace) -> int:
    settings = read_config(Path(options.config)).config.runtime
    planned = plan(settings, Path(options.root))
    changed = [file for file in planned if file.changed]
    if not changed:
        print(f"{settings.engine}: {_paths(planned)} already configured; nothing changed")
        return 0
    if options.dry_run:
        sys.stdout.writelines(unified_diff(file) for file in changed)
        hint = RESTART_HINTS[settings.engine]
        print(f"dry run: nothing written; would change {_paths(changed)} and {hint}")
        return 0
    try:
        for file in changed:
            if back_up_once(file.path) is not None:
                print(f"backed up {file.host_path} to {file.host_path}{BACKUP_SUFFIX}")
            write_atomically(file.path, file.new)
    except OSError as error:
        raise UserError(f"cannot write {error.filename}: {error.strerror}") from None
    print(f"{settings.engine}: {_paths(changed)} changed; {RESTART_HINTS[settings.engine]}")
    return 0


def plan(settings: RuntimeSettings, root: Path) -> list[PlannedFile]:
    """What each runtime file should hold; raises HostFileError before anything is written."""
    if settings.engine == "docker":
        return [_docker_daemon(settings, root)]
    if settings.engine == "containerd":
        dropin = runtime_files.containerd_dropin(settings).encode()
        return [
            _file(root, runtime_files.CONTAINERD_DROPIN, dropin),
            _containerd_main(settings, root),
        ]
    template = runtime_files.k3s_config_template(settings).encode()
    files = [_file(root, runtime_files.K3S_TEMPLATE, template)]
    agent_config = runtime_files.k3s_agent_config(settings)
    if agent_config is not None:
        files.append(_file(root, runtime_files.K3S_AGENT_CONFIG_DROPIN, agent_config.encode()))
    return files


def unified_diff(file: PlannedFile) -> str:
    old = (file.old or b"").decode("utf-8", "replace").splitlines(keepends=True)
    new = file.new.decode().splitlines(keepends=True)
    before = "/dev/null" if file.old is None else file.host_path
    return "".join(difflib.unified_diff(old, new, before, f"{file.host_path} (gpuconf)"))


def _on_host(root: Path, host_path: str) -> Path:
    return root / host_path.lstrip("/")


def _file(root: Path, host_path: str, new: bytes) -> PlannedFile:
    path = _on_host(root, host_path)
    return PlannedFile(host_path, path, _read(path), new)


def _read(path: Path) -> bytes | None:
    try:
        return read_optional(path)
    except OSError as error:
        raise HostFileError(f"cannot read {path}: {error.strerror}") from None


def _docker_daemon(settings: RuntimeSettings, root: Path) -> PlannedFile:
    path = _on_host(root, runtime_files.DOCKER_DAEMON_JSON)
    old = _read(path)
    try:
        existing = {} if old is None or not old.strip() else json.loads(old)
    except UnicodeDecodeError:
        raise HostFileError(f"{path}: not UTF-8 text; left untouched") from None
    except json.JSONDecodeError as error:
        raise HostFileError(
            f"{path}:{error.lineno}:{error.colno}: not valid JSON ({error.msg}); left untouched"
        ) from None
    if not isinstance(existing, dict):
        raise HostFileError(
            f"{path}: holds a JSON {type(existing).__name__}, not an object; left untouched"
        )
    merged = runtime_files.merge_docker_daemon(existing, settings)
    new = (
        old
        if merged == existing and old is not None
        else runtime_files.docker_daemon_text(merged).encode()
    )
    return PlannedFile(runtime_files.DOCKER_DAEMON_JSON, path, old, new)


def _containerd_main(settings: RuntimeSettings, root: Path) -> PlannedFile:
    path = _on_host(root, runtime_files.CONTAINERD_CONFIG)
    old = _read(path)
    glob = runtime_files.CONTAINERD_DROPIN_GLOB
    if old is None:
        new_text = new_main_config(settings.containerd_config_version, glob)
    else:
        try:
            new_text = ensure_imported(old.decode(), glob)
        except UnicodeDecodeError:
            raise HostFileError(f"{path}: not UTF-8 text; left untouched") from None
        except tomllib.TOMLDecodeError as error:
            raise HostFileError(
                f"{path}{_toml_position(error)}: not valid TOML ({error}); left untouched"
            ) from None
        except ImportsEditError as error:
            raise HostFileError(
                f"{path}: {error}; left untouched (add {glob!r} to imports by hand)"
            ) from None
    return PlannedFile(runtime_files.CONTAINERD_CONFIG, path, old, new_text.encode())


def _toml_position(error: tomllib.TOMLDecodeError) -> str:
    found = re.search(r"\(at line (\d+), column (\d+)\)", str(error))
    return f":{found[1]}:{found[2]}" if found else ""


def _paths(files: Sequence[PlannedFile]) -> str:
    return ", ".join(file.host_path for file in files)
