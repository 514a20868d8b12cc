"""plugin: nvidia — NVIDIA's device plugin per pool, with its `version: v1` config mounted directly.

Only keys NVIDIA's parser reads are written: never `resources`, `rename` or `devices`, which it
ignores at run time (validation has already refused what they would have meant)."""

from __future__ import annotations

from typing import Any

from gpuconf.api.cluster import Cluster, NodePool
from gpuconf.compiler.plan.artifact import Artifact, manifest
from gpuconf.compiler.plan.config_map import pool_config_map
from gpuconf.compiler.plan.meta import WAVE_PLUGIN, metadata
from gpuconf.compiler.plan.node_daemonset import PLUGIN_DIR
from gpuconf.compiler.plan.pod import (
    PLUGIN_RESOURCES,
    POOL_LABEL,
    daemonset,
    hardened,
    host_path,
    node_selector,
    tolerations,
)
from gpuconf.compiler.plan.pool_node_config import MPS_ROOT
from gpuconf.compiler.resolve.class_selection import ResolvedClass
from gpuconf.compiler.resolve.declared_inventory import DeclaredInventory
from gpuconf.formats.yaml_writer import dump
from gpuconf.gpus.mig import mig_strategy
from gpuconf.gpus.resource_names import NVIDIA_GPU, SHARED_SUFFIX, unshared

CONFIG_DIR = "/etc/nvidia-device-plugin"
CONFIG_FILE = "config.yaml"


def nvidia_config(cluster: Cluster, classes: list[ResolvedClass], strategy: str) -> dict[str, Any]:
    """`strategy`: the pool's migStrategy (gpuconf.gpus.mig.mig_strategy over all its GPUs)."""
    shared = [c for c in classes if c.spec.sharing.strategy != "none"]
    uses_mps = any(c.spec.sharing.strategy == "mps" for c in shared)
    flags: dict[str, Any] = {
        "migStrategy": strategy,
        "failOnInitError": True,
        "nvidiaDriverRoot": "/",
        "plugin": {
            "passDeviceSpecs": False,
            "deviceListStrategy": [cluster.spec.node.device_list_strategy],
            "deviceIDStrategy": "uuid",
        },
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


def nvidia_plugin(
    cluster: Cluster, pool: NodePool, classes: list[ResolvedClass], inventory: DeclaredInventory
) -> list[Artifact]:
    namespace = cluster.spec.namespace
    config_name = f"nvidia-device-plugin-{pool.name}"
    strategy = mig_strategy(g.mig for group in inventory.by_pool(pool.name) for g in group.gpus)
    config = nvidia_config(cluster, classes, strategy)
    uses_mps = "mpsRoot" in config["flags"]
    config_map = pool_config_map(
        cluster,
        pool,
        "nvidia-device-plugin",
        config_name,
        "device-plugin",
        {CONFIG_FILE: dump(config)},
    )
    mounts = [
        {"name": "device-plugins", "mountPath": PLUGIN_DIR},
        {"name": "config", "mountPath": CONFIG_DIR, "readOnly": True},
    ]
    volumes = [
        host_path("device-plugins", PLUGIN_DIR, "Directory"),
        {"name": "config", "configMap": {"name": config_name}},
    ]
    if uses_mps:
        mounts.append({"name": "mps-root", "mountPath": MPS_ROOT})
        volumes.append(host_path("mps-root", MPS_ROOT, "DirectoryOrCreate"))
    pod: dict[str, Any] = {
        "priorityClassName": "system-node-critical",
        "nodeSelector": node_selector(pool),
        "tolerations": tolerations(pool),
        "securityContext": {"seccompProfile": {"type": "RuntimeDefault"}},
        "containers": [
            {
                "name": "nvidia-device-plugin",
                "image": cluster.spec.images.nvidia_device_plugin,
                "command": ["nvidia-device-plugin"],
                "args": [f"--config-file={CONFIG_DIR}/{CONFIG_FILE}"],
                "env": [
                    {"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"},
                    {"name": "NVIDIA_DRIVER_CAPABILITIES", "value": "compute,utility"},
                ],
                "securityContext": hardened(),
                "resources": PLUGIN_RESOURCES,
                "volumeMounts": mounts,
            }
        ],
        "volumes": volumes,
    }
    name = f"nvidia-device-plugin-{pool.name}"
    meta = metadata(
        cluster,
        name,
        "device-plugin",
        namespace=namespace,
        wave=WAVE_PLUGIN,
        **{POOL_LABEL: pool.name},
    )
    match = {"app.kubernetes.io/name": "nvidia-device-plugin", POOL_LABEL: pool.name}
    return [
        config_map,
        manifest(
            f"pools/{pool.name}/daemonset-nvidia-device-plugin.yaml", daemonset(meta, match, pod)
        ),
    ]
