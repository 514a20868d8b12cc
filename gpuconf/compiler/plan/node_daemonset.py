"""The DaemonSet that runs `gpuconf node run` on a pool, once setup has readied the host."""

from __future__ import annotations

from typing import Any

from gpuconf.api.cluster import Cluster, NodePool
from gpuconf.api.node_config import NODE_CONFIG_FILE
from gpuconf.api.node_facts import KUBELET_PLUGIN_DIR
from gpuconf.compiler.plan.artifact import Artifact
from gpuconf.compiler.plan.cluster_objects import NODE_SERVICE_ACCOUNT, RUNTIME_CLASS
from gpuconf.compiler.plan.meta import WAVE_PLUGIN
from gpuconf.compiler.plan.mig_pause import on_gpu_client_nodes
from gpuconf.compiler.plan.pod import (
    PLUGIN_RESOURCES,
    daemonset,
    hardened,
    host_path,
    pool_daemonset,
    pool_source,
)
from gpuconf.compiler.plan.pool_node_config import MPS_ROOT, MPS_SHM, config_map_name
from gpuconf.compiler.plan.setup_daemonset import CONFIG_DIR, setup_marker_volume, wait_for_setup

PLUGIN_DIR = KUBELET_PLUGIN_DIR
STATE_DIR = "/run/gpuconf"
"""GPUs awaiting a reset and what Allocate handed out, remembered across restarts of the pod
(tmpfs: a reboot clears it)."""
POD_RESOURCES_DIR = "/var/lib/kubelet/pod-resources"
"""The kubelet's PodResources socket: which devices running containers hold (day-2 safety)."""


# Tegra discovery reads the L4T release from the host; the rest of its files are in /sys and /proc.
TEGRA_RELEASE_FILE = "/etc/nv_tegra_release"


def run_command(cluster: Cluster, pool: NodePool) -> list[str]:
    """`gpuconf node run …` exactly as the container runs it (tests parse it with the node CLI)."""
    return [
        "gpuconf", "node", "run",
        "--config", f"{CONFIG_DIR}/{NODE_CONFIG_FILE}",
        "--node-name", "$(NODE_NAME)",
        "--plugin-dir", PLUGIN_DIR,
        "--nvml", "tegra" if pool.platform == "tegra" else "real",
        "--metrics-port", str(cluster.spec.node.metrics_port),
    ]  # fmt: skip


def node_daemonset(
    cluster: Cluster, pool: NodePool, uses_mps: bool, uses_mig: bool = False
) -> Artifact:
    image = cluster.spec.images.gpuconf
    config_mount = {"name": "node-config", "mountPath": CONFIG_DIR, "readOnly": True}
    main_mounts = [
        config_mount,
        {"name": "device-plugins", "mountPath": PLUGIN_DIR},
        {"name": "pod-resources", "mountPath": POD_RESOURCES_DIR, "readOnly": True},
        {"name": "node-state", "mountPath": STATE_DIR},
    ]
    volumes = [
        {"name": "node-config", "configMap": {"name": config_map_name(pool)}},
        host_path("device-plugins", PLUGIN_DIR, "Directory"),
        host_path("pod-resources", POD_RESOURCES_DIR, "Directory"),
        host_path("node-state", STATE_DIR, "DirectoryOrCreate"),
        setup_marker_volume(),
    ]
    if pool.platform == "tegra":
        volumes.append(host_path("tegra-release", TEGRA_RELEASE_FILE, "File"))
        main_mounts.append(
            {"name": "tegra-release", "mountPath": TEGRA_RELEASE_FILE, "readOnly": True}
        )
    env = [
        {"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
        {"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"},
        # MPS control daemons run here: nvidia-cuda-mps-control comes with `compute`.
        {
            "name": "NVIDIA_DRIVER_CAPABILITIES",
            "value": "compute,utility" if uses_mps else "utility",
        },
    ]
    security = hardened()
    if uses_mps:
        # The daemons' pipes and shared memory are the clients' too (Allocate mounts both).
        volumes.append(host_path("mps-root", MPS_ROOT, "DirectoryOrCreate"))
        volumes.append(host_path("mps-shm", MPS_SHM, "DirectoryOrCreate"))
        main_mounts.append({"name": "mps-root", "mountPath": MPS_ROOT})
        main_mounts.append({"name": "mps-shm", "mountPath": "/dev/shm"})
    if uses_mps or uses_mig:
        # Setting EXCLUSIVE_PROCESS compute mode is an admin operation, and with MIG NVML
        # lists the MIG devices only to a process that may monitor them all; NVIDIA's chart
        # gives its plugin SYS_ADMIN and NVIDIA_MIG_MONITOR_DEVICES=all for the same reason.
        security["capabilities"] = {"drop": ["ALL"], "add": ["SYS_ADMIN"]}
    if uses_mig:
        env.append({"name": "NVIDIA_MIG_MONITOR_DEVICES", "value": "all"})
    port = cluster.spec.node.metrics_port
    pod: dict[str, Any] = {
        "serviceAccountName": NODE_SERVICE_ACCOUNT,
        **on_gpu_client_nodes(cluster, pool),
        "securityContext": {"seccompProfile": {"type": "RuntimeDefault"}},
        "initContainers": [wait_for_setup(cluster)],
        "containers": [
            {
                "name": "gpuconf-node",
                "image": image,
                "command": run_command(cluster, pool),
                "env": env,
                "ports": [{"name": "metrics", "containerPort": port, "protocol": "TCP"}],
                "livenessProbe": {
                    "httpGet": {"path": "/healthz", "port": "metrics"},
                    "periodSeconds": 10,
                    "failureThreshold": 3,
                },
                "securityContext": security,
                "resources": PLUGIN_RESOURCES,
                "volumeMounts": main_mounts,
            }
        ],
        "volumes": volumes,
    }
    if not pool.runtime.set_as_default:
        # Without nvidia as the default runtime, NVML reaches the pod only through the RuntimeClass;
        # the sandbox starts once setup has installed it, and the init container waits for setup.
        pod["runtimeClassName"] = RUNTIME_CLASS
    return daemonset(
        f"pools/{pool.name}/daemonset-gpuconf-node.yaml",
        "node-daemonset.yaml.j2",
        pool_daemonset(cluster, pool, "gpuconf-node", "node-runtime", WAVE_PLUGIN, pod),
        pool_source(cluster, pool),
    )
