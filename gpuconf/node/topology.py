"""How well each pair of GPUs talks: NVLink beats a shared NUMA node beats crossing sockets."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from itertools import combinations

from gpuconf.node.nvml.api import GpuInfo

NVLINK_SCORE = 100
"""Per NVLink between the two GPUs, as NVIDIA's plugin scores them."""
SAME_NUMA_SCORE = 20
CROSS_NUMA_SCORE = 10


@dataclass(frozen=True)
class Topology:
    pair_scores: Mapping[tuple[int, int], int] = field(default_factory=dict)
    """Score of each GPU index pair (low, high)."""

    def pair(self, a: int, b: int) -> int:
        return self.pair_scores.get((min(a, b), max(a, b)), CROSS_NUMA_SCORE)

    def score(self, indices: Iterable[int]) -> int:
        return sum(self.pair(a, b) for a, b in combinations(sorted(indices), 2))


def topology_of(gpus: Iterable[GpuInfo]) -> Topology:
    by_index = {gpu.index: gpu for gpu in gpus}
    scores: dict[tuple[int, int], int] = {}
    for a, b in combinations(sorted(by_index), 2):
        first, second = by_index[a], by_index[b]
        links = max(first.nvlinks.get(b, 0), second.nvlinks.get(a, 0))
        if links:
            scores[(a, b)] = NVLINK_SCORE * links
        elif first.numa_node is not None and first.numa_node == second.numa_node:
            scores[(a, b)] = SAME_NUMA_SCORE
        else:
            scores[(a, b)] = CROSS_NUMA_SCORE
    return Topology(scores)
