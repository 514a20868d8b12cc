"""The driver-installer DaemonSet, for pools that ask gpuconf to install the NVIDIA driver."""

from __future__ import annotations

from gpuconf.api.cluster import Cluster, NodePool
from gpuconf.compiler.plan.artifact import Artifact, manifest
from gpuconf.compiler.plan.meta import WAVE_DRIVER, metadata
from gpuconf.compiler.plan.pod import POOL_LABEL, daemonset, host_path, node_selector, tolerations


def driver_daemonset(cluster: Cluster, pool: NodePool) -> Artifact | None:
    driver = pool.driver
    if driver is None or not driver.install:
        return None
    name = f"nvidia-driver-{pool.name}"
    meta = metadata(
        cluster,
        name,
        "driver",
        namespace=cluster.spec.namespace,
        wave=WAVE_DRIVER,
        **{POOL_LABEL: pool.name},
    )
    match = {"app.kubernetes.io/name": "nvidia-driver", POOL_LABEL: pool.name}
    pod = {
        "priorityClassName": "system-node-critical",
        "nodeSelector": node_selector(pool),
        "tolerations": tolerations(pool),
        "hostPID": True,
        "containers": [
            {
                "name": "nvidia-driver",
                "image": f"{cluster.spec.images.driver}:{driver.version}-{driver.os}",
                "args": ["init"],
                # Loading kernel modules needs a privileged container; this is the only one gpuconf emits.
                "securityContext": {"privileged": True, "seLinuxOptions": {"level": "s0"}},
                "resources": {
                    "requests": {"cpu": "100m", "memory": "256Mi"},
                    "limits": {"memory": "2Gi"},
                },
                "startupProbe": {
                    "exec": {
                        "command": [
                            "sh",
                            "-c",
                            "nvidia-smi && touch /run/nvidia/validations/.driver-ctr-ready",
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
    return manifest(f"pools/{pool.name}/daemonset-nvidia-driver.yaml", daemonset(meta, match, pod))
