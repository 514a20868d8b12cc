"""Generated DeviceClass selectors select, on a heterogeneous inventory, exactly the class's GPUs."""

from __future__ import annotations

from typing import Any

import pytest
from builders import CATALOG, heterogeneous, valid

from gpuconf.compiler.dra.cel_proof import selected_devices
from gpuconf.compiler.dra.devices import DeviceKey, cluster_devices, expected_devices
from gpuconf.compiler.dra.selector import cel_selector
from gpuconf.gpus.dra_attributes import RELEASES, attribute_set

H100_WHOLE = [f"gpu-{i}" for i in range(6)]


def _selection(select: dict[str, Any], release: str = "v25.3.2", **extra: Any) -> set[DeviceKey]:
    result = valid(
        heterogeneous([{"name": "only", "select": select, **extra}], dra={"driverVersion": release})
    )
    resolved = result.classes[0]
    expression = cel_selector(resolved, CATALOG, attribute_set(release)).expression
    devices = cluster_devices(result.cluster, result.inventory).devices
    chosen = selected_devices(expression, devices)
    assert isinstance(chosen, frozenset), chosen
    assert chosen == expected_devices(resolved, devices)
    return set(chosen)


@pytest.mark.parametrize("release", RELEASES)
def test_minimum_memory_selects_whole_gpus_with_enough_memory(release: str) -> None:
    chosen = _selection({"memoryAtLeast": "40Gi"}, release)
    h100 = {(p, n, d) for p, n, d in chosen if p == "h100"}
    assert {d for _, _, d in h100} == set(H100_WHOLE)
    assert {n for _, n, _ in h100} == {"h100-a", None}
    assert {(p, d) for p, _, d in chosen if p == "l40s"} == {("l40s", f"gpu-{i}") for i in range(4)}
    assert not any(p == "l4" for p, _, _ in chosen)


@pytest.mark.parametrize("release", RELEASES)
def test_minimum_memory_in_mib_excludes_smaller_gpus(release: str) -> None:
    # L40S has 46068 MiB: 46069 leaves only the H100s.
    chosen = _selection({"memoryAtLeast": "46069"}, release)
    assert {p for p, _, _ in chosen} == {"h100"}


@pytest.mark.parametrize("release", RELEASES)
def test_model_selects_by_product_name(release: str) -> None:
    chosen = _selection({"model": "L4"}, release)
    assert chosen == {("l4", None, "gpu-0")}


@pytest.mark.parametrize("release", RELEASES)
def test_mig_profile_selects_the_mig_devices_of_partitioned_gpus(release: str) -> None:
    chosen = _selection({"migProfile": "1g.10gb"}, release)
    names = {d for _, n, d in chosen if n == "h100-a"}
    assert names == {f"gpu-{g}-mig-1g.10gb-{k}" for g in (6, 7) for k in range(7)}


def test_mig_profile_with_indices_uses_the_parent_index_up_to_v25_3() -> None:
    chosen = _selection({"migProfile": "1g.10gb", "indices": [7]})
    assert {d.split("-mig-")[0] for _, _, d in chosen} == {"gpu-7"}


def test_indices_select_by_gpu_index_up_to_v25_3() -> None:
    chosen = _selection({"model": "H100-SXM5-80GB", "indices": [0, 3]})
    assert {d for _, _, d in chosen} == {"gpu-0", "gpu-3"}


def test_nodes_whose_gpus_have_uuids_are_selected_by_uuid() -> None:
    result = valid(
        heterogeneous([{"name": "mine", "select": {"nodes": ["h100-a"], "indices": [1, 2]}}])
    )
    expression = cel_selector(
        result.classes[0], CATALOG, attribute_set(result.cluster.spec.dra.driver_version)
    ).expression
    assert "uuid in ['GPU-00000000-0000-4000-8000-000000000001'" in expression
    chosen = selected_devices(expression, cluster_devices(result.cluster, result.inventory).devices)
    assert chosen == {("h100", "h100-a", "gpu-1"), ("h100", "h100-a", "gpu-2")}


@pytest.mark.parametrize(
    ("select", "clause"),
    [
        ({"model": "L4"}, "device.attributes['gpu.nvidia.com'].productName == 'NVIDIA L4'"),
        (
            {"memoryAtLeast": "40Gi"},
            "device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('40Gi')) >= 0",
        ),
        ({"memoryAtLeast": "40960"}, "quantity('40960Mi')"),
        ({"migProfile": "1g.10gb"}, "device.attributes['gpu.nvidia.com'].type == 'mig'"),
        ({"migProfile": "1g.10gb"}, "device.attributes['gpu.nvidia.com'].profile == '1g.10gb'"),
    ],
    ids=["model", "memory-quantity", "memory-mib", "mig-type", "mig-profile"],
)
def test_selector_clause_is_written_with_the_drivers_attribute_names(
    select: dict[str, Any], clause: str
) -> None:
    result = valid(heterogeneous([{"name": "only", "select": select}]))
    expression = cel_selector(
        result.classes[0], CATALOG, attribute_set(result.cluster.spec.dra.driver_version)
    ).expression
    assert expression.startswith("device.driver == 'gpu.nvidia.com' &&\n")
    assert clause in expression
