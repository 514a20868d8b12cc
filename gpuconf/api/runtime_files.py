"""The host files `gpuconf node setup` owns or edits, and the markers the node's pods share.

Both halves read this: the compiler mounts these paths and explains per pool what setup will
write; `gpuconf node setup` writes them. How each engine merges its files is the node's
business (gpuconf.node.runtimes); this module only names them.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from gpuconf.api.node_config import RuntimeSettings
from gpuconf.api.node_facts import DeviceListStrategy

RUNTIME_NAME = "nvidia"

DOCKER_DAEMON_JSON = "/etc/docker/daemon.json"
CONTAINERD_CONFIG = "/etc/containerd/config.toml"
CONTAINERD_DROPIN_DIR = "/etc/containerd/conf.d"
CONTAINERD_DROPIN = f"{CONTAINERD_DROPIN_DIR}/99-nvidia.toml"
CONTAINERD_DROPIN_GLOB = f"{CONTAINERD_DROPIN_DIR}/*.toml"
K3S_TEMPLATE_DIR = "/var/lib/rancher/k3s/agent/etc/containerd"
K3S_TEMPLATE_V2 = f"{K3S_TEMPLATE_DIR}/config.toml.tmpl"
K3S_TEMPLATE_V3 = f"{K3S_TEMPLATE_DIR}/config-v3.toml.tmpl"
K3S_AGENT_CONFIG_DROPIN = "/etc/rancher/k3s/config.yaml.d/90-gpuconf-nvidia.yaml"
CRIO_CONFIG = "/etc/crio/crio.conf"
CRIO_DROPIN_DIR = "/etc/crio/crio.conf.d"
CRIO_DROPIN = f"{CRIO_DROPIN_DIR}/99-nvidia.conf"
TOOLKIT_CONFIG = "/etc/nvidia-container-runtime/config.toml"
CDI_SPEC = "/var/run/cdi/nvidia.json"

# Ready markers under /run (tmpfs): gone after a reboot, when nothing is configured yet.
SETUP_MARKER_DIR = "/run/gpuconf"
SETUP_READY_MARKER = f"{SETUP_MARKER_DIR}/setup-ready"
# Written before the engine's files, removed once the engine was reloaded: a setup run that
# wrote them but failed to reload (or was killed) leaves it for the next run to reload.
RELOAD_OWED_MARKER = f"{SETUP_MARKER_DIR}/reload-owed"
DRIVER_VALIDATIONS_DIR = "/run/nvidia/validations"
DRIVER_READY_MARKER = f"{DRIVER_VALIDATIONS_DIR}/driver-ready"
# The kernel module publishes this as soon as a host driver is loaded.
HOST_DRIVER_LOADED = "/proc/driver/nvidia/version"
# Where setup keeps the first original of every host file it changed.
BACKUP_DIR = "/var/lib/gpuconf/backup"


class HostFile(NamedTuple):
    path: str
    purpose: str


def engine_files(settings: RuntimeSettings) -> list[HostFile]:
    """The engine config files setup may write or edit, in the order it writes them."""
    if settings.engine == "docker":
        return [HostFile(DOCKER_DAEMON_JSON, "merged: nvidia runtime (path, runtimeArgs)")]
    if settings.engine == "containerd":
        return [
            HostFile(
                CONTAINERD_DROPIN,
                "drop-in in the main file's config version; for version 2 it carries the "
                "host's whole CRI plugin table (containerd 1.x replaces whole plugin tables)",
            ),
            HostFile(CONTAINERD_CONFIG, f"only `imports` gains {CONTAINERD_DROPIN_GLOB!r}"),
        ]
    if settings.engine == "cri-o":
        return [HostFile(CRIO_DROPIN, "drop-in: [crio.runtime.runtimes.nvidia]")]
    files = [
        HostFile(
            f"{K3S_TEMPLATE_V2} or {K3S_TEMPLATE_V3}",
            "only when the host's k3s release would not find the runtime itself: merged into the "
            "template k3s reads, after its base template",
        )
    ]
    if settings.set_as_default:
        files.append(HostFile(K3S_AGENT_CONFIG_DROPIN, "default-runtime: nvidia"))
    return files


TOOLKIT_ENVVAR_WHEN_UNPRIVILEGED = "accept-nvidia-visible-devices-envvar-when-unprivileged"
TOOLKIT_AS_VOLUME_MOUNTS = "accept-nvidia-visible-devices-as-volume-mounts"
TOOLKIT_CLI = "nvidia-container-cli"


def toolkit_settings(strategy: DeviceListStrategy, driver_root: str) -> dict[str, Any]:
    """The TOOLKIT_CONFIG keys setup sets, as nested tables; empty when the defaults are right.

    With volume-mounts or CDI an unprivileged pod must not get GPUs by setting
    NVIDIA_VISIBLE_DEVICES itself (past the plugin and the quotas); a containerised driver's
    files are under its root."""
    wanted: dict[str, Any] = {}
    if strategy in ("volume-mounts", "cdi"):
        wanted[TOOLKIT_ENVVAR_WHEN_UNPRIVILEGED] = False
    if strategy == "volume-mounts":
        wanted[TOOLKIT_AS_VOLUME_MOUNTS] = True
    if driver_root != "/":
        wanted[TOOLKIT_CLI] = {"root": driver_root}
    return wanted


def restart_summary(settings: RuntimeSettings) -> str:
    """How setup reloads the engine after changing its config, as the pool asks."""
    if settings.restart != "auto":
        return {
            "signal": "SIGHUP to the engine's daemon",
            "systemd": "systemctl restart of the engine's unit",
            "none": "none: restart the engine yourself",
        }[settings.restart]
    return {
        "docker": "SIGHUP to dockerd (reloads runtimes; containers keep running)",
        "containerd": "systemctl restart containerd (no reload exists; shims keep containers)",
        "cri-o": "SIGHUP to crio from 1.26 (reloads runtimes), else systemctl restart crio",
        "k3s": "none: k3s reads its config at start; restart k3s yourself",
    }[settings.engine]


def default_restart(engine: str) -> str:
    """What `restart: auto` does for an engine whose version setup cannot read."""
    return {"docker": "signal", "containerd": "systemd", "cri-o": "systemd", "k3s": "none"}[engine]
