"""GetPreferredAllocation's choices: NVLink-richest GPU sets, replicas spread or packed."""

from __future__ import annotations

from typing import Any

import pytest
from builders import gpu_uuid, nvlink_box, resource_settings

from gpuconf.node.devices import build_devices
from gpuconf.node.kubelet.preferred import best_gpu_set, preferred_ids
from gpuconf.node.nvml.api import GpuInfo
from gpuconf.node.resource_view import ResourceView
from gpuconf.node.topology import CROSS_NUMA_SCORE, NVLINK_SCORE, SAME_NUMA_SCORE, topology_of


def gpu_info(data: dict[str, Any]) -> GpuInfo:
    return GpuInfo(
        index=data["index"],
        uuid=data["uuid"],
        name=data["name"],
        memory_mib=data["memoryMiB"],
        pci_bus_id=data["pciBusId"],
        numa_node=data["numaNode"],
        nvlinks={int(peer): links for peer, links in data["nvlinks"].items()},
    )


BOX = [gpu_info(g) for g in nvlink_box()]
TOPOLOGY = topology_of(BOX)


def view(sharing: dict[str, Any], indices: list[int], policy: str = "spread") -> ResourceView:
    settings = resource_settings(
        {
            "name": "gpuconf.dev/h100",
            "class": "h100",
            "gpus": {"default": indices},
            "sharing": sharing,
            "allocationPolicy": policy,
        }
    )
    devices = build_devices(settings, {g.index: g for g in BOX}, indices).devices
    return ResourceView(settings, "envvar", devices, frozenset(d.id for d in devices), TOPOLOGY)


def test_pairs_score_100_per_nvlink_then_numa_locality() -> None:
    no_links = [
        GpuInfo(0, "GPU-a", "x", 1, "0000:01:00.0", numa_node=0),
        GpuInfo(1, "GPU-b", "x", 1, "0000:02:00.0", numa_node=0),
        GpuInfo(2, "GPU-c", "x", 1, "0000:81:00.0", numa_node=1),
    ]
    assert TOPOLOGY.pair(0, 1) == 2 * NVLINK_SCORE
    assert TOPOLOGY.pair(4, 0) == 2 * NVLINK_SCORE
    assert topology_of(no_links).pair(0, 1) == SAME_NUMA_SCORE
    assert topology_of(no_links).pair(1, 2) == CROSS_NUMA_SCORE


@pytest.mark.parametrize(
    ("available", "must_include", "size", "expected"),
    [
        pytest.param([1, 2, 3, 4, 5, 6, 7], [], 2, [2, 3], id="busy-gpu0-leaves-one-double-link"),
        pytest.param([0, 2, 3, 4, 5, 6, 7], [], 4, [0, 2, 3, 4], id="four-with-most-links"),
        pytest.param(
            [0, 2, 3, 4, 5, 6, 7], [5], 4, [4, 5, 6, 7], id="must-include-pulls-to-its-quad"
        ),
        pytest.param([0, 1, 2, 3, 4, 5, 6, 7], [], 8, list(range(8)), id="everything"),
        pytest.param([2, 3], [], 4, [2, 3], id="fewer-than-asked"),
    ],
)
def test_best_gpu_set_is_the_exact_optimum(
    available: list[int], must_include: list[int], size: int, expected: list[int]
) -> None:
    assert best_gpu_set(TOPOLOGY, available, must_include, size) == expected


def test_beyond_eight_candidates_a_greedy_search_still_finds_a_clique() -> None:
    gpus = [
        GpuInfo(i, f"GPU-{i}", "x", 1, f"0000:{i:02x}:00.0", numa_node=i % 2,
                nvlinks={p: 4 for p in range(8, 12) if p != i} if i >= 8 else {})
        for i in range(12)
    ]  # fmt: skip
    assert best_gpu_set(topology_of(gpus), list(range(12)), [], 4) == [8, 9, 10, 11]


def test_whole_gpu_ids_map_back_to_uuids() -> None:
    whole = view({"strategy": "none"}, list(range(8)))
    available = [gpu_uuid(i) for i in range(8) if i != 1]
    assert preferred_ids(whole, available, [], 4) == [gpu_uuid(i) for i in (0, 2, 3, 4)]


def test_replicas_spread_over_the_least_used_gpus() -> None:
    shared = view({"strategy": "time-slicing", "replicas": 3}, [0, 1, 2])
    # GPU 0 has two replicas in use, GPU 1 one, GPU 2 none.
    available = [f"{gpu_uuid(0)}::2", f"{gpu_uuid(1)}::1", f"{gpu_uuid(1)}::2"]
    available += [f"{gpu_uuid(2)}::{n}" for n in range(3)]
    assert preferred_ids(shared, available, [], 3) == [
        f"{gpu_uuid(2)}::0",
        f"{gpu_uuid(1)}::1",
        f"{gpu_uuid(2)}::1",
    ]


def test_replicas_pack_onto_the_busiest_gpu() -> None:
    shared = view({"strategy": "time-slicing", "replicas": 3}, [0, 1, 2], policy="pack")
    available = [f"{gpu_uuid(0)}::2", f"{gpu_uuid(1)}::1", f"{gpu_uuid(1)}::2"]
    available += [f"{gpu_uuid(2)}::{n}" for n in range(3)]
    assert preferred_ids(shared, available, [], 3) == [
        f"{gpu_uuid(0)}::2",
        f"{gpu_uuid(1)}::1",
        f"{gpu_uuid(1)}::2",
    ]


def test_must_include_is_always_kept() -> None:
    shared = view({"strategy": "time-slicing", "replicas": 2}, [0, 1])
    available = [f"{gpu_uuid(i)}::{n}" for i in (0, 1) for n in (0, 1)]
    chosen = preferred_ids(shared, available, [f"{gpu_uuid(0)}::1"], 2)
    assert chosen == [f"{gpu_uuid(0)}::1", f"{gpu_uuid(1)}::0"]
