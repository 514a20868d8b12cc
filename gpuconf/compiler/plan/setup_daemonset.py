"""The setup DaemonSet per pool (`gpuconf node setup`), and the wait every GPU consumer does for it.

Setup is the node installer: it runs under runc (never the nvidia runtime it installs, so a
fresh node can start it), before anything that needs a GPU, in every mode.
"""

from __future__ import annotations

import json
from typing import Any

from gpuconf.api.cluster import Cluster, NodePool
from gpuconf.api.node_config import NODE_CONFIG_FILE, NodeConfig
from gpuconf.api.runtime_files import SETUP_MARKER_DIR, SETUP_READY_MARKER
from gpuconf.compiler.plan.artifact import Artifact
from gpuconf.compiler.plan.config_hash import annotate_template
from gpuconf.compiler.plan.meta import WAVE_DRIVER
from gpuconf.compiler.plan.pod import (
    daemonset,
    hardened,
    host_path,
    on_pool_nodes,
    pool_daemonset,
    pool_source,
)
from gpuconf.compiler.plan.pool_node_config import config_map_name

HOST_ROOT = "/host"
CONFIG_DIR = "/etc/gpuconf"
SETUP_NAME = "gpuconf-setup"
WAIT_CONTAINER = "wait-for-setup"
# The wait only reads a marker file: it needs no user at all.
NOBODY = 65534
SETUP_MARKER_VOLUME = "gpuconf-setup-marker"


def setup_command() -> list[str]:
    """`gpuconf node setup …` exactly as the container runs it (tests parse it with the node CLI)."""
    return [
        "gpuconf", "node", "setup",
        "--config", f"{CONFIG_DIR}/{NODE_CONFIG_FILE}",
        "--root", HOST_ROOT,
    ]  # fmt: skip


def wait_command() -> list[str]:
    return ["gpuconf", "node", "wait", SETUP_READY_MARKER]


def wait_for_setup(cluster: Cluster) -> dict[str, Any]:
    """The init container a GPU consumer starts with: it holds the pod until setup is ready."""
    return {
        "name": WAIT_CONTAINER,
        "image": cluster.spec.images.gpuconf,
        "command": wait_command(),
        "securityContext": hardened(user=NOBODY),
        "resources": {
            "requests": {"cpu": "5m", "memory": "16Mi"},
            "limits": {"cpu": "50m", "memory": "64Mi"},
        },
        "volumeMounts": [
            {"name": SETUP_MARKER_VOLUME, "mountPath": SETUP_MARKER_DIR, "readOnly": True}
        ],
    }


def setup_marker_volume() -> dict[str, Any]:
    return host_path(SETUP_MARKER_VOLUME, SETUP_MARKER_DIR, "DirectoryOrCreate")


def _what_setup_configures(config: NodeConfig) -> dict[str, str]:
    """A change here rolls the setup pods (a ConfigMap edit alone would not)."""
    settings = {
        "runtime": config.runtime.as_data(exclude_none=False),
        "devices": config.device_list_strategy,
    }
    return {"runtime-settings": json.dumps(settings, sort_keys=True)}


def setup_daemonset(cluster: Cluster, pool: NodePool, config: NodeConfig) -> Artifact:
    config_mount = {"name": "node-config", "mountPath": CONFIG_DIR, "readOnly": True}
    pod: dict[str, Any] = {
        "automountServiceAccountToken": False,
        **on_pool_nodes(pool),
        # Signalling dockerd/containerd/crio needs the host's PIDs.
        "hostPID": True,
        # Setup must run where the nvidia runtime is not needed: no runtimeClassName, ever.
        "containers": [
            {
                "name": SETUP_NAME,
                "image": cluster.spec.images.gpuconf,
                "command": setup_command(),
                # A node installer: it rewrites root-owned engine config under the host's /,
                # runs the host's systemctl and nvidia-ctk through chroot, and signals the
                # engine's daemon. That is what privileged means; nothing less can do it.
                "securityContext": {"privileged": True},
                "resources": {
                    "requests": {"cpu": "10m", "memory": "32Mi"},
                    "limits": {"cpu": "200m", "memory": "128Mi"},
                },
                "volumeMounts": [
                    config_mount,
                    {
                        "name": "host-root",
                        "mountPath": HOST_ROOT,
                        "mountPropagation": "HostToContainer",
                    },
                ],
            }
        ],
        # The ready marker must go before the pod does: give setup time to revert and reload.
        "terminationGracePeriodSeconds": 60,
        "volumes": [
            {"name": "node-config", "configMap": {"name": config_map_name(pool)}},
            host_path("host-root", "/", "Directory"),
        ],
    }
    workload = pool_daemonset(cluster, pool, SETUP_NAME, "node-setup", WAVE_DRIVER, pod)
    annotate_template(workload, _what_setup_configures(config))
    return daemonset(
        f"pools/{pool.name}/daemonset-gpuconf-setup.yaml",
        "setup-daemonset.yaml.j2",
        workload,
        pool_source(cluster, pool),
    )
