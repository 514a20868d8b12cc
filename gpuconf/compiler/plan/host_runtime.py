"""The container-runtime files for each pool's hosts, as `gpuconf node apply-runtime` installs them.

They are not Kubernetes objects; they sit beside the manifests for review and for hosts
provisioned without the DaemonSet."""

from __future__ import annotations

from gpuconf.api import runtime_files
from gpuconf.api.cluster import NodePool
from gpuconf.api.node_config import NodeConfig
from gpuconf.compiler.plan.artifact import Artifact


def host_runtime_files(pool: NodePool, config: NodeConfig) -> list[Artifact]:
    settings = config.runtime
    folder = f"host/{pool.name}"
    if settings.engine == "docker":
        return [
            Artifact(
                f"{folder}/etc/docker/daemon.json",
                runtime_files.docker_daemon_fragment(settings),
                "json",
            )
        ]
    if settings.engine == "containerd":
        return [
            Artifact(
                f"{folder}{runtime_files.CONTAINERD_DROPIN}",
                runtime_files.containerd_dropin(settings),
                "text",
            )
        ]
    return [
        Artifact(
            f"{folder}{runtime_files.K3S_TEMPLATE}",
            runtime_files.k3s_config_template(settings),
            "text",
        )
    ]
