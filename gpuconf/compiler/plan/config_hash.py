"""A config hash on a pod template, for consumers that read their config only at start.

A changed hash changes the pod template, so the DaemonSet replaces its pods under its
rollingUpdate budget (maxUnavailable) instead of leaving them on the old config."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gpuconf.formats.sha256 import sha256

CONFIG_HASH_ANNOTATION = "gpuconf.dev/config-sha256"


def config_hash(files: Mapping[str, str]) -> str:
    digest = sha256()
    for name in sorted(files):
        digest.update(f"{name}\0{files[name]}\0".encode())
    return digest.hexdigest()


def annotate_template(daemonset: dict[str, Any], files: Mapping[str, str]) -> dict[str, Any]:
    template = daemonset["spec"]["template"]["metadata"]
    template["annotations"] = {
        **template.get("annotations", {}),
        CONFIG_HASH_ANNOTATION: config_hash(files),
    }
    return daemonset
