"""NVIDIA's mps-control-daemon per MPS pool (plugin: nvidia), laid out as NVIDIA's chart does.

NVIDIA's plugin advertises MPS replicas only while this daemon runs: it starts
`nvidia-cuda-mps-control` per shared resource with its pipes under /mps/<resource>/pipe and
marks /mps/.ready. Its init container mounts a tmpfs at /mps/shm (host /run/nvidia/mps/shm),
which the daemon and the plugin both see as /dev/shm."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gpuconf.api.cluster import Cluster, NodePool
from gpuconf.compiler.plan.artifact import Artifact
from gpuconf.compiler.plan.config_hash import annotate_template
from gpuconf.compiler.plan.meta import WAVE_PLUGIN
from gpuconf.compiler.plan.mig_pause import pause_affinity
from gpuconf.compiler.plan.pod import (
    daemonset,
    host_path,
    on_pool_nodes,
    pool_daemonset,
    pool_source,
)
from gpuconf.compiler.plan.pool_node_config import MPS_ROOT, MPS_SHM
from gpuconf.compiler.plan.setup_daemonset import setup_marker_volume, wait_for_setup

CONTAINER_MPS_ROOT = "/mps"


def mps_volumes() -> list[dict[str, Any]]:
    # The shm path has no type, as in NVIDIA's chart: the daemon's init container mounts it.
    return [
        host_path("mps-root", MPS_ROOT, "DirectoryOrCreate"),
        {"name": "mps-shm", "hostPath": {"path": MPS_SHM}},
    ]


def mps_control_daemon(
    cluster: Cluster,
    pool: NodePool,
    image: str,
    config_map: str,
    config_file: str,
    files: Mapping[str, str],
) -> Artifact:
    config_dir = config_file.rsplit("/", 1)[0]
    # Starting MPS servers and setting exclusive-process compute mode need the host's PID
    # namespace and privilege, as in NVIDIA's chart.
    privileged = {"privileged": True}
    pod: dict[str, Any] = {
        "automountServiceAccountToken": False,
        **on_pool_nodes(pool),
        "hostPID": True,
        "affinity": pause_affinity(),
        "initContainers": [
            wait_for_setup(cluster),
            {
                "name": "mps-control-daemon-mounts",
                "image": image,
                "command": ["mps-control-daemon", "mount-shm"],
                "securityContext": privileged,
                "volumeMounts": [
                    {
                        "name": "mps-root",
                        "mountPath": CONTAINER_MPS_ROOT,
                        "mountPropagation": "Bidirectional",
                    }
                ],
            },
        ],
        "containers": [
            {
                "name": "mps-control-daemon-ctr",
                "image": image,
                "command": ["mps-control-daemon"],
                "env": [
                    {
                        "name": "NODE_NAME",
                        "valueFrom": {
                            "fieldRef": {"apiVersion": "v1", "fieldPath": "spec.nodeName"}
                        },
                    },
                    {"name": "CONFIG_FILE", "value": config_file},
                    {"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"},
                    {"name": "NVIDIA_DRIVER_CAPABILITIES", "value": "compute,utility"},
                ],
                "securityContext": privileged,
                "resources": {"requests": {"cpu": "20m", "memory": "64Mi"}},
                "volumeMounts": [
                    {"name": "mps-shm", "mountPath": "/dev/shm"},
                    {"name": "mps-root", "mountPath": CONTAINER_MPS_ROOT},
                    {"name": "config", "mountPath": config_dir, "readOnly": True},
                ],
            }
        ],
        "volumes": [
            *mps_volumes(),
            {"name": "config", "configMap": {"name": config_map}},
            setup_marker_volume(),
        ],
    }
    workload = pool_daemonset(
        cluster, pool, "nvidia-mps-control-daemon", "mps-control-daemon", WAVE_PLUGIN, pod
    )
    return daemonset(
        f"pools/{pool.name}/daemonset-nvidia-mps-control-daemon.yaml",
        "nvidia-mps-control-daemon-daemonset.yaml.j2",
        annotate_template(workload, files),
        pool_source(cluster, pool),
    )
