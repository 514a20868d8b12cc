"""plugin: nvidia — NVIDIA's device plugin per pool, with its `version: v1` config mounted directly.

Only keys NVIDIA's parser reads are written: never `resources`, `rename` or `devices`, which it
ignores at run time (validation has already refused what they would have meant). The plugin
reads its config only at start (or on SIGHUP, which nothing here sends), so the pod template
carries the config's hash: a changed config rolls the pods out under maxUnavailable."""

from __future__ import annotations

from typing import Any

from gpuconf.api.cluster import Cluster, NodePool
from gpuconf.compiler.plan.artifact import Artifact
from gpuconf.compiler.plan.config_hash import annotate_template
from gpuconf.compiler.plan.config_map import pool_config_map
from gpuconf.compiler.plan.meta import WAVE_PLUGIN
from gpuconf.compiler.plan.mig_pause import on_gpu_client_nodes
from gpuconf.compiler.plan.node_daemonset import PLUGIN_DIR
from gpuconf.compiler.plan.nvidia_mps_daemon import (
    CONTAINER_MPS_ROOT,
    mps_control_daemon,
    mps_volumes,
)
from gpuconf.compiler.plan.pod import (
    PLUGIN_RESOURCES,
    daemonset,
    hardened,
    host_path,
    pool_daemonset,
    pool_source,
)
from gpuconf.compiler.plan.pool_node_config import MPS_ROOT
from gpuconf.compiler.plan.setup_daemonset import setup_marker_volume, wait_for_setup
from gpuconf.compiler.resolve.class_selection import ResolvedClass
from gpuconf.compiler.resolve.device_lists import device_list_strategy
from gpuconf.formats.yaml_writer import dump
from gpuconf.gpus.nvidia_plugin_releases import (
    ALLOCATION_POLICY_SINCE,
    DEVICE_ID_STRATEGY,
    FAIL_ON_INIT_ERROR,
    NVIDIA_DEVICE_LISTS,
    PASS_DEVICE_SPECS,
    allocation_policy,
    at_least,
    image,
    plugin_release,
)
from gpuconf.gpus.resource_names import NVIDIA_GPU, SHARED_SUFFIX, unshared

CONFIG_DIR = "/etc/nvidia-device-plugin"
CONFIG_FILE = "config.yaml"
CDI_ROOT = "/var/run/cdi"
CONTAINER_DRIVER_ROOT = "/driver-root"


def device_list_strategies(cluster: Cluster, pool: NodePool) -> list[str]:
    """NVIDIA's deviceListStrategy for the pool's device list strategy (declared in
    `node.deviceListStrategy`, or the pool engine's default)."""
    return [NVIDIA_DEVICE_LISTS[device_list_strategy(cluster, pool)]]


def plugin_image(cluster: Cluster) -> str:
    return cluster.spec.images.nvidia_device_plugin or image(plugin_release(cluster))


def nvidia_config(
    cluster: Cluster, pool: NodePool, classes: list[ResolvedClass], strategy: str
) -> dict[str, Any]:
    """`strategy`: the pool's migStrategy (resolve/mig_strategies.py)."""
    shared = [c for c in classes if c.spec.sharing.strategy != "none"]
    uses_mps = any(c.spec.sharing.strategy == "mps" for c in shared)
    plugin: dict[str, Any] = {
        "passDeviceSpecs": PASS_DEVICE_SPECS,
        "deviceListStrategy": device_list_strategies(cluster, pool),
        "deviceIDStrategy": DEVICE_ID_STRATEGY,
    }
    if shared and at_least(plugin_release(cluster), ALLOCATION_POLICY_SINCE):
        # Validation made every shared class of the pool agree on it.
        plugin["sharedDevicesAllocationPolicy"] = allocation_policy(
            shared[0].spec.allocation_policy
        )
    flags: dict[str, Any] = {
        "migStrategy": strategy,
        "failOnInitError": FAIL_ON_INIT_ERROR,
        "nvidiaDriverRoot": pool.driver_root(),
        "plugin": plugin,
    }
    if uses_mps:
        flags["mpsRoot"] = MPS_ROOT
    config: dict[str, Any] = {"version": "v1", "flags": flags}
    if shared:
        section = "mps" if uses_mps else "timeSlicing"
        resources = {
            (NVIDIA_GPU if strategy == "single" else unshared(c.resource_name)): c.replicas
            for c in shared
        }
        config["sharing"] = {
            section: {
                "renameByDefault": any(c.resource_name.endswith(SHARED_SUFFIX) for c in shared),
                "failRequestsGreaterThanOne": uses_mps
                or any(
                    getattr(c.spec.sharing, "fail_requests_greater_than_one", False) for c in shared
                ),
                "resources": [
                    {"name": name, "replicas": replicas}
                    for name, replicas in sorted(resources.items())
                ],
            }
        }
    return config


