"""The driver-installer DaemonSet, for pools that ask gpuconf to install the NVIDIA driver.

Its files land under /run/nvidia/driver. A version change rolls `maxUnavailable` nodes at a
time. On each: `gpuconf node driver-drain` cordons the node and evicts the pods holding its GPUs
(plan/driver_upgrade.py); NVIDIA's k8s-driver-manager (plan/driver_manager.py) stops the GPU
clients and unloads the old driver; the installer loads the new one, and only when nvidia-smi
reports the declared version on every GPU does the startup probe write the driver-ready marker
(with those versions in it; gpuconf's setup and plugin wait for it); once setup has readied the
runtime again, `gpuconf node driver-uncordon` labels the version, uncordons, and the pod turns
Ready, which lets the rollout move to the next node. A roll that leaves the driver as it is
(same DRIVER_CONFIG_DIGEST, plan/driver_config_digest.py) drains and unloads nothing."""

from __future__ import annotations

from gpuconf.api.cluster import Cluster, NodePool
from gpuconf.api.runtime_files import DRIVER_READY_MARKER, DRIVER_VALIDATIONS_DIR
from gpuconf.compiler.plan.artifact import Artifact
from gpuconf.compiler.plan.driver_config_digest import config_digest, with_digest
from gpuconf.compiler.plan.driver_manager import DRIVER_MANAGER_ACCOUNT, driver_manager_container
from gpuconf.compiler.plan.driver_upgrade import (
    drain_container,
    uncordon_container,
    upgrade_volumes,
)
from gpuconf.compiler.plan.meta import WAVE_DRIVER
from gpuconf.compiler.plan.pod import (
    daemonset,
    host_path,
    on_pool_nodes,
    pool_daemonset,
    pool_source,
)


def validate_driver_command(version: str) -> str:
    """Shell that succeeds, and marks the driver ready, only when nvidia-smi answers and every
    GPU reports `version` (a node still on the old driver, or with none, fails). The marker holds
    what nvidia-smi answered, one line a GPU, written whole (driver-uncordon reads it)."""
    return (
        "v=$(nvidia-smi --query-gpu=driver_version --format=csv,noheader) "
        f'&& [ -n "$v" ] && [ -z "$(printf \'%s\\n\' "$v" | grep -vxF \'{version}\')" ] '
        f"&& mkdir -p {DRIVER_VALIDATIONS_DIR} "
        f"&& printf '%s\\n' \"$v\" > {DRIVER_READY_MARKER}.new "
        f"&& mv {DRIVER_READY_MARKER}.new {DRIVER_READY_MARKER}"
    )


def driver_daemonset(cluster: Cluster, pool: NodePool) -> Artifact | None:
    driver = pool.driver
    if driver is None or not driver.install:
        return None
    installer = {
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
            "exec": {"command": ["sh", "-c", validate_driver_command(driver.version)]},
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
    manager = driver_manager_container(cluster)
    digest = config_digest(installer, manager)
    pod = {
        "serviceAccountName": DRIVER_MANAGER_ACCOUNT,
        **on_pool_nodes(pool),
        "hostPID": True,
        "initContainers": [drain_container(cluster, pool, digest), with_digest(manager, digest)],
        "containers": [
            with_digest(installer, digest),
            uncordon_container(cluster, pool),
        ],
        "volumes": [
            host_path("run-nvidia", "/run/nvidia", "DirectoryOrCreate"),
            host_path("host-os-release", "/etc/os-release", "File"),
            host_path("var-log", "/var/log", "Directory"),
            host_path("dev-log", "/dev/log", "Socket"),
            host_path("host-root", "/", "Directory"),
            host_path("host-sys", "/sys", "Directory"),
            *upgrade_volumes(pool),
        ],
    }
    workload = pool_daemonset(cluster, pool, "nvidia-driver", "driver", WAVE_DRIVER, pod)
    workload["spec"]["updateStrategy"] = {
        "type": "RollingUpdate",
        "rollingUpdate": {"maxUnavailable": driver.max_unavailable},
    }
    return daemonset(
        f"pools/{pool.name}/daemonset-nvidia-driver.yaml",
        "nvidia-driver-daemonset.yaml.j2",
        workload,
        pool_source(cluster, pool),
    )
