"""GetPreferredAllocation: which of the available devices a container should get.

Whole GPUs: the set with the most NVLinks between its members (exhaustive search when
few GPUs are candidates, greedy beyond). Replicas and MIG devices: spread over physical
GPUs, fewest already-used first, or pack onto the busiest, per the resource's policy.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import combinations

from gpuconf.node.resource_view import ResourceView
from gpuconf.node.topology import Topology

EXACT_SEARCH_LIMIT = 8
"""Up to this many candidate GPUs every combination is scored; beyond, greedy."""


def preferred_ids(
    view: ResourceView, available: Sequence[str], must_include: Sequence[str], size: int
) -> list[str]:
    known = [i for i in dict.fromkeys(available) if i in view.by_id]
    required = [i for i in dict.fromkeys(must_include) if i in view.by_id]
    if size <= len(required):
        return required
    if view.shared or view.resource.mig_profile is not None:
        return _by_policy(view, known, required, size)
    return _by_topology(view, known, required, size)


def _by_topology(
    view: ResourceView, available: list[str], required: list[str], size: int
) -> list[str]:
    index_of = {device_id: view.by_id[device_id].gpu_index for device_id in available + required}
    id_of = {index: device_id for device_id, index in index_of.items()}
    chosen = best_gpu_set(
        view.topology,
        [index_of[i] for i in available],
        [index_of[i] for i in required],
        size,
    )
    return [id_of[index] for index in chosen]


def best_gpu_set(
    topology: Topology, available: Sequence[int], must_include: Sequence[int], size: int
) -> list[int]:
    """The ``size`` GPU indices holding ``must_include`` with the highest pair score, sorted."""
    required = sorted(set(must_include))
    candidates = sorted(set(available) - set(required))
    wanted = size - len(required)
    if wanted <= 0:
        return required
    if len(candidates) <= wanted:
        return sorted(required + candidates)
    if len(candidates) + len(required) <= EXACT_SEARCH_LIMIT:
        return _exact(topology, candidates, required, wanted)
    return _greedy(topology, candidates, required, wanted)


def _exact(
    topology: Topology, candidates: list[int], required: list[int], wanted: int
) -> list[int]:
    best: tuple[int, ...] = ()
    best_score = -1
    for extra in combinations(candidates, wanted):  # lexicographic, so ties keep low indices
        score = topology.score((*required, *extra))
        if score > best_score:
            best, best_score = extra, score
    return sorted((*required, *best))


def _greedy(
    topology: Topology, candidates: list[int], required: list[int], wanted: int
) -> list[int]:
    chosen = list(required)
    left = list(candidates)
    if not chosen:
        pair = max(combinations(left, 2), key=lambda p: topology.pair(*p))
        chosen = list(pair)
        left = [i for i in left if i not in pair]
        wanted -= 2
    for _ in range(wanted):
        gain = {i: sum(topology.pair(i, c) for c in chosen) for i in left}
        pick = max(left, key=lambda i: (gain[i], -i))
        chosen.append(pick)
        left.remove(pick)
    return sorted(chosen)


def _by_policy(
    view: ResourceView, available: list[str], required: list[str], size: int
) -> list[str]:
    # MIG devices spread over their parent GPUs; replicas over the unit they share.
    def unit_of(device_id: str) -> str:
        device = view.by_id[device_id]
        return device.visible_uuid if view.shared else device.gpu_uuid

    free = set(available) - set(required)
    units = list(dict.fromkeys(unit_of(d.id) for d in view.devices))
    used = dict.fromkeys(units, 0)
    for device in view.devices:
        if device.id not in free:
            used[unit_of(device.id)] += 1
    queue = {unit: [d for d in available if d in free and unit_of(d) == unit] for unit in units}
    chosen = list(required)
    pack = view.resource.allocation_policy == "pack"
    while len(chosen) < size:
        open_units = [u for u in units if queue[u]]
        if not open_units:
            break
        if pack:
            unit = max(open_units, key=lambda u: (used[u], -units.index(u)))
        else:
            unit = min(open_units, key=lambda u: (used[u], units.index(u)))
        chosen.append(queue[unit].pop(0))
        used[unit] += 1
    return chosen
