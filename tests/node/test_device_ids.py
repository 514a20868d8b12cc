"""Which device IDs a resource advertises."""

from __future__ import annotations

from typing import Any

from builders import resource_settings

from gpuconf.api.node_config import ResourceSettings
from gpuconf.node.devices import build_devices
from gpuconf.node.nvml.api import GpuInfo, MigDevice

UUID = "GPU-8a9b6f5e-1c2d-4e3f-8a9b-0c1d2e3f4a5b"


def settings(**extra: Any) -> ResourceSettings:
    data: dict[str, Any] = {
        "name": "gpuconf.dev/x",
        "class": "x",
        "gpus": {"default": [0]},
        "sharing": {"strategy": "none"},
    }
    data.update(extra)
    return resource_settings(data)


def gpu(uuid: str = UUID, **extra: Any) -> GpuInfo:
    return GpuInfo(0, uuid, "NVIDIA A100-SXM4-40GB", 40960, "0000:18:00.0", numa_node=1, **extra)


def test_a_whole_gpu_is_its_uuid_with_its_numa_node() -> None:
    built = build_devices(settings(), {0: gpu()}, [0])
    assert [(d.id, d.visible_uuid, d.numa_node) for d in built.devices] == [(UUID, UUID, 1)]
    assert built.problems == ()


def test_shared_gpus_get_numbered_replicas() -> None:
    built = build_devices(
        settings(sharing={"strategy": "time-slicing", "replicas": 3}), {0: gpu()}, [0]
    )
    assert [d.id for d in built.devices] == [f"{UUID}::0", f"{UUID}::1", f"{UUID}::2"]
    assert {d.visible_uuid for d in built.devices} == {UUID}


def test_mig_resources_offer_only_their_profile_by_mig_uuid() -> None:
    migs = (
        MigDevice("MIG-b", "1g.5gb", 9, 0),
        MigDevice("MIG-a", "1g.5gb", 7, 0),
        MigDevice("MIG-c", "3g.20gb", 1, 0),
    )
    built = build_devices(
        settings(migProfile="1g.5gb"), {0: gpu(mig_enabled=True, mig_devices=migs)}, [0]
    )
    assert [(d.id, d.mig_uuid, d.gpu_uuid) for d in built.devices] == [
        ("MIG-a", "MIG-a", UUID),
        ("MIG-b", "MIG-b", UUID),
    ]


def test_ids_longer_than_63_characters_are_refused() -> None:
    long_uuid = "GPU-" + "f" * 60
    built = build_devices(settings(), {0: gpu(long_uuid)}, [0])
    assert built.devices == ()
    assert "longer than 63 characters" in built.problems[0]


def test_missing_gpus_and_mig_disabled_gpus_are_problems_not_crashes() -> None:
    assert build_devices(settings(), {}, [3]).problems == (
        "GPU 3 of gpuconf.dev/x is not on this node",
    )
    mig = build_devices(settings(migProfile="1g.5gb"), {0: gpu()}, [0])
    assert mig.problems == ("GPU 0 of gpuconf.dev/x does not have MIG enabled",)
