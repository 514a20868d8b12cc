"""Everything the gRPC handlers of one resource read, swapped as a whole on every change."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from gpuconf.api.node_config import ResourceSettings
from gpuconf.api.node_facts import DeviceListStrategy
from gpuconf.node.devices import PluginDevice
from gpuconf.node.topology import Topology

HEALTHY = "Healthy"
UNHEALTHY = "Unhealthy"


@dataclass(frozen=True)
class ResourceView:
    resource: ResourceSettings
    device_list_strategy: DeviceListStrategy
    devices: tuple[PluginDevice, ...]
    healthy_ids: frozenset[str]
    topology: Topology = field(default_factory=Topology)
    by_id: Mapping[str, PluginDevice] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "by_id", {device.id: device for device in self.devices})

    def health_of(self, device: PluginDevice) -> str:
        return HEALTHY if device.id in self.healthy_ids else UNHEALTHY

    def advertised(self) -> tuple[tuple[str, str, int | None], ...]:
        """(ID, health, NUMA node) of every device: what ListAndWatch sends, comparable."""
        return tuple((d.id, self.health_of(d), d.numa_node) for d in self.devices)

    @property
    def shared(self) -> bool:
        return self.resource.sharing.replicas > 1
