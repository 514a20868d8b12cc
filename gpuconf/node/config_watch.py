"""Read the node config, and notice when it changes (a ConfigMap update swaps a symlink)."""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError

from gpuconf.api.node_config import NodeConfig
from gpuconf.api.shape_errors import diagnostics_from
from gpuconf.formats.located_yaml import LoadFailed, parse_text


class ConfigInvalid(Exception):
    """The file is not a valid node config; the message lists every problem, one per line."""


@dataclass(frozen=True)
class ConfigVersion:
    config: NodeConfig
    digest: str


def parse_config(text: str, display: str) -> NodeConfig:
    try:
        located = parse_text(text, display)
    except LoadFailed as failed:
        raise ConfigInvalid(failed.diagnostic.as_text()) from None
    try:
        config = NodeConfig.model_validate(located.data)
    except ValidationError as error:
        lines = sorted(d.as_text() for d in diagnostics_from(error, located, NodeConfig))
        raise ConfigInvalid("\n".join(lines)) from None
    sockets = [resource.socket_name() for resource in config.resources]
    repeated = sorted({s for s in sockets if sockets.count(s) > 1})
    if repeated:
        raise ConfigInvalid(
            f"{display}: resources: more than one resource would use socket {', '.join(repeated)} "
            "(hint: give every resource a distinct name)"
        )
    return config


def read_config(path: Path) -> ConfigVersion:
    try:
        data = path.read_bytes()
        text = data.decode("utf-8")
    except OSError as error:
        raise ConfigInvalid(f"{path}: cannot read the node config: {error.strerror}") from None
    except UnicodeDecodeError:
        raise ConfigInvalid(f"{path}: the node config is not UTF-8 text") from None
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
            return ConfigInvalid(f"{self.path}: the node config is not UTF-8 text")
        except ConfigInvalid as invalid:
            return invalid
