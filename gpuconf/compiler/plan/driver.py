"""The driver-installer DaemonSet, for pools that ask gpuconf to install the NVIDIA driver.

Its files land under /run/nvidia/driver; once nvidia-smi answers it writes the driver-ready
marker setup waits for. Updates are OnDelete: a new driver means unloading the kernel module
under every GPU pod of the node, so an operator drains a node and deletes its driver pod
(docs/node-setup.md), rather than a rollout doing it to every node on its own."""

from __future__ import annotations

from gpuconf.api.cluster import Cluster, NodePool
from gpuconf.api.runtime_files import DRIVER_READY_MARKER, DRIVER_VALIDATIONS_DIR
from gpuconf.compiler.plan.artifact import Artifact
from gpuconf.compiler.plan.meta import WAVE_DRIVER
from gpuconf.compiler.plan.pod import (
    daemonset,
    host_path,
    on_pool_nodes,
    pool_daemonset,
    pool_source,
)


def driver_daemonset(cluster: Cluster, pool: NodePool) -> Artifact | None:
    driver = pool.driver
    if driver is None or not driver.install:
        return None
    pod = {
        "automountServiceAccountToken": False,
        **on_pool_nodes(pool),
        "hostPID": True,
        "containers": [
            {
                "name": "nvidia-driver",
                "image": f"{cluster.spec.images.driver}:{driver.version}-{driver.os}",
                "args": ["init"],
                # Loading kernel modules needs a privileged container.
                "securityContext": {"privileged": True, "seLinuxOptions": {"level": "s0"}},
                # Consumers must not see a ready driver that is being unloaded.
                "lifecycle": {"preStop": {"exec": {"command": ["rm", "-f", DRIVER_READY_MARKER]}}},
                "resources": {
                    "requests": {"cpu": "100m", "memory": "256Mi"},
                    "limits": {"memory": "2Gi"},
                },
                "startupProbe": {
                    "exec": {
                        "command": [
                            "sh",
                            "-c",
                            f"nvidia-smi && mkdir -p {DRIVER_VALIDATIONS_DIR} "
                            f"&& touch {DRIVER_READY_MARKER}",
                        ]
                    },
                    "initialDelaySeconds": 60,
                    "periodSeconds": 10,
                    "failureThreshold": 120,
                    "timeoutSeconds": 60,
                },
                "volumeMounts": [
                    {
                        "name": "run-nvidia",
                        "mountPath": "/run/nvidia",
                        "mountPropagation": "Bidirectional",
                    },
                    {
                        "name": "host-os-release",
                        "mountPath": "/host-etc/os-release",
                        "readOnly": True,
                    },
                    {"name": "var-log", "mountPath": "/var/log"},
                    {"name": "dev-log", "mountPath": "/dev/log"},
                ],
            }
        ],
        "volumes": [
            host_path("run-nvidia", "/run/nvidia", "DirectoryOrCreate"),
            host_path("host-os-release", "/etc/os-release", "File"),
            host_path("var-log", "/var/log", "Directory"),
            host_path("dev-log", "/dev/log", "Socket"),
        ],
    }
    workload = pool_daemonset(cluster, pool, "nvidia-driver", "driver", WAVE_DRIVER, pod)
    workload["spec"]["updateStrategy"] = {"type": "OnDelete"}
    return daemonset(
        f"pools/{pool.name}/daemonset-nvidia-driver.yaml",
        "nvidia-driver-daemonset.yaml.j2",
        workload,
        pool_source(cluster, pool),
    )
