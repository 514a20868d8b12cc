"""Models a cluster declares in spec.gpuModels work wherever a catalog name does, and are checked
like the catalog's: incoherent ones and clashing names are refused where they are written."""

from __future__ import annotations

from typing import Any

import pytest
from builders import DECLARED_H20, cluster, configmap_data, errors, load_yaml, pool, rendered, valid

from gpuconf.formats.yaml_writer import dump

# A made-up part with a made-up MIG geometry: only its coherence matters here.
LAB_GPU: dict[str, Any] = {
    "name": "Lab-GPU-96GB",
    "nvmlName": "Lab GPU 96GB",
    "memoryMiB": 98304,
    "pciDeviceId": "0xABCD",
    "architecture": "Hopper",
    "computeCapability": "9.0",
    "mig": {
        "computeSlices": 7,
        "memorySlices": 8,
        "profiles": {
            "1g.12gb": {"compute": 1, "memory": 1, "max": 7, "memoryMiB": 11264},
            "3g.48gb": {"compute": 3, "memory": 4, "max": 2, "memoryMiB": 46592},
        },
        "balanced": {"1g.12gb": 4, "3g.48gb": 1},
    },
}


def _whole(name: str, model: Any) -> dict[str, Any]:
    return {"name": name, "select": {"model": model}}


def _messages(document: dict[str, Any]) -> list[tuple[str, str]]:
    from gpuconf.diagnostics import format_path

    return [(format_path(d.path), d.message) for d in errors(document)]


def test_a_declared_model_names_a_pool_a_node_gpu_and_a_class() -> None:
    h20 = pool(
        "h20", "H20", 2, size=3, nodes=[{"name": "n1", "gpus": [{"index": 0, "model": "H20"}]}]
    )
    document = cluster([h20], [_whole("h20", ["H20"])], gpuModels=[DECLARED_H20])
    found = valid(document)
    (resolved,) = found.classes
    assert resolved.devices == 1 + 2 * 2
    tree = rendered(document)
    config = configmap_data(tree, "pools/h20/configmap-node-config.yaml", "node-config.yaml")
    assert {g["nvmlName"] for g in config["inventory"]["default"]} == {"NVIDIA H20"}
    assert config["inventory"]["nodes"]["n1"][0]["memoryMiB"] == 97871


def test_a_dra_selector_names_a_declared_model_by_its_nvml_name() -> None:
    document = cluster([pool("h20", "H20", 2)], [_whole("h20", "H20")], gpuModels=[DECLARED_H20])
    document["spec"]["allocation"] = "dra"
    tree = rendered(document)
    device_class = load_yaml(tree["cluster/deviceclass-h20.yaml"])
    (selector,) = device_class["spec"]["selectors"]
    assert "'NVIDIA H20'" in selector["cel"]["expression"]


def test_a_declared_mig_model_is_partitioned_and_matched_by_its_pci_id() -> None:
    lab = pool(
        "lab",
        "Lab-GPU-96GB",
        1,
        size=2,
        nodes=[{"name": "n1", "gpus": [{"index": 0, "model": "A100-SXM4-80GB"}]}],
        sharing=[{"strategy": "mig", "layout": "all-balanced"}],
    )
    classes = [{"name": "small", "select": {"migProfile": "1g.12gb"}}]
    tree = rendered(cluster([lab], classes, gpuModels=[LAB_GPU]))
    mig_parted = configmap_data(
        tree, "mig-manager/configmap-gpuconf-mig-parted-config.yaml", "config.yaml"
    )
    by_filter = {e["device-filter"][0]: e for e in mig_parted["mig-configs"]["gpuconf-lab"]}
    assert by_filter["0xABCD10DE"]["mig-devices"] == {"1g.12gb": 4, "3g.48gb": 1}
    assert by_filter["0x20B210DE"]["mig-devices"] == {"1g.10gb": 2, "2g.20gb": 1, "3g.40gb": 1}


def test_a_declared_mig_layout_is_checked_against_its_profiles() -> None:
    lab = pool("lab", "Lab-GPU-96GB", 1, sharing=[{"strategy": "mig", "layout": {"3g.48gb": 3}}])
    assert _messages(cluster([lab], [], gpuModels=[LAB_GPU])) == [
        (
            "spec.nodePools[0].sharing[0].layout.3g.48gb",
            "GPU 0 of pool 'lab': Lab-GPU-96GB fits at most 2×3g.48gb, not 3",
        )
    ]


