"""gpuconf's two containers in the driver installer's pod: `gpuconf node driver-drain` (the first
init container: cordon, evict the GPU pods, before NVIDIA's k8s-driver-manager unloads the old
driver; nothing where the driver is the host's or stays as it is, by DRIVER_CONFIG_DIGEST) and `gpuconf node driver-uncordon` (beside the driver: once the new driver is validated
and setup has readied the runtime, label its version and uncordon; its startup probe holds the
pod un-Ready until then, so the rollout moves to the next node only after it)."""

from __future__ import annotations

from typing import Any

from gpuconf.api.cluster import Cluster, NodePool
from gpuconf.api.driver_upgrade import CONFIG_STATE_FILE
from gpuconf.api.node_config import NODE_CONFIG_FILE
from gpuconf.api.runtime_files import (
    DRIVER_READY_MARKER,
    DRIVER_VALIDATIONS_DIR,
    SETUP_MARKER_DIR,
    SETUP_READY_MARKER,
)
from gpuconf.compiler.plan.pod import hardened, host_path
from gpuconf.compiler.plan.pool_node_config import config_map_name
from gpuconf.compiler.plan.setup_daemonset import (
    CONFIG_DIR,
    NOBODY,
    SETUP_MARKER_VOLUME,
    setup_marker_volume,
)

NODE_NAME = {"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}
# No GPU for these, whatever the node's default runtime (the driver they wait for may be gone).
NO_GPU = {"name": "NVIDIA_VISIBLE_DEVICES", "value": "void"}
HOST_ROOT = "/host"
STATUS_DIR = "/run/gpuconf-driver-upgrade"
DONE_FILE = f"{STATUS_DIR}/done"
RESOURCES = {"requests": {"cpu": "10m", "memory": "32Mi"}, "limits": {"memory": "128Mi"}}


def drain_command(pool: NodePool, digest: str) -> list[str]:
    """`gpuconf node driver-drain …` exactly as the init container runs it."""
    assert pool.driver is not None
    return [
        "gpuconf", "node", "driver-drain",
        "--config", f"{CONFIG_DIR}/{NODE_CONFIG_FILE}",
        "--node-name", "$(NODE_NAME)",
        "--timeout", str(pool.driver.eviction_timeout_seconds),
        "--config-digest", digest,
        "--state-file", CONFIG_STATE_FILE,
        "--host-root", HOST_ROOT,
    ]  # fmt: skip


def uncordon_command(pool: NodePool) -> list[str]:
    assert pool.driver is not None
    return [
        "gpuconf", "node", "driver-uncordon",
        "--node-name", "$(NODE_NAME)",
        "--version", pool.driver.version,
        "--driver-ready", DRIVER_READY_MARKER,
        "--setup-ready", SETUP_READY_MARKER,
        "--done-file", DONE_FILE,
        "--then-sleep",
    ]  # fmt: skip


def drain_container(cluster: Cluster, pool: NodePool, digest: str) -> dict[str, Any]:
    return {
        "name": "gpuconf-driver-drain",
        "image": cluster.spec.images.gpuconf,
        "command": drain_command(pool, digest),
        "env": [NODE_NAME, NO_GPU],
        # Privileged as k8s-driver-manager is, for the same look at the host's driver
        # (`chroot /host nvidia-smi`, isHostDriver): nvidia-smi opens the host's /dev/nvidia*.
        # Besides that it talks to the API server, reads /sys/module (every container sees it)
        # and the driver's state file.
        "securityContext": {"privileged": True, "runAsUser": 0},
        "resources": RESOURCES,
        "volumeMounts": [
            {"name": "node-config", "mountPath": CONFIG_DIR, "readOnly": True},
            {"name": "run-nvidia", "mountPath": "/run/nvidia", "readOnly": True},
            {
                "name": "host-root",
                "mountPath": HOST_ROOT,
                "readOnly": True,
                "mountPropagation": "HostToContainer",
            },
        ],
    }


def uncordon_container(cluster: Cluster, pool: NodePool) -> dict[str, Any]:
    return {
        "name": "gpuconf-driver-uncordon",
        "image": cluster.spec.images.gpuconf,
        "command": uncordon_command(pool),
        "env": [NODE_NAME, NO_GPU],
        "securityContext": hardened(user=NOBODY),
        "resources": RESOURCES,
        # `cat` here and the `sleep` it execs when done: coreutils of the image's Debian base.
        "startupProbe": {
            "exec": {"command": ["cat", DONE_FILE]},
            "periodSeconds": 10,
            # The driver's own probe allows 60 s + 120 × 10 s; setup follows it.
            "failureThreshold": 180,
        },
        "volumeMounts": [
            {"name": "driver-validations", "mountPath": DRIVER_VALIDATIONS_DIR, "readOnly": True},
            {"name": SETUP_MARKER_VOLUME, "mountPath": SETUP_MARKER_DIR, "readOnly": True},
            {"name": "upgrade-status", "mountPath": STATUS_DIR},
        ],
    }


def upgrade_volumes(pool: NodePool) -> list[dict[str, Any]]:
    return [
        {"name": "node-config", "configMap": {"name": config_map_name(pool)}},
        host_path("driver-validations", DRIVER_VALIDATIONS_DIR, "DirectoryOrCreate"),
        setup_marker_volume(),
        {"name": "upgrade-status", "emptyDir": {"medium": "Memory", "sizeLimit": "1Mi"}},
    ]
