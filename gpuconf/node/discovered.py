"""The GPUs of this node over time: those NVML sees now, and those it saw before."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from gpuconf.node.nvml.api import GpuInfo


@dataclass(frozen=True)
class DiscoveredInventory:
    known: Mapping[int, GpuInfo] = field(default_factory=dict)
    """The last GPU seen at each index, including GPUs that have vanished since."""
    present: frozenset[int] = frozenset()

    @property
    def vanished(self) -> frozenset[int]:
        return frozenset(self.known) - self.present

    def present_gpus(self) -> list[GpuInfo]:
        return [self.known[i] for i in sorted(self.present)]

    def advance(self, discovered: Sequence[GpuInfo]) -> DiscoveredInventory:
        known = dict(self.known)
        known.update({gpu.index: gpu for gpu in discovered})
        return DiscoveredInventory(
            dict(sorted(known.items())), frozenset(gpu.index for gpu in discovered)
        )