def test_a_name_the_catalog_has_is_refused_where_it_is_declared() -> None:
    clash = DECLARED_H20 | {"name": "L40S", "nvmlName": "Our L40S"}
    found = errors(cluster([pool("p", "L40S", 1)], [], gpuModels=[clash]))
    assert [(d.path, d.message, d.hint) for d in found] == [
        (
            ("spec", "gpuModels", 0, "name"),
            "GPU model 'L40S' is already in the catalog (NVIDIA L40S, 46068 MiB)",
            "remove this declaration to use the catalog's, or give yours another name",
        )
    ]
    assert (found[0].line, found[0].column) == (10, 5)


def test_a_model_declared_twice_is_refused_at_the_second() -> None:
    document = cluster([pool("p", "H20", 1)], [], gpuModels=[DECLARED_H20, DECLARED_H20])
    assert _messages(document) == [("spec.gpuModels[1].name", "GPU model 'H20' is declared twice")]


def test_a_second_name_for_a_catalog_gpu_is_refused() -> None:
    alias = DECLARED_H20 | {"name": "Hopper-80", "nvmlName": "NVIDIA H100 80GB HBM3"}
    document = cluster([pool("p", "Hopper-80", 1)], [], gpuModels=[alias])
    assert _messages(document) == [
        (
            "spec.gpuModels[0].nvmlName",
            "NVML name 'NVIDIA H100 80GB HBM3' is the catalog's 'H100-SXM5-80GB'",
        )
    ]


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (
            {"integrated": True},
            [
                (
                    "spec.gpuModels[0].pciDeviceId",
                    "an integrated GPU is part of its SoC and has no PCI device id",
                ),
                ("spec.gpuModels[0].mig", "integrated GPUs (Jetson/Tegra) have no MIG"),
                (
                    "spec.nodePools[0].gpus.model",
                    "Lab-GPU-96GB is an integrated GPU (Jetson/Tegra)",
                ),
            ],
        ),
        (
            {"pciDeviceId": None},
            [
                (
                    "spec.gpuModels[0].pciDeviceId",
                    "Lab-GPU-96GB has MIG profiles but no PCI device id",
                )
            ],
        ),
        (
            {"memoryMiB": 40960},
            [
                (
                    "spec.gpuModels[0].mig.profiles.3g.48gb.memoryMiB",
                    "profile 3g.48gb has 46592 MiB, more than the GPU's 40960 MiB",
                )
            ],
        ),
    ],
    ids=["integrated-with-pci-and-mig", "mig-without-pci-id", "profile-bigger-than-gpu"],
)
def test_an_incoherent_model_is_refused_at_the_key_at_fault(
    change: dict[str, Any], expected: list[tuple[str, str]]
) -> None:
    model = {k: v for k, v in (LAB_GPU | change).items() if v is not None}
    assert _messages(cluster([pool("p", "Lab-GPU-96GB", 1)], [], gpuModels=[model])) == expected


def test_an_incoherent_mig_geometry_is_refused_profile_by_profile() -> None:
    mig = {
        "computeSlices": 7,
        "memorySlices": 8,
        "profiles": {"2g.24gb": {"compute": 1, "memory": 3, "max": 3, "memoryMiB": 1024}},
        "balanced": {"1g.12gb": 1},
    }
    model = LAB_GPU | {"mig": mig}
    assert _messages(cluster([pool("p", "Lab-GPU-96GB", 1)], [], gpuModels=[model])) == [
        ("spec.gpuModels[0].mig.profiles.2g.24gb.compute",
         "profile 2g.24gb takes 2 compute slices by its name, not 1"),
        ("spec.gpuModels[0].mig.profiles.2g.24gb.max",
         "3×2g.24gb needs 3 compute and 9 memory slices; the GPU has 7 and 8"),
        ("spec.gpuModels[0].mig.balanced.1g.12gb",
         "the balanced layout names 1g.12gb, which is not among the profiles"),
    ]  # fmt: skip


def test_a_malformed_pci_id_says_how_to_write_it() -> None:
    from gpuconf.compiler.validate import validate
    from gpuconf.formats.located_yaml import parse_text

    document = cluster(
        [pool("p", "H20", 1)], [], gpuModels=[DECLARED_H20 | {"pciDeviceId": "2329"}]
    )
    outcome = validate(parse_text(dump(document), "cluster.yaml"), valid_catalog())
    assert isinstance(outcome, list)
    (problem,) = outcome
    assert problem.message == "'2329' is not a PCI device id"
    assert "lspci -nn" in problem.hint


def valid_catalog() -> Any:
    from builders import CATALOG

    return CATALOG
