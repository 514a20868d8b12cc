"""Read the node config, and notice when it changes (a ConfigMap update swaps a symlink)."""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

from gpuconf.api.core_validator import ValidationError
from gpuconf.api.node_config import NodeConfig
from gpuconf.api.shape_errors import diagnostics_from
from gpuconf.api.validators import validate_node_config
from gpuconf.diagnostics import Diagnostic, InvalidInput
from gpuconf.formats.located_yaml import LoadFailed, parse_text


class ConfigInvalid(InvalidInput):
    """The file is not a valid node config; `diagnostics` says where and why."""


def _whole_file(display: str, message: str, hint: str = "") -> ConfigInvalid:
    return ConfigInvalid([Diagnostic(display, 1, 1, (), message, hint)])


@dataclass(frozen=True)
class ConfigVersion:
    config: NodeConfig
    digest: str


def parse_config(text: str, display: str) -> NodeConfig:
    try:
        located = parse_text(text, display)
    except LoadFailed as failed:
        raise ConfigInvalid([failed.diagnostic]) from None
    try:
        config = validate_node_config(located.data)
    except ValidationError as error:
        raise ConfigInvalid(diagnostics_from(error, located, NodeConfig)) from None
    problems = [
        located.diagnostic(("inventory", *path), message, "render the node config again")
        for path, message in config.inventory.inconsistencies()
    ]
    sockets = [resource.socket_name() for resource in config.resources]
    repeated = sorted({s for s in sockets if sockets.count(s) > 1})
    if repeated:
        problems.append(
            located.diagnostic(
                ("resources",),
                f"more than one resource would use socket {', '.join(repeated)}",
                "give every resource a distinct name",
            )
        )
    if problems:
        raise ConfigInvalid(problems)
    return config


def read_config(path: Path) -> ConfigVersion:
    try:
        data = path.read_bytes()
        text = data.decode("utf-8")
    except OSError as error:
        raise _whole_file(str(path), f"cannot read the node config: {error.strerror}") from None
    except UnicodeDecodeError:
        raise _whole_file(str(path), "the node config is not UTF-8 text") from None
    return ConfigVersion(parse_config(text, str(path)), hashlib.sha256(data).hexdigest())


def _stat_key(path: Path) -> tuple[str, int, int, int] | None:
    try:
        stat = path.stat()
    except OSError:
        return None
    return (os.path.realpath(path), stat.st_ino, stat.st_mtime_ns, stat.st_size)


class ConfigWatch:
    """Yields a config (or its problems) each time the file's content changes."""

    def __init__(self, path: Path, current: ConfigVersion) -> None:
        self.path = path
        self._seen_digest = current.digest
        self._seen_stat = _stat_key(path)

    def poll(self, force: bool = False) -> ConfigVersion | ConfigInvalid | None:
        """A new config, why the changed file is refused, or None when nothing changed."""
        stat = _stat_key(self.path)
        if stat is None or (stat == self._seen_stat and not force):
            return None
        self._seen_stat = stat
        try:
            data = self.path.read_bytes()
        except OSError:
            return None  # mid-swap; the next poll sees the new file
        digest = hashlib.sha256(data).hexdigest()
        if digest == self._seen_digest and not force:
            return None
        self._seen_digest = digest
        try:
            return ConfigVersion(parse_config(data.decode("utf-8"), str(self.path)), digest)
        except UnicodeDecodeError:
            return _whole_file(str(self.path), "the node config is not UTF-8 text")
        except ConfigInvalid as invalid:
            return invalid
