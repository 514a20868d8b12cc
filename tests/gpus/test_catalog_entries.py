"""The catalog holds coherent, sourced facts: each entry passes the checks a declared model must."""

from __future__ import annotations

import pytest
from builders import CATALOG

from gpuconf.gpus.jetson import JETPACK_L4T, SOCS, soc_of
from gpuconf.gpus.model_checks import model_problems

NAMES = CATALOG.names()


@pytest.mark.parametrize("name", NAMES)
def test_every_entry_passes_the_checks_declared_models_must_pass(name: str) -> None:
    assert model_problems(CATALOG.models[name]) == []


@pytest.mark.parametrize("name", NAMES)
def test_discrete_gpus_have_a_pci_id_and_integrated_ones_none(name: str) -> None:
    model = CATALOG.models[name]
    assert (model.pci_device_id is None) is model.integrated


def test_no_two_discrete_gpus_share_an_nvml_name_or_pci_id() -> None:
    discrete = [m for m in CATALOG.models.values() if not m.integrated]
    assert len({m.nvml_name for m in discrete}) == len(discrete)
    assert len({m.pci_device_id for m in discrete}) == len(discrete)


@pytest.mark.parametrize("name", [n for n in NAMES if CATALOG.models[n].integrated])
def test_jetson_modules_are_named_as_their_soc_reports_them(name: str) -> None:
    model = CATALOG.models[name]
    soc = soc_of(model)
    assert soc is not None, (
        f"{name}: no Tegra SoC has compute capability {model.compute_capability}"
    )
    assert model.nvml_name == soc.gpu_name
    assert model.mig is None


def test_the_current_jetson_modules_are_catalogued() -> None:
    integrated = {n for n in NAMES if CATALOG.models[n].integrated}
    assert {
        "Jetson-AGX-Orin-64GB",
        "Jetson-AGX-Orin-32GB",
        "Jetson-Orin-NX-16GB",
        "Jetson-Orin-NX-8GB",
        "Jetson-Orin-Nano-8GB",
        "Jetson-Orin-Nano-4GB",
    } <= integrated
    assert {soc_of(CATALOG.models[n]) for n in integrated} == set(SOCS)


def test_the_a100_40gb_has_mig_parted_s_1g_10gb_four_times() -> None:
    for name in ("A100-SXM4-40GB", "A100-PCIE-40GB"):
        mig = CATALOG.models[name].mig
        assert mig is not None
        assert mig.profiles["1g.10gb"].max == 4
        assert (mig.profiles["1g.10gb"].compute, mig.profiles["1g.10gb"].memory) == (1, 2)


def test_current_data_centre_parts_are_catalogued() -> None:
    assert {
        "A10G", "A40", "L40", "L40S", "L4", "RTX-6000-Ada", "A100-PCIE-80GB",
        "Tesla-V100-SXM2-16GB", "Tesla-V100-PCIE-16GB", "Tesla-V100-PCIE-32GB",
    } <= set(NAMES)  # fmt: skip


def test_jetpack_releases_map_to_l4t_majors_some_soc_supports() -> None:
    for jetpack, l4t in JETPACK_L4T.items():
        major = int(l4t.split(".")[0])
        assert any(major in soc.l4t_majors for soc in SOCS), jetpack
        assert jetpack.split(".")[0] == {35: "5", 36: "6"}[major]
