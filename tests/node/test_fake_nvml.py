from __future__ import annotations

import os
from pathlib import Path

import pytest

from gpuconf.node.nvml.api import NvmlError, XidEvent
from gpuconf.node.nvml.fake import FakeNvml
from gpuconf.node.nvml.select import open_nvml

TWO_GPUS = """\
driverVersion: "550.54.15"
gpus:
  - {index: 0, uuid: GPU-0, name: NVIDIA H100 80GB HBM3, memoryMiB: 81559,
     pciBusId: "0000:18:00.0", numaNode: 0, nvlinks: {1: 18},
     migEnabled: true, migDevices: [{uuid: MIG-0, profile: 1g.10gb, gpuInstanceId: 7, computeInstanceId: 0}]}
  - {index: 1, uuid: GPU-1, name: NVIDIA H100 80GB HBM3, memoryMiB: 81559, pciBusId: "0000:19:00.0"}
events: xid.jsonl
"""

ONE_GPU = """\
gpus:
  - {index: 0, uuid: GPU-0, name: NVIDIA H100 80GB HBM3, memoryMiB: 81559, pciBusId: "0000:18:00.0"}
events: xid.jsonl
"""


def write(path: Path, text: str) -> Path:
    # Replace, as a ConfigMap or an editor would, so the inode changes too.
    temporary = path.with_name(path.name + ".new")
    temporary.write_text(text)
    os.replace(temporary, path)
    return path


def append(path: Path, text: str) -> None:
    with path.open("a") as stream:
        stream.write(text)


@pytest.fixture
def fake_file(tmp_path: Path) -> Path:
    return write(tmp_path / "fake.yaml", TWO_GPUS)


def test_devices_come_from_the_file(fake_file: Path) -> None:
    nvml = FakeNvml(fake_file)
    first, second = nvml.devices()
    assert nvml.driver_version() == "550.54.15"
    assert (first.uuid, first.numa_node, dict(first.nvlinks)) == ("GPU-0", 0, {1: 18})
    assert first.mig_enabled
    assert [m.profile for m in first.mig_devices] == ["1g.10gb"]
    assert (second.numa_node, dict(second.nvlinks), second.mig_enabled) == (None, {}, False)


def test_a_gpu_removed_from_the_file_has_fallen_off_the_bus(fake_file: Path) -> None:
    nvml = FakeNvml(fake_file)
    assert len(nvml.devices()) == 2
    write(fake_file, ONE_GPU)
    assert [gpu.index for gpu in nvml.devices()] == [0]
    assert nvml.driver_version() == "fake"


def test_events_appended_after_opening_are_returned_once(fake_file: Path) -> None:
    events = fake_file.parent / "xid.jsonl"
    events.write_text('{"uuid": "GPU-0", "xid": 31}\n')
    nvml = FakeNvml(fake_file)
    assert nvml.wait_for_events(0.05) == []
    append(
        events, '{"uuid": "GPU-0", "xid": 79}\n{"uuid": "MIG-0", "xid": 48, "gpuInstanceId": 7}\n'
    )
    assert nvml.wait_for_events(1.0) == [
        XidEvent("GPU-0", 79),
        XidEvent("MIG-0", 48, gpu_instance_id=7),
    ]
    assert nvml.wait_for_events(0.05) == []


def test_a_partial_last_line_waits_until_it_is_complete(fake_file: Path) -> None:
    events = fake_file.parent / "xid.jsonl"
    nvml = FakeNvml(fake_file)
    append(events, '{"uuid": "GPU-1", ')
    assert nvml.wait_for_events(0.05) == []
    append(events, '"xid": 79}\n')
    assert nvml.wait_for_events(1.0) == [XidEvent("GPU-1", 79)]


def test_waiting_without_events_returns_empty_after_the_timeout(fake_file: Path) -> None:
    assert FakeNvml(fake_file).wait_for_events(0.1) == []


