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
from gpuconf.compiler.plan.artifact import Artifact, manifest
from gpuconf.compiler.plan.cluster_objects import RUNTIME_CLASS
from gpuconf.compiler.plan.meta import WAVE_CONFIG, WAVE_PLUGIN, metadata
from gpuconf.compiler.plan.node_daemonset import POD_RESOURCES_DIR
from gpuconf.compiler.plan.pod import hardened, host_path, on_pool_nodes, pool_daemonset
from gpuconf.compiler.plan.setup_daemonset import setup_marker_volume, wait_for_setup

APP = "dcgm-exporter"
PORT = 9400
COUNTERS_FILE = "gpuconf-counters.csv"
COUNTERS_DIR = "/etc/dcgm-exporter/gpuconf"
SERVICE_ACCOUNT = "dcgm-exporter"

# etc/default-counters.csv of the release, plus the fields gpuconf's alerts read that it
# leaves commented out (double-bit ECC, pages pending retirement, clock event reasons).
COUNTERS = """\
# DCGM FIELD, Prometheus metric type, help message (dcgm-exporter's counters file format)
DCGM_FI_DEV_SM_CLOCK, gauge, SM clock frequency (in MHz).
DCGM_FI_DEV_MEM_CLOCK, gauge, Memory clock frequency (in MHz).
DCGM_FI_DEV_MEMORY_TEMP, gauge, Memory temperature (in C).
DCGM_FI_DEV_GPU_TEMP, gauge, GPU temperature (in C).
DCGM_FI_DEV_POWER_USAGE, gauge, Power draw (in W).
DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION, counter, Total energy consumption since boot (in mJ).
DCGM_FI_DEV_PCIE_REPLAY_COUNTER, counter, Total number of PCIe retries.
DCGM_FI_DEV_GPU_UTIL, gauge, GPU utilization (in %).
DCGM_FI_DEV_MEM_COPY_UTIL, gauge, Memory utilization (in %).
DCGM_FI_DEV_ENC_UTIL, gauge, Encoder utilization (in %).
DCGM_FI_DEV_DEC_UTIL, gauge, Decoder utilization (in %).
DCGM_FI_DEV_XID_ERRORS, gauge, Value of the last XID error encountered.
DCGM_FI_DEV_FB_FREE, gauge, Framebuffer memory free (in MiB).
DCGM_FI_DEV_FB_USED, gauge, Framebuffer memory used (in MiB).
DCGM_FI_DEV_FB_RESERVED, gauge, Framebuffer memory reserved (in MiB).
DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL, counter, Total number of NVLink bandwidth counters for all lanes.
DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS, counter, Number of remapped rows for uncorrectable errors
DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS, counter, Number of remapped rows for correctable errors
DCGM_FI_DEV_ROW_REMAP_FAILURE, gauge, Whether remapping of rows has failed
DCGM_FI_DRIVER_VERSION, label, Driver Version
DCGM_FI_PROF_GR_ENGINE_ACTIVE, gauge, Ratio of time the graphics engine is active.
DCGM_FI_PROF_PIPE_TENSOR_ACTIVE, gauge, Ratio of cycles the tensor (HMMA) pipe is active.
DCGM_FI_PROF_DRAM_ACTIVE, gauge, Ratio of cycles the device memory interface is active sending or receiving data.
DCGM_FI_PROF_PCIE_TX_BYTES, gauge, The rate of data transmitted over the PCIe bus - including both protocol headers and data payloads - in bytes per second.
DCGM_FI_PROF_PCIE_RX_BYTES, gauge, The rate of data received over the PCIe bus - including both protocol headers and data payloads - in bytes per second.
DCGM_FI_DEV_ECC_DBE_VOL_TOTAL, counter, Total number of double-bit volatile ECC errors.
DCGM_FI_DEV_RETIRED_PENDING, counter, Total number of pages pending retirement.
DCGM_FI_DEV_CLOCKS_EVENT_REASONS, gauge, Current clock event reasons (bitmask).
"""


def runs_on(cluster: Cluster, pool: NodePool) -> bool:
    return cluster.spec.dcgm_exporter.enabled and pool.platform != "tegra"


def runs_anywhere(cluster: Cluster) -> bool:
    return any(runs_on(cluster, pool) for pool in cluster.spec.node_pools)


def dcgm_exporter_cluster_objects(cluster: Cluster) -> list[Artifact]:
    """The counters ConfigMap, and where DRA claims are read, the RBAC to read ResourceSlices."""
    if not runs_anywhere(cluster):
        return []
    namespace = cluster.spec.namespace
    artifacts = [
        manifest(
            "telemetry/configmap-dcgm-exporter-counters.yaml",
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": metadata(
                    cluster, "dcgm-exporter-counters", "telemetry", namespace=namespace,
                    wave=WAVE_CONFIG,
                ),
                "data": {COUNTERS_FILE: COUNTERS},
            },
        ),
        manifest(
            "telemetry/serviceaccount-dcgm-exporter.yaml",
            {
                "apiVersion": "v1",
                "kind": "ServiceAccount",
                "metadata": metadata(
                    cluster, SERVICE_ACCOUNT, "telemetry", namespace=namespace, wave=WAVE_CONFIG
                ),
            },
        ),
    ]  # fmt: skip
    if cluster.spec.allocation == "dra":
        artifacts += _dra_rbac(cluster)
    return artifacts


def _dra_rbac(cluster: Cluster) -> list[Artifact]:
    """KUBERNETES_ENABLE_DRA watches ResourceSlices (internal/pkg/transformation/dra.go)."""
    namespace = cluster.spec.namespace
    name = f"dcgm-exporter-{namespace}"
    return [
        manifest(
            "telemetry/clusterrole-dcgm-exporter.yaml",
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "ClusterRole",
                "metadata": metadata(cluster, name, "telemetry", wave=WAVE_CONFIG),
                "rules": [
                    {
                        "apiGroups": ["resource.k8s.io"],
                        "resources": ["resourceslices"],
                        "verbs": ["get", "list", "watch"],
                    }
                ],
            },
        ),
        manifest(
            "telemetry/clusterrolebinding-dcgm-exporter.yaml",
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "ClusterRoleBinding",
                "metadata": metadata(cluster, name, "telemetry", wave=WAVE_CONFIG),
                "roleRef": {
                    "apiGroup": "rbac.authorization.k8s.io",
                    "kind": "ClusterRole",
                    "name": name,
                },
                "subjects": [
                    {"kind": "ServiceAccount", "name": SERVICE_ACCOUNT, "namespace": namespace}
                ],
            },
        ),
    ]


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
        {"name": "NVIDIA_RESOURCE_NAMES", "value": ",".join(resource_names(cluster, config))},
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
        **on_pool_nodes(pool),
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
            {"name": "counters", "configMap": {"name": "dcgm-exporter-counters"}},
            setup_marker_volume(),
        ],
    }
    if not pool.runtime.set_as_default:
        pod["runtimeClassName"] = RUNTIME_CLASS
    return manifest(
        f"pools/{pool.name}/daemonset-dcgm-exporter.yaml",
        pool_daemonset(cluster, pool, APP, "telemetry", WAVE_PLUGIN, pod),
    )
