"""NVIDIA's dcgm-exporter on every GPU pool, told every resource name gpuconf advertises there.

How dcgm-exporter reads what is written here (NVIDIA/dcgm-exporter 4.5.3-4.8.2, commit d5e5f510):
pkg/cmd/app.go (NVIDIA_RESOURCE_NAMES, a comma-separated list; KUBERNETES_VIRTUAL_GPUS;
KUBERNETES_ENABLE_DRA; DCGM_EXPORTER_COLLECTORS; NODE_NAME), internal/pkg/transformation/
kubernetes.go (a pod's devices count only for nvidia.com/gpu, names starting nvidia.com/mig-,
and the names listed; a device ID `<uuid>::<n>` is replica n of GPU <uuid>, `MIG-…` a MIG
device), deployment/templates/daemonset.yaml and clusterrole.yaml (mounts, security, RBAC).
"""

from __future__ import annotations

from typing import Any

from gpuconf.api.cluster import Cluster, NodePool
from gpuconf.api.node_config import NodeConfig
from gpuconf.compiler.plan.artifact import Artifact
from gpuconf.compiler.plan.cluster_objects import RUNTIME_CLASS
from gpuconf.compiler.plan.meta import WAVE_PLUGIN
from gpuconf.compiler.plan.mig_pause import on_gpu_client_nodes
from gpuconf.compiler.plan.node_daemonset import POD_RESOURCES_DIR
from gpuconf.compiler.plan.pod import (
    daemonset,
    hardened,
    host_path,
    pool_daemonset,
    pool_source,
)
from gpuconf.compiler.plan.setup_daemonset import setup_marker_volume, wait_for_setup

APP = "dcgm-exporter"
PORT = 9400
COUNTERS_FILE = "gpuconf-counters.csv"
COUNTERS_DIR = "/etc/dcgm-exporter/gpuconf"
COUNTERS_CONFIG_MAP = "dcgm-exporter-counters"
SERVICE_ACCOUNT = "dcgm-exporter"
SOURCE = ("spec", "dcgmExporter")
"""Where the cluster file turns it on and picks its image, for diagnostics."""


def resource_names(cluster: Cluster, config: NodeConfig) -> list[str]:
    """The extended resources gpuconf (or NVIDIA's plugin) advertises on the pool's nodes."""
    if cluster.spec.allocation == "dra":
        return []
    return sorted({r.name for r in config.resources})


def dcgm_exporter_daemonset(cluster: Cluster, pool: NodePool, config: NodeConfig) -> Artifact:
    dra = cluster.spec.allocation == "dra"
    shared = any(r.sharing.replicas > 1 for r in config.resources)
    mig = any(r.mig_profile is not None for r in config.resources)
    env = [
        {"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
        {"name": "DCGM_EXPORTER_KUBERNETES", "value": "true"},
        {"name": "DCGM_EXPORTER_LISTEN", "value": f":{PORT}"},
        {"name": "DCGM_EXPORTER_COLLECTORS", "value": f"{COUNTERS_DIR}/{COUNTERS_FILE}"},
        # Under DRA nothing is advertised as an extended resource: the names stay unset, since
        # the API server drops an empty env value (omitempty) and the test of what it keeps
        # would then differ from the file.
        *(
            [{"name": "NVIDIA_RESOURCE_NAMES", "value": ",".join(names)}]
            if (names := resource_names(cluster, config))
            else []
        ),
        # Replicas of one GPU held by several pods: each series per pod, not the last one's.
        {"name": "KUBERNETES_VIRTUAL_GPUS", "value": str(shared and not dra).lower()},
        {"name": "KUBERNETES_ENABLE_DRA", "value": str(dra).lower()},
        {"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"},
    ]
    if mig:
        env.append({"name": "NVIDIA_MIG_MONITOR_DEVICES", "value": "all"})
    security = hardened()
    # The chart adds SYS_ADMIN for the profiling fields (DCGM_FI_PROF_*) the counters read.
    security["capabilities"] = {"drop": ["ALL"], "add": ["SYS_ADMIN"]}
    pod: dict[str, Any] = {
        "serviceAccountName": SERVICE_ACCOUNT,
        "automountServiceAccountToken": dra,
        # A GPU client (DCGM holds the GPUs open): it steps aside while the MIG manager
        # repartitions or the driver manager swaps the driver, as the plugins do.
        **on_gpu_client_nodes(cluster, pool),
        "securityContext": {"seccompProfile": {"type": "RuntimeDefault"}},
        "initContainers": [wait_for_setup(cluster)],
        "containers": [
            {
                "name": "exporter",
                "image": cluster.spec.dcgm_exporter.image,
                "env": env,
                "ports": [{"name": "metrics", "containerPort": PORT, "protocol": "TCP"}],
                "livenessProbe": {
                    "httpGet": {"path": "/health", "port": "metrics"},
                    "initialDelaySeconds": 45,
                    "periodSeconds": 5,
                },
                "readinessProbe": {
                    "httpGet": {"path": "/health", "port": "metrics"},
                    "initialDelaySeconds": 45,
                },
                "securityContext": security,
                "resources": {
                    "requests": {"cpu": "50m", "memory": "128Mi"},
                    "limits": {"cpu": "500m", "memory": "512Mi"},
                },
                "volumeMounts": [
                    {"name": "pod-resources", "mountPath": POD_RESOURCES_DIR, "readOnly": True},
                    {"name": "counters", "mountPath": COUNTERS_DIR, "readOnly": True},
                ],
            }
        ],
        "volumes": [
            host_path("pod-resources", POD_RESOURCES_DIR, "Directory"),
            {"name": "counters", "configMap": {"name": COUNTERS_CONFIG_MAP}},
            setup_marker_volume(),
        ],
    }
    if not pool.runtime.set_as_default:
        pod["runtimeClassName"] = RUNTIME_CLASS
    return daemonset(
        f"pools/{pool.name}/daemonset-dcgm-exporter.yaml",
        "dcgm-exporter-daemonset.yaml.j2",
        pool_daemonset(cluster, pool, APP, "telemetry", WAVE_PLUGIN, pod),
        pool_source(cluster, pool),
    )