def test_a_malformed_event_line_names_its_line_in_the_file_and_costs_no_other_event(
    fake_file: Path,
) -> None:
    events = fake_file.parent / "xid.jsonl"
    events.write_text('{"uuid": "GPU-0", "xid": 31}\n{"uuid": "GPU-0", "xid": 43}\n')
    nvml = FakeNvml(fake_file)
    append(events, '{"uuid": "GPU-0", "xid": 79}\n{"xid": "79"}\n{"uuid": "GPU-1", "xid": 48}\n')
    assert nvml.wait_for_events(0.5) == [XidEvent("GPU-0", 79)]
    with pytest.raises(NvmlError, match=r"xid\.jsonl:4: an event is"):
        nvml.wait_for_events(0.5)
    assert nvml.wait_for_events(0.5) == [XidEvent("GPU-1", 48)]


def test_line_numbers_start_again_when_the_event_file_is_truncated(fake_file: Path) -> None:
    events = fake_file.parent / "xid.jsonl"
    nvml = FakeNvml(fake_file)
    append(events, '{"uuid": "GPU-0", "xid": 79}\n{"uuid": "GPU-0", "xid": 48}\n')
    assert len(nvml.wait_for_events(0.5)) == 2
    events.write_text("not json\n")
    with pytest.raises(NvmlError, match=r"xid\.jsonl:1: not a JSON event line"):
        nvml.wait_for_events(0.5)


def test_a_malformed_file_says_where_in_the_words_of_cluster_files(tmp_path: Path) -> None:
    bad = write(
        tmp_path / "fake.yaml",
        "gpus:\n  - {index: 0, uuid: GPU-0, name: T4, memoryMiB: lots, migEnabled: null,\n"
        '     computeCapability: "8", numaNode: -1, nvlinks: {}, bogus: 1}\n',
    )
    with pytest.raises(NvmlError) as raised:
        FakeNvml(bad)
    assert str(raised.value).splitlines()[1:] == [
        f"{bad.as_posix()}:2:5: gpus[0].pciBusId: required key 'pciBusId' is missing",
        f"{bad.as_posix()}:2:39: gpus[0].memoryMiB: should be an integer, not 'lots'",
        f"{bad.as_posix()}:2:56: gpus[0].migEnabled: should be true or false, not null",
        f"{bad.as_posix()}:3:6: gpus[0].computeCapability: '8' is not MAJOR.MINOR "
        '(hint: write it quoted as nvidia-smi prints it, e.g. "8.0")',
        f"{bad.as_posix()}:3:57: gpus[0].bogus: unknown key 'bogus'",
    ]


def test_invalid_yaml_says_where(tmp_path: Path) -> None:
    bad = write(tmp_path / "fake.yaml", "gpus: [\n")
    with pytest.raises(NvmlError, match=r"fake\.yaml:\d+:\d+: .*YAML syntax error"):
        FakeNvml(bad)


def test_repeated_gpu_index_is_refused(tmp_path: Path) -> None:
    gpu = '{index: 0, uuid: GPU-%s, name: T4, memoryMiB: 15360, pciBusId: "0000:18:00.0"}'
    bad = write(tmp_path / "fake.yaml", f"gpus:\n  - {gpu % 'a'}\n  - {gpu % 'b'}\n")
    with pytest.raises(NvmlError, match="GPU index repeated: 0"):
        FakeNvml(bad)


def test_a_file_broken_later_raises_then_recovers(fake_file: Path) -> None:
    nvml = FakeNvml(fake_file)
    write(fake_file, "gpus: 3\n")
    with pytest.raises(NvmlError, match="gpus"):
        nvml.devices()
    write(fake_file, ONE_GPU)
    assert len(nvml.devices()) == 1


def test_open_nvml_picks_the_fake(fake_file: Path) -> None:
    assert isinstance(open_nvml(f"fake:{fake_file}"), FakeNvml)


@pytest.mark.parametrize("spec", ["", "fake:", "fake", "gpu", "Real"])
def test_open_nvml_refuses_unknown_sources(spec: str) -> None:
    with pytest.raises(ValueError, match="use 'real', 'tegra', 'tegra:DIR', 'auto' or 'fake:FILE'"):
        open_nvml(spec)
