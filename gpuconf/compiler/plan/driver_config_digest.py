"""DRIVER_CONFIG_DIGEST: what decides the driver a node ends up with, as one digest, set on the
driver container and on k8s-driver-manager as the GPU Operator does (v26.7.0,
controllers/object_controls.go: `extractDriverInstallConfig` then `GetObjectHashIgnoreEmptyKeys`,
set on the `k8s-driver-manager` init container and the driver container).

The driver container (NVIDIA/gpu-driver-container, `_store_driver_digest`) writes it to
/run/nvidia/nvidia-driver.state once its driver is loaded; a later pod whose digest equals the
stored one, with the driver still loaded, keeps that driver: k8s-driver-manager skips the unload
(`shouldSkipUninstall`, cmd/driver-manager/main.go v0.12.0), the driver container installs only
its userspace, and gpuconf's driver-drain neither cordons nor evicts. So a change elsewhere in the
pod (gpuconf's own image in its drain and uncordon containers) rolls the pods but reloads nothing.

Like the Operator's, it covers the driver container's image (repository, version, OS), command,
args, env and mounts, and k8s-driver-manager's image and env; the exact hash differs (sha256 of
canonical JSON here, FNV-32a there): the driver manager and the driver container only compare
it with the stored one."""

from __future__ import annotations

import json
from typing import Any

from gpuconf.api.driver_upgrade import CONFIG_DIGEST_ENV
from gpuconf.formats.sha256 import sha256


def _install_config(container: dict[str, Any]) -> dict[str, Any]:
    fields = ("image", "command", "args", "volumeMounts")
    picked = {key: container[key] for key in fields if container.get(key)}
    env = [e for e in container.get("env") or [] if e["name"] != CONFIG_DIGEST_ENV]
    if env:
        picked["env"] = env
    return picked


def config_digest(driver: dict[str, Any], driver_manager: dict[str, Any]) -> str:
    state = {"driver": _install_config(driver), "driverManager": _install_config(driver_manager)}
    canonical = json.dumps(state, sort_keys=True, separators=(",", ":"))
    return sha256(canonical.encode()).hexdigest()[:16]


def with_digest(container: dict[str, Any], digest: str) -> dict[str, Any]:
    env = [e for e in container.get("env") or [] if e["name"] != CONFIG_DIGEST_ENV]
    return {**container, "env": [*env, {"name": CONFIG_DIGEST_ENV, "value": digest}]}
