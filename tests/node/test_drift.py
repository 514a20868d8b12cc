from __future__ import annotations

import json

from builders import expected_gpu

from gpuconf.api.node_config import ExpectedGpu
from gpuconf.node.drift import compare
from gpuconf.node.nvml.api import GpuInfo, MigDevice

H100 = "NVIDIA H100 80GB HBM3"


def declared(index: int, uuid: str | None = None, mig: dict[str, int] | None = None) -> ExpectedGpu:
    return expected_gpu(
        {
            "index": index,
            "model": "H100-80GB",
            "nvmlName": H100,
            "memoryMiB": 81559,
            "uuid": uuid,
            "mig": mig,
        }
    )


def found(index: int, name: str = H100, mig: dict[str, int] | None = None) -> GpuInfo:
    devices = [
        MigDevice(f"MIG-{index}-{profile}-{n}", profile, n, 0)
        for profile, count in (mig or {}).items()
        for n in range(count)
    ]
    return GpuInfo(
        index=index,
        uuid=f"GPU-{index}",
        name=name,
        memory_mib=81559,
        pci_bus_id=f"0000:{index:02x}:00.0",
        mig_enabled=mig is not None,
        mig_devices=devices,
    )


def test_same_inventory_matches() -> None:
    report = compare([declared(0), declared(1, uuid="GPU-1")], [found(0), found(1)])
    assert not report.drifted
    assert report.problems == []
    assert report.matching_indices == {0, 1}
    assert report.as_text() == "inventory matches: 2 GPUs as declared\n"


def test_other_model_is_drift() -> None:
    report = compare([declared(0), declared(1)], [found(0), found(1, name="Tesla T4")])
    assert report.drifted
    assert report.problems == [f"GPU 1: expected model {H100}, found Tesla T4"]
    assert report.matching_indices == {0}


def test_missing_gpu_is_drift() -> None:
    report = compare([declared(0), declared(3)], [found(0)])
    assert report.problems == ["GPU 3: declared but not found"]


def test_extra_gpu_is_drift() -> None:
    report = compare([declared(0)], [found(0), found(4, name="Tesla T4")])
    assert report.problems == ["GPU 4: found but not declared (Tesla T4)"]


def test_other_uuid_is_drift() -> None:
    report = compare([declared(0, uuid="GPU-aaaa")], [found(0)])
    assert report.problems == ["GPU 0: expected uuid GPU-aaaa, found GPU-0"]


def test_undeclared_uuid_is_not_checked() -> None:
    assert not compare([declared(0)], [found(0)]).drifted


def test_other_mig_layout_is_drift() -> None:
    report = compare(
        [declared(0, mig={"1g.10gb": 7})], [found(0, mig={"1g.10gb": 3, "3g.40gb": 1})]
    )
    assert report.problems == [
        "GPU 0: MIG layout differs: declared 7×1g.10gb, found 3×1g.10gb + 1×3g.40gb"
    ]


def test_same_mig_layout_matches() -> None:
    assert not compare([declared(0, mig={"3g.40gb": 2})], [found(0, mig={"3g.40gb": 2})]).drifted


def test_mig_enabled_but_declared_disabled_is_drift() -> None:
    report = compare([declared(0)], [found(0, mig={})])
    assert report.problems == ["GPU 0: MIG is enabled but declared disabled"]


def test_mig_declared_but_disabled_is_drift() -> None:
    report = compare([declared(0, mig={"1g.10gb": 7})], [found(0)])
    assert report.problems == ["GPU 0: MIG is declared (7×1g.10gb) but disabled"]


def test_text_report_lists_every_problem() -> None:
    report = compare([declared(0), declared(1)], [found(0, name="Tesla T4")])
    assert report.as_text() == (
        "inventory drift: 2 problem(s)\n"
        f"  - GPU 0: expected model {H100}, found Tesla T4\n"
        "  - GPU 1: declared but not found\n"
    )


def test_dict_report_is_json_ready() -> None:
    report = compare([declared(0), declared(1)], [found(0)])
    assert json.loads(json.dumps(report.as_dict())) == {
        "drifted": True,
        "matchingIndices": [0],
        "problems": ["GPU 1: declared but not found"],
    }
