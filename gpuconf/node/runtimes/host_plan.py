"""Everything setup would change on a host, before anything is written."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from gpuconf.api.node_config import NodeConfig, RuntimeSettings
from gpuconf.node.runtimes import cdi, containerd, crio, docker, k3s, toolkit
from gpuconf.node.runtimes.changes import FileChange
from gpuconf.node.runtimes.host import Host, HostPathError

ENGINES: dict[str, Callable[[RuntimeSettings, Host], list[FileChange]]] = {
    "docker": docker.plan,
    "containerd": containerd.plan,
    "k3s": k3s.plan,
    "cri-o": crio.plan,
}


@dataclass(frozen=True)
class HostPlan:
    engine: list[FileChange]
    """The engine's config: a change here needs a reload."""
    toolkit: list[FileChange]
    """The toolkit's config and the CDI spec: read at every container start."""

    @property
    def files(self) -> list[FileChange]:
        return [*self.engine, *self.toolkit]

    @property
    def changed(self) -> list[FileChange]:
        return [change for change in self.files if change.changed]

    @property
    def engine_changed(self) -> bool:
        return any(change.changed for change in self.engine)


def plan_host(config: NodeConfig, host: Host) -> HostPlan:
    """Raises a UserError (naming the file) when a host file cannot be merged with."""
    settings = config.runtime
    if config.device_list_strategy == "cdi" and not settings.enable_cdi:
        settings = settings.replace(enable_cdi=True)
    if not host.path(settings.binary_path).exists():
        raise HostPathError(
            f"{settings.binary_path} is not on the host: install the NVIDIA container toolkit "
            "there, or set the pool's runtime.binaryPath"
        )
    return HostPlan(
        engine=ENGINES[settings.engine](settings, host),
        toolkit=[*toolkit.plan(config, host), *cdi.plan(config, host)],
    )
