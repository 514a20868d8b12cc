"""Docker: the nvidia runtime merged into /etc/docker/daemon.json, every other key kept.

dockerd reads `runtimes.<name>.path` and `runtimeArgs` (an `args` key is silently ignored,
facts/runtimes docker-20.10) and reloads `runtimes`, `default-runtime` and `features` on SIGHUP.
"""

from __future__ import annotations

import copy
import json
import logging
from typing import Any

from gpuconf.api.node_config import RuntimeSettings
from gpuconf.api.runtime_files import DOCKER_DAEMON_JSON, RUNTIME_NAME
from gpuconf.node.runtimes.changes import FileChange, current
from gpuconf.node.runtimes.host import Host, HostPathError
from gpuconf.node.runtimes.versions import Version, engine_version, shown

log = logging.getLogger(__name__)

CDI_FIRST_RELEASE = (25, 0, 0)


def plan(settings: RuntimeSettings, host: Host) -> list[FileChange]:
    path, old = current(host, DOCKER_DAEMON_JSON)
    existing = parse_daemon_json(old)
    binary = engine_version(host, "dockerd") if settings.enable_cdi else None
    merged = merged_daemon(existing, settings, binary)
    new = old if old is not None and merged == existing else daemon_text(merged)
    return [FileChange(DOCKER_DAEMON_JSON, path, old, new)]


def parse_daemon_json(data: bytes | None) -> dict[str, Any]:
    if data is None or not data.strip():
        return {}
    try:
        existing = json.loads(data)
    except UnicodeDecodeError:
        raise HostPathError(f"{DOCKER_DAEMON_JSON}: not UTF-8 text; left untouched") from None
    except json.JSONDecodeError as error:
        raise HostPathError(
            f"{DOCKER_DAEMON_JSON}:{error.lineno}:{error.colno}: not valid JSON "
            f"({error.msg}); left untouched"
        ) from None
    if not isinstance(existing, dict):
        raise HostPathError(
            f"{DOCKER_DAEMON_JSON}: holds a JSON {type(existing).__name__}, not an object; "
            "left untouched"
        )
    return existing


def merged_daemon(
    existing: dict[str, Any], settings: RuntimeSettings, binary: Version | None = None
) -> dict[str, Any]:
    """``existing`` with the nvidia runtime (and CDI) added; every other key and runtime kept."""
    merged = copy.deepcopy(existing)
    runtimes = merged.get("runtimes")
    if runtimes is not None and not isinstance(runtimes, dict):
        raise HostPathError(f"{DOCKER_DAEMON_JSON}: `runtimes` is not an object; left untouched")
    merged["runtimes"] = {
        **(runtimes or {}),
        RUNTIME_NAME: {"path": settings.binary_path, "runtimeArgs": []},
    }
    if settings.set_as_default:
        merged["default-runtime"] = RUNTIME_NAME
    if settings.enable_cdi:
        if binary is not None and binary < CDI_FIRST_RELEASE:
            raise HostPathError(
                f"dockerd {shown(binary)} has no CDI support (it came in 25.0); upgrade Docker "
                "or use the envvar or volume-mounts device list strategy"
            )
        features = merged.get("features")
        merged["features"] = {**(features if isinstance(features, dict) else {}), "cdi": True}
    return merged


def daemon_text(daemon: dict[str, Any]) -> bytes:
    return (json.dumps(daemon, indent=2, sort_keys=True, ensure_ascii=False) + "\n").encode()
