"""Jetson's integrated GPU is found from the SoC's files, the way NVIDIA's plugin detects Tegra."""

from __future__ import annotations

from pathlib import Path

import pytest
from builders import jetson_root

from gpuconf.node.nvml.api import NvmlError
from gpuconf.node.nvml.select import open_nvml
from gpuconf.node.nvml.tegra import IGPU_ID, TegraGpu, is_tegra, l4t_release


def test_an_orin_module_has_one_gpu_named_as_nvml_names_it(tmp_path: Path) -> None:
    (gpu,) = TegraGpu(jetson_root(tmp_path)).devices()
    assert (gpu.index, gpu.uuid, gpu.name) == (0, IGPU_ID, "Orin (nvgpu)")
    assert gpu.memory_mib == 64_335_836 // 1024
    assert not gpu.mig_enabled
    assert gpu.nvlinks == {}


def test_a_xavier_module_is_told_apart_by_its_chip_id(tmp_path: Path) -> None:
    (gpu,) = TegraGpu(jetson_root(tmp_path, chip_id=0x19, release=None)).devices()
    assert gpu.name == "Xavier"


def test_the_driver_version_is_the_l4t_release(tmp_path: Path) -> None:
    assert TegraGpu(jetson_root(tmp_path)).driver_version() == "L4T 36.4.3"


def test_without_the_release_file_the_l4t_release_is_unknown(tmp_path: Path) -> None:
    assert TegraGpu(jetson_root(tmp_path, release=None)).driver_version() == "L4T unknown"


@pytest.mark.parametrize(
    ("line", "release"),
    [
        ("# R36 (release), REVISION: 4.3, GCID: 38968081, BOARD: generic", "36.4.3"),
        ("# R35 (release), REVISION: 4.1, GCID: 33958178, BOARD: t186ref", "35.4.1"),
        ("R36 release 4.3", None),
    ],
)
def test_l4t_release_lines_parse(line: str, release: str | None) -> None:
    assert l4t_release(line) == release


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        ({"release": "# R36 (release), REVISION: 4.3\n", "family": None}, True),
        ({"release": None, "family": "Tegra"}, True),
        ({"release": None, "family": "tegra234"}, True),
        ({"release": None, "family": "Snapdragon"}, False),
        ({"release": None, "family": None}, False),
    ],
    ids=["release-file-only", "family-only", "lowercase-family", "other-soc", "no-files"],
)
def test_tegra_is_detected_like_nvidia_plugin_does(
    tmp_path: Path, files: dict[str, str | None], expected: bool
) -> None:
    assert is_tegra(jetson_root(tmp_path, **files)) is expected  # type: ignore[arg-type]


def test_a_machine_that_is_not_a_jetson_is_refused_with_the_files_looked_for(
    tmp_path: Path,
) -> None:
    with pytest.raises(NvmlError, match=r"not a Jetson: neither .*nv_tegra_release"):
        TegraGpu(jetson_root(tmp_path, release=None, family="Snapdragon"))


def test_an_unknown_chip_is_an_error_naming_the_file(tmp_path: Path) -> None:
    gpu = TegraGpu(jetson_root(tmp_path, chip_id=0x26))
    with pytest.raises(NvmlError, match=r"soc_id: unknown Tegra chip id '38'"):
        gpu.devices()


def test_there_are_no_xid_events_to_wait_for(tmp_path: Path) -> None:
    assert TegraGpu(jetson_root(tmp_path)).wait_for_events(0.01) == ()


def test_the_command_line_opens_tegra_discovery_under_a_root(tmp_path: Path) -> None:
    nvml = open_nvml(f"tegra:{jetson_root(tmp_path)}")
    assert isinstance(nvml, TegraGpu)
    assert [g.name for g in nvml.devices()] == ["Orin (nvgpu)"]


def test_auto_picks_tegra_discovery_where_the_host_shows_tegra_files(tmp_path: Path) -> None:
    nvml = open_nvml("auto", host_root=jetson_root(tmp_path, release=None))
    assert isinstance(nvml, TegraGpu)


def test_auto_picks_nvml_elsewhere(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from gpuconf.node.nvml import pynvml_backend

    class Opened:
        pass

    monkeypatch.setattr(pynvml_backend, "PynvmlNvml", Opened)
    assert isinstance(open_nvml("auto", host_root=tmp_path), Opened)


def test_an_unknown_source_names_every_choice() -> None:
    with pytest.raises(ValueError, match="'real', 'tegra', 'tegra:DIR', 'auto' or 'fake:FILE'"):
        open_nvml("nvml")
