"""The container-runtime config that makes ``nvidia`` a runtime: Docker, containerd and k3s.

Pure functions of the pool's RuntimeSettings, shared by the compiler (which renders them
into the GitOps tree) and ``gpuconf node apply-runtime`` (which installs them on the host).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from typing import Any

from gpuconf.api.node_config import RuntimeSettings
from gpuconf.formats import toml_writer

DOCKER_DAEMON_JSON = "/etc/docker/daemon.json"
CONTAINERD_CONFIG = "/etc/containerd/config.toml"
CONTAINERD_DROPIN = "/etc/containerd/conf.d/99-nvidia.toml"
CONTAINERD_DROPIN_GLOB = "/etc/containerd/conf.d/*.toml"
K3S_TEMPLATE = "/var/lib/rancher/k3s/agent/etc/containerd/config.toml.tmpl"
K3S_AGENT_CONFIG_DROPIN = "/etc/rancher/k3s/config.yaml.d/90-gpuconf-nvidia.yaml"
# k3s finds nvidia-container-runtime at these paths itself and declares the `nvidia` runtime
# in its base template.
K3S_DETECTED_BINARIES = frozenset(
    {"/usr/bin/nvidia-container-runtime", "/usr/local/nvidia/toolkit/nvidia-container-runtime"}
)

RUNTIME_NAME = "nvidia"
K3S_BASE_TEMPLATE_LINE = '{{ template "base" . }}'
_CRI_PLUGIN_BY_VERSION = {2: "io.containerd.grpc.v1.cri", 3: "io.containerd.cri.v1.runtime"}


def docker_daemon_fragment(settings: RuntimeSettings) -> dict[str, Any]:
    fragment: dict[str, Any] = {
        "runtimes": {RUNTIME_NAME: {"args": [], "path": settings.binary_path}}
    }
    if settings.set_as_default:
        fragment["default-runtime"] = RUNTIME_NAME
    return fragment


def merge_docker_daemon(existing: Mapping[str, Any], settings: RuntimeSettings) -> dict[str, Any]:
    """``existing`` with the nvidia runtime added; every other key and runtime is kept."""
    merged = copy.deepcopy(dict(existing))
    fragment = docker_daemon_fragment(settings)
    runtimes = merged.get("runtimes")
    merged["runtimes"] = {
        **(runtimes if isinstance(runtimes, dict) else {}),
        **fragment["runtimes"],
    }
    if "default-runtime" in fragment:
        merged["default-runtime"] = fragment["default-runtime"]
    return merged


def docker_daemon_text(daemon: Mapping[str, Any]) -> str:
    return json.dumps(daemon, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def _cri_tables(settings: RuntimeSettings, version: int) -> dict[str, Any]:
    containerd: dict[str, Any] = {
        "runtimes": {
            RUNTIME_NAME: {
                "runtime_type": "io.containerd.runc.v2",
                "options": {"BinaryName": settings.binary_path},
            }
        }
    }
    if settings.set_as_default:
        containerd["default_runtime_name"] = RUNTIME_NAME
    return {"plugins": {_CRI_PLUGIN_BY_VERSION[version]: {"containerd": containerd}}}


def containerd_dropin(settings: RuntimeSettings) -> str:
    """The drop-in for CONTAINERD_DROPIN, in the config version of the host's containerd."""
    version = settings.containerd_config_version
    return toml_writer.dumps({"version": version, **_cri_tables(settings, version)})


def k3s_config_template(settings: RuntimeSettings) -> str:
    """K3S_TEMPLATE: k3s's base config, plus the nvidia runtime only where k3s would not find it.

    The base template already declares the CRI `containerd` table and the runtimes k3s detects;
    declaring either again is a TOML error that stops containerd. So the default runtime goes
    through k3s's own `default-runtime` setting (k3s_agent_config), never this file."""
    text = K3S_BASE_TEMPLATE_LINE + "\n"
    if settings.binary_path in K3S_DETECTED_BINARIES:
        return text
    runtime = {
        "runtime_type": "io.containerd.runc.v2",
        "options": {"BinaryName": settings.binary_path},
    }
    tables = {
        "plugins": {
            _CRI_PLUGIN_BY_VERSION[2]: {"containerd": {"runtimes": {RUNTIME_NAME: runtime}}}
        }
    }
    return text + "\n" + toml_writer.dumps(tables)


def k3s_agent_config(settings: RuntimeSettings) -> str | None:
    """K3S_AGENT_CONFIG_DROPIN: makes nvidia k3s's default runtime; None when it should not be."""
    return f"default-runtime: {RUNTIME_NAME}\n" if settings.set_as_default else None