def _security_context(config: dict[str, Any]) -> dict[str, Any]:
    context = hardened()
    flags = config["flags"]
    # As NVIDIA's chart does: with MIG (or volume-mounts) the plugin needs CAP_SYS_ADMIN to open
    # the MIG capability files under /proc/driver/nvidia/capabilities it monitors for health.
    if flags["migStrategy"] != "none" or "volume-mounts" in flags["plugin"]["deviceListStrategy"]:
        context["capabilities"] = {"drop": ["ALL"], "add": ["SYS_ADMIN"]}
    return context


def _env(config: dict[str, Any]) -> list[dict[str, str]]:
    env = [
        {"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"},
        {"name": "NVIDIA_DRIVER_CAPABILITIES", "value": "compute,utility"},
    ]
    if config["flags"]["migStrategy"] != "none":
        # Makes the container toolkit give the plugin every MIG device's monitor capability,
        # without which it sees no health events for MIG devices (NVIDIA's chart sets it with MIG).
        env.append({"name": "NVIDIA_MIG_MONITOR_DEVICES", "value": "all"})
    return env


def _volumes(config: dict[str, Any]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    mounts: list[dict[str, Any]] = [
        {"name": "device-plugins", "mountPath": PLUGIN_DIR},
        {"name": "config", "mountPath": CONFIG_DIR, "readOnly": True},
    ]
    volumes: list[dict[str, Any]] = [host_path("device-plugins", PLUGIN_DIR, "Directory")]
    if "mpsRoot" in config["flags"]:
        # NVIDIA's plugin looks for the daemon's pipes under /mps and checks it through /dev/shm.
        mounts += [
            {"name": "mps-root", "mountPath": CONTAINER_MPS_ROOT},
            {"name": "mps-shm", "mountPath": "/dev/shm"},
        ]
        volumes += mps_volumes()
    if any(s.startswith("cdi-") for s in config["flags"]["plugin"]["deviceListStrategy"]):
        # The plugin writes its CDI spec (kind k8s.device-plugin.nvidia.com/gpu) for the runtime,
        # from the driver files it finds under the host's driver root.
        mounts += [
            {"name": "cdi-root", "mountPath": CDI_ROOT},
            {"name": "driver-root", "mountPath": CONTAINER_DRIVER_ROOT, "readOnly": True},
        ]
        volumes += [
            host_path("cdi-root", CDI_ROOT, "DirectoryOrCreate"),
            host_path("driver-root", config["flags"]["nvidiaDriverRoot"], "Directory"),
        ]
    return volumes, mounts


def nvidia_plugin(
    cluster: Cluster, pool: NodePool, classes: list[ResolvedClass], strategy: str
) -> list[Artifact]:
    """`strategy`: the pool's migStrategy (resolve/mig_strategies.py)."""
    config_name = f"nvidia-device-plugin-{pool.name}"
    config = nvidia_config(cluster, pool, classes, strategy)
    files = {CONFIG_FILE: dump(config)}
    config_map = pool_config_map(
        cluster, pool, "nvidia-device-plugin", config_name, "device-plugin", files
    )
    volumes, mounts = _volumes(config)
    volumes += [{"name": "config", "configMap": {"name": config_name}}, setup_marker_volume()]
    pod: dict[str, Any] = {
        "automountServiceAccountToken": False,
        **on_gpu_client_nodes(cluster, pool),
        "securityContext": {"seccompProfile": {"type": "RuntimeDefault"}},
        "initContainers": [wait_for_setup(cluster)],
        "containers": [
            {
                "name": "nvidia-device-plugin",
                "image": plugin_image(cluster),
                "command": ["nvidia-device-plugin"],
                "args": [f"--config-file={CONFIG_DIR}/{CONFIG_FILE}"],
                "env": _env(config),
                "securityContext": _security_context(config),
                "resources": PLUGIN_RESOURCES,
                "volumeMounts": mounts,
            }
        ],
        "volumes": volumes,
    }
    workload = pool_daemonset(
        cluster, pool, "nvidia-device-plugin", "device-plugin", WAVE_PLUGIN, pod
    )
    artifacts = [
        config_map,
        daemonset(
            f"pools/{pool.name}/daemonset-nvidia-device-plugin.yaml",
            "nvidia-device-plugin-daemonset.yaml.j2",
            annotate_template(workload, files),
            pool_source(cluster, pool),
        ),
    ]
    if "mpsRoot" in config["flags"]:
        artifacts.append(
            mps_control_daemon(
                cluster,
                pool,
                plugin_image(cluster),
                config_name,
                f"{CONFIG_DIR}/{CONFIG_FILE}",
                files,
            )
        )
    return artifacts
