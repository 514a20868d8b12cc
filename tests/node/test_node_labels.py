"""`gpuconf node labels` prints the labels NVIDIA's GPU Feature Discovery would write.

Expected values are GFD's own, from NVIDIA/k8s-device-plugin v0.20.0 (commit 1b826acc):
internal/lm/resource_test.go TestGPUResourceLabeler (a full GPU "MOCKMODEL" of 300 MiB,
compute capability 8.0, count 1, under each sharing config), TestSanitise, nvml_test.go
TestMigCapabilityLabeler and TestSharingLabeler, and nvml.go newVersionLabeler for the
driver and CUDA version labels; for MIG profiles under migStrategy mixed, resource_test.go
TestMigResourceLabeler ("mig mixed appends shared", "mig mixed rename does not append") and
mig-strategy_test.go TestMigStrategySingleLabels ("multiple mig-enabled devices returns mig
labels"), whose MIG devices come from internal/resource/testing/resource-testing.go
NewMigDevice.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from builders import GFD_MIG_SHARED, gpu_uuid, node_config, resource

from gpuconf.gpus.gfd_labels import mig_key, mig_product_name, product_name, sanitise
from gpuconf.node.commands.parser import main

# resource_test.go TestGPUResourceLabeler, "no sharing".
GFD_NO_SHARING = {
    "nvidia.com/gpu.count": "1",
    "nvidia.com/gpu.replicas": "1",
    "nvidia.com/gpu.sharing-strategy": "none",
    "nvidia.com/gpu.memory": "300",
    "nvidia.com/gpu.product": "MOCKMODEL",
    "nvidia.com/gpu.family": "ampere",
    "nvidia.com/gpu.compute.major": "8",
    "nvidia.com/gpu.compute.minor": "0",
}
# "time-slicing appends suffix and doubles count", "mps appends suffix and doubles count",
# and the two "renamed does not append suffix" cases.
GFD_SHARED = {
    ("time-slicing", False): {
        "nvidia.com/gpu.replicas": "2",
        "nvidia.com/gpu.sharing-strategy": "time-slicing",
        "nvidia.com/gpu.product": "MOCKMODEL-SHARED",
    },
    ("mps", False): {
        "nvidia.com/gpu.replicas": "2",
        "nvidia.com/gpu.sharing-strategy": "mps",
        "nvidia.com/gpu.product": "MOCKMODEL-SHARED",
    },
    ("time-slicing", True): {
        "nvidia.com/gpu.replicas": "2",
        "nvidia.com/gpu.sharing-strategy": "time-slicing",
        "nvidia.com/gpu.product": "MOCKMODEL",
    },
    ("mps", True): {
        "nvidia.com/gpu.replicas": "2",
        "nvidia.com/gpu.sharing-strategy": "mps",
        "nvidia.com/gpu.product": "MOCKMODEL",
    },
}
# nvml.go newVersionLabeler for driver "550.54.15" and CUDA 12.4.
GFD_VERSIONS = {
    "nvidia.com/cuda.driver.major": "550",
    "nvidia.com/cuda.driver.minor": "54",
    "nvidia.com/cuda.driver.rev": "15",
    "nvidia.com/cuda.runtime.major": "12",
    "nvidia.com/cuda.runtime.minor": "4",
    "nvidia.com/cuda.driver-version.major": "550",
    "nvidia.com/cuda.driver-version.minor": "54",
    "nvidia.com/cuda.driver-version.revision": "15",
    "nvidia.com/cuda.driver-version.full": "550.54.15",
    "nvidia.com/cuda.runtime-version.major": "12",
    "nvidia.com/cuda.runtime-version.minor": "4",
    "nvidia.com/cuda.runtime-version.full": "12.4",
}


def _fake_gpu(index: int, **extra: Any) -> dict[str, Any]:
    gpu = {
        "index": index,
        "uuid": gpu_uuid(index),
        "name": "MOCKMODEL",
        "memoryMiB": 300,
        "pciBusId": f"0000:{index + 16:02x}:00.0",
        "computeCapability": "8.0",
    }
    gpu.update(extra)
    return gpu


def labels(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    resources: list[dict[str, Any]],
    gpus: list[dict[str, Any]],
    machine: str | None = "  PowerEdge R750xa \n",
    **config: Any,
) -> dict[str, str]:
    fake = tmp_path / "fake.yaml"
    fake.write_text(
        yaml.safe_dump({"driverVersion": "550.54.15", "cudaDriverVersion": "12.4", "gpus": gpus})
    )
    config_file = tmp_path / "node-config.yaml"
    settings = node_config(resources, gpus=len(gpus), **config)
    settings.setdefault("labels", {"owner": "gpuconf"})
    config_file.write_text(yaml.safe_dump(settings))
    machine_file = tmp_path / "product_name"
    if machine is not None:
        machine_file.write_text(machine)
    argv = ["labels", "--config", str(config_file), "--node-name", "node-a"]
    argv += ["--nvml", f"fake:{fake}", "--machine-type-file", str(machine_file)]
    assert main(argv) == 0
    out = capsys.readouterr().out
    return dict(line.split("=", 1) for line in out.splitlines() if not line.startswith("#"))


def gfd_part(printed: dict[str, str]) -> dict[str, str]:
    return {
        k: v
        for k, v in printed.items()
        if k.startswith("nvidia.com/gpu.") and k != "nvidia.com/gpu.machine"
    }


def test_an_unshared_gpu_gets_gfd_s_labels_and_gpuconf_s(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    printed = labels(tmp_path, capsys, [resource("whole", [0])], [_fake_gpu(0)])
    assert gfd_part(printed) == GFD_NO_SHARING
    assert {k: v for k, v in printed.items() if "cuda." in k} == GFD_VERSIONS
    assert printed["nvidia.com/gpu.machine"] == "PowerEdge-R750xa"
    assert printed["nvidia.com/mig.capable"] == "false"
    assert printed["nvidia.com/mps.capable"] == "false"
    assert "nvidia.com/mig.strategy" not in printed
    assert printed["gpuconf.dev/pool"] == "h100"
    assert printed["class.gpuconf.dev/whole"] == "1"


@pytest.mark.parametrize(("strategy", "renamed"), sorted(GFD_SHARED))
def test_shared_gpus_get_gfd_s_product_suffix_unless_renamed_by_default(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], strategy: str, renamed: bool
) -> None:
    shared = resource("shared", [0], sharing={"strategy": strategy, "replicas": 2})
    printed = labels(
        tmp_path,
        capsys,
        [shared],
        [_fake_gpu(0)],
        labels={"owner": "gpuconf", "renameByDefault": renamed},
    )
    assert gfd_part(printed) == {**GFD_NO_SHARING, **GFD_SHARED[strategy, renamed]}
    assert printed["class.gpuconf.dev/shared"] == "2"
    # nvml_test.go TestSharingLabeler: MPS configured and no MIG-enabled GPU.
    assert printed["nvidia.com/mps.capable"] == str(strategy == "mps").lower()


def test_classes_that_share_differently_give_no_replicas_label(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    classes = [
        resource("shared", [0], sharing={"strategy": "time-slicing", "replicas": 4}),
        resource("whole", [1]),
    ]
    printed = labels(tmp_path, capsys, classes, [_fake_gpu(0), _fake_gpu(1)])
    assert "nvidia.com/gpu.replicas" not in printed
    assert "nvidia.com/gpu.sharing-strategy" not in printed
    assert printed["nvidia.com/gpu.product"] == "MOCKMODEL"
    assert printed["nvidia.com/gpu.count"] == "2"


def test_a_mig_capable_gpu_sets_mig_capable_and_a_missing_machine_file_says_unknown(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    gpus = [_fake_gpu(0), _fake_gpu(1, migCapable=True)]
    printed = labels(tmp_path, capsys, [resource("whole", [0, 1])], gpus, machine=None)
    assert printed["nvidia.com/mig.capable"] == "true"  # TestMigCapabilityLabeler, one of many
    assert printed["nvidia.com/gpu.machine"] == "unknown"  # machine-type.go machineTypeUnknown


def test_gfd_owner_leaves_nvidia_keys_to_gfd_and_off_prints_none(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    gfd = labels(
        tmp_path, capsys, [resource("whole", [0])], [_fake_gpu(0)], labels={"owner": "gfd"}
    )
    assert gfd == {"class.gpuconf.dev/whole": "1", "gpuconf.dev/pool": "h100"}
    off = labels(
        tmp_path, capsys, [resource("whole", [0])], [_fake_gpu(0)], labels={"owner": "off"}
    )
    assert off == {}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a space separated string", "a-space-separated-string"),
        ("some(thing)else", "somethingelse"),
        ("some ( thing )else", "some-thing-else"),
        ("NVIDIA-TITAN-X-(Pascal)", "NVIDIA-TITAN-X-Pascal"),
        (" input  with multiple   spaces   ", "input-with-multiple-spaces"),
        ("some [ / thing / ]else", "some-thing-else"),
        ("some / thing /else", "some-thing-else"),
        ("some-thing.else_new", "some-thing.else_new"),
    ],
)
def test_values_are_sanitised_as_gfd_s_test_sanitise_expects(text: str, expected: str) -> None:
    assert sanitise(text) == expected


def test_mig_enabled_gpus_are_labelled_as_gfd_s_mixed_strategy_labels_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # mig-strategy.go newGPULabelers: MIG-enabled GPUs get NewGPUResourceLabelerWithoutSharing
    # (nil config: replicas 0, strategy none, no -SHARED); newMigLabeler adds mig.strategy.
    mig = {"uuid": "MIG-00000000-0001-4000-8000-000000000001", "profile": "1g.10gb"}
    gpu = _fake_gpu(
        0, migEnabled=True, migDevices=[{**mig, "gpuInstanceId": 1, "computeInstanceId": 0}]
    )
    shared_mig = resource(
        "mig-small", [0], migProfile="1g.10gb", sharing={"strategy": "time-slicing", "replicas": 2}
    )
    printed = labels(tmp_path, capsys, [shared_mig], [gpu])
    assert gfd_part(printed) == {
        **GFD_NO_SHARING,
        "nvidia.com/gpu.replicas": "0",
        "nvidia.com/gpu.sharing-strategy": "none",
    }
    assert printed["nvidia.com/mig.strategy"] == "mixed"
    assert printed["nvidia.com/mig.capable"] == "true"
    assert printed["class.gpuconf.dev/mig-small"] == "2"


def _mig_gpu(index: int, profile: str, attributes: dict[str, int] | None) -> dict[str, Any]:
    device: dict[str, Any] = {
        "uuid": f"MIG-00000000-0001-4000-8000-00000000000{index}",
        "profile": profile,
        "gpuInstanceId": 1,
        "computeInstanceId": 0,
    }
    if attributes is not None:
        device["attributes"] = attributes
    return _fake_gpu(index, migEnabled=True, migDevices=[device])


def _nvml_attributes(
    gi: int, ci: int, memory_mb: int, sms: int = 0, engines: tuple[int, ...] = (0, 0, 0, 0, 0)
) -> dict[str, int]:
    """resource-testing.go NewMigDevice(gi, ci, gb, overrides) as nvmlDeviceGetAttributes says it."""
    copy, decoder, encoder, jpeg, ofa = engines
    return {
        "multiprocessorCount": sms,
        "sharedCopyEngineCount": copy,
        "sharedDecoderCount": decoder,
        "sharedEncoderCount": encoder,
        "sharedJpegCount": jpeg,
        "sharedOfaCount": ofa,
        "gpuInstanceSliceCount": gi,
        "computeInstanceSliceCount": ci,
        "memorySizeMB": memory_mb,
    }


def _mig_part(printed: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in printed.items() if k.startswith("nvidia.com/mig-")}


@pytest.mark.parametrize("renamed", [False, True], ids=["appends shared", "rename does not"])
def test_a_shared_mig_profile_gets_gfd_s_mixed_strategy_labels(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], renamed: bool
) -> None:
    shared = resource(
        "mig-small", [0], migProfile="1g.300gb", sharing={"strategy": "time-slicing", "replicas": 2}
    )
    gpu = _mig_gpu(0, "1g.300gb", _nvml_attributes(1, 2, 300))
    printed = labels(
        tmp_path, capsys, [shared], [gpu], labels={"owner": "gpuconf", "renameByDefault": renamed}
    )
    product = "MOCKMODEL-MIG-1g.300gb" if renamed else "MOCKMODEL-MIG-1g.300gb-SHARED"
    assert _mig_part(printed) == {
        **GFD_MIG_SHARED,
        "nvidia.com/mig-1g.300gb.product": product,
    }


def test_mig_devices_of_one_profile_are_counted_across_gpus_with_nvml_s_attributes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # mig-strategy_test.go "multiple mig-enabled devices returns mig labels": two GPUs with
    # one NewMigDevice(1, 2, 100) each, 12 SMs and engines 13..17; unshared. Its keys are
    # nvidia.com/gpu.* (single); under mixed the same values go under nvidia.com/mig-1g.100gb.
    attributes = _nvml_attributes(1, 2, 100, sms=12, engines=(13, 14, 15, 16, 17))
    gpus = [_mig_gpu(0, "1g.100gb", attributes), _mig_gpu(1, "1g.100gb", attributes)]
    printed = labels(tmp_path, capsys, [resource("mig", [0, 1], migProfile="1g.100gb")], gpus)
    expected = {
        "count": "2",
        "replicas": "1",
        "sharing-strategy": "none",
        "memory": "100",
        "product": "MOCKMODEL-MIG-1g.100gb",
        "multiprocessors": "12",
        "slices.gi": "1",
        "slices.ci": "2",
        "engines.copy": "13",
        "engines.decoder": "14",
        "engines.encoder": "15",
        "engines.jpeg": "16",
        "engines.ofa": "17",
    }
    assert _mig_part(printed) == {f"nvidia.com/mig-1g.100gb.{k}": v for k, v in expected.items()}
    assert printed["nvidia.com/mig.strategy"] == "mixed"


def test_without_nvml_attributes_only_the_keys_gpuconf_knows_are_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    gpus = [_mig_gpu(0, "1g.100gb", None), _mig_gpu(1, "2g.200gb", _nvml_attributes(2, 2, 200))]
    printed = labels(tmp_path, capsys, [resource("mig", [0], migProfile="1g.100gb")], gpus)
    # 2g.200gb: no class selects it and the config (from before labels.migProfiles) names no
    # other profile, so the node's admission policy has no key for it.
    assert _mig_part(printed) == {
        "nvidia.com/mig-1g.100gb.count": "1",
        "nvidia.com/mig-1g.100gb.replicas": "1",
        "nvidia.com/mig-1g.100gb.sharing-strategy": "none",
        "nvidia.com/mig-1g.100gb.product": "MOCKMODEL-MIG-1g.100gb",
    }


def test_every_mig_profile_present_is_labelled_as_gfd_s_mixed_strategy_labels_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # mig-strategy.go newMigStrategyMixedLabeler: one NewMIGResourceLabeler per MIG device name
    # on the node, whichever devices the plugin's resources use. Devices as resource-testing.go
    # NewMigDevice(1, 2, 100) and NewMigDevice(2, 2, 200) make them; no class selects 2g.200gb,
    # and its replicas are 1, strategy none (resource.go getReplicas: not a replicated resource).
    gpus = [
        _mig_gpu(0, "1g.100gb", _nvml_attributes(1, 2, 100)),
        _mig_gpu(1, "2g.200gb", _nvml_attributes(2, 2, 200)),
    ]
    resources = [resource("mig", [0], migProfile="1g.100gb")]
    settings = {"owner": "gpuconf", "migProfiles": ["1g.100gb", "2g.200gb", "7g.800gb"]}
    printed = labels(tmp_path, capsys, resources, gpus, labels=settings)

    def gfd(profile: str, gi: int, ci: int, memory: int) -> dict[str, str]:
        values = {
            "count": "1", "replicas": "1", "sharing-strategy": "none", "memory": str(memory),
            "product": f"MOCKMODEL-MIG-{profile}", "multiprocessors": "0", "slices.gi": str(gi),
            "slices.ci": str(ci), "engines.copy": "0", "engines.decoder": "0",
            "engines.encoder": "0", "engines.jpeg": "0", "engines.ofa": "0",
        }  # fmt: skip
        return {f"nvidia.com/mig-{profile}.{k}": v for k, v in values.items()}

    assert _mig_part(printed) == {**gfd("1g.100gb", 1, 2, 100), **gfd("2g.200gb", 2, 2, 200)}
    assert printed["nvidia.com/mig.strategy"] == "mixed"


def test_a_mig_profile_the_pool_s_models_lack_is_not_labelled_lest_the_patch_be_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    gpus = [
        _mig_gpu(0, "1g.100gb", _nvml_attributes(1, 2, 100)),
        _mig_gpu(1, "1g.100gb+me", _nvml_attributes(1, 1, 100)),
    ]
    resources = [resource("mig", [0], migProfile="1g.100gb")]
    settings = {"owner": "gpuconf", "migProfiles": ["1g.100gb"]}
    printed = labels(tmp_path, capsys, resources, gpus, labels=settings)
    assert {k.rsplit(".", 1)[0] for k in _mig_part(printed)} == {
        "nvidia.com/mig-1g.100gb",
        "nvidia.com/mig-1g.100gb.engines",
        "nvidia.com/mig-1g.100gb.slices",
    }
    assert "MIG profile 1g.100gb+me" in caplog.text


def test_without_a_mig_resource_no_mig_device_is_labelled_as_under_gfd_s_none_strategy(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    gpus = [_mig_gpu(0, "1g.100gb", _nvml_attributes(1, 2, 100))]
    settings = {"owner": "gpuconf", "migProfiles": ["1g.100gb"]}
    printed = labels(tmp_path, capsys, [resource("whole", [])], gpus, labels=settings)
    assert _mig_part(printed) == {}
    assert "nvidia.com/mig.strategy" not in printed


def test_a_profile_with_a_plus_is_named_as_gfd_names_it() -> None:
    # nvml-mig-device.go GetName: strings.ReplaceAll(profile, "+", ".").
    assert mig_key("1g.10gb+me", "count") == "nvidia.com/mig-1g.10gb.me.count"
    assert mig_product_name("NVIDIA H100 80GB HBM3", "1g.10gb+me", shared=False) == (
        "NVIDIA-H100-80GB-HBM3-MIG-1g.10gb.me"
    )


# NVIDIA/k8s-device-plugin commit 871fb493 (after v0.20.0; tagged releases write the long
# value, which NFD then drops): internal/lm/resource_test.go TestGetProductName's cases.
LONG_MODEL = "NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition"  # 55 sanitised


@pytest.mark.parametrize(
    ("name", "profile", "shared", "expected"),
    [
        ("MOCKMODEL", "1g.300gb", False, "MOCKMODEL-MIG-1g.300gb"),
        ("MOCKMODEL", None, False, "MOCKMODEL"),
        (LONG_MODEL, "1g.24gb", False, "NVIDIA-RTX-PRO-6000-Blackwell-Max-Q-Workstation-Edi-MIG-1g.24gb"),
        (LONG_MODEL, "1g.24gb+me", False, "NVIDIA-RTX-PRO-6000-Blackwell-Max-Q-Workstation-MIG-1g.24gb.me"),
        ("A" * 51 + "." + "B" * 10, "1g.5gb", False, "A" * 51 + "-MIG-1g.5gb"),
        ("A" * 80, None, False, "A" * 63),
        (LONG_MODEL, "1g.24gb", True, "NVIDIA-RTX-PRO-6000-Blackwell-Max-Q-Workstat-MIG-1g.24gb-SHARED"),
        ("A" * 70 + " B", None, True, "A" * 56 + "-SHARED"),
    ],
    ids=[
        "short-mig", "short-bare", "long-mig", "trailing-separator-trimmed", "trailing-dot-trimmed",
        "long-bare", "long-mig-shared", "long-bare-shared",
    ],
)  # fmt: skip
def test_a_product_name_over_63_characters_is_cut_at_the_model_as_gfd_cuts_it(
    name: str, profile: str | None, shared: bool, expected: str
) -> None:
    made = (
        product_name(name, shared) if profile is None else mig_product_name(name, profile, shared)
    )
    assert made == expected
    assert len(made) <= 63


def test_a_gpu_whose_nvml_name_is_long_gets_a_product_label_the_api_server_takes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    long_name = "NVIDIA " + "Very Long Engineering Sample " * 3 + "80GB"
    printed = labels(tmp_path, capsys, [resource("whole", [0])], [_fake_gpu(0, name=long_name)])
    product = printed["nvidia.com/gpu.product"]
    assert product == sanitise(long_name)[:63].rstrip("-._")
    assert len(product) <= 63


def test_gpu_count_counts_a_models_gpus_whatever_their_mig_mode(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """mig-strategy.go newGPULabelers: `counts[name]++` in the MIG-enabled and the whole-GPU
    loops alike, so one MIG GPU beside one whole GPU of the same name is gpu.count=2."""
    mig = {"uuid": "MIG-00000000-0001-4000-8000-000000000001", "profile": "1g.10gb"}
    gpus = [
        _fake_gpu(
            0, migEnabled=True, migDevices=[{**mig, "gpuInstanceId": 1, "computeInstanceId": 0}]
        ),
        _fake_gpu(1),
    ]
    classes = [resource("mig-small", [0], migProfile="1g.10gb"), resource("whole", [1])]
    printed = labels(tmp_path, capsys, classes, gpus)
    assert printed["nvidia.com/gpu.count"] == "2"


# mig-strategy_test.go TestMigStrategySingleLabels (k8s-device-plugin v0.20.0): NVIDIA's plugin
# advertises the MIG devices as nvidia.com/gpu, so GFD's nvidia.com/gpu.* labels describe them.
# gpuconf's node is in that situation where a MIG class's resourceName is nvidia.com/gpu. The
# mock's MIG-enabled GPUs report compute capability 0 (no architecture labels).
GFD_SINGLE_INVALID = {
    "nvidia.com/gpu.count": "0",
    "nvidia.com/gpu.replicas": "0",
    "nvidia.com/gpu.sharing-strategy": "",
    "nvidia.com/gpu.memory": "0",
    "nvidia.com/gpu.product": "MOCKMODEL-MIG-INVALID",
    "nvidia.com/mig.strategy": "single",
}
GFD_FULL_GPU_ARCHITECTURE = {
    "nvidia.com/gpu.compute.major": "8",
    "nvidia.com/gpu.compute.minor": "0",
    "nvidia.com/gpu.family": "ampere",
}


def _single_gpu(index: int, devices: list[tuple[str, dict[str, int]]]) -> dict[str, Any]:
    migs = [
        {
            "uuid": f"MIG-00000000-0001-4000-8000-0000000000{index}{n}",
            "profile": profile,
            "gpuInstanceId": n + 1,
            "computeInstanceId": 0,
            "attributes": attributes,
        }
        for n, (profile, attributes) in enumerate(devices)
    ]
    return _fake_gpu(index, migEnabled=True, migDevices=migs, computeCapability="0.0")


def _single(resource_gpus: list[int], profile: str = "1g.100gb") -> list[dict[str, Any]]:
    nvidia_gpu = resource("mig", resource_gpus, migProfile=profile)
    nvidia_gpu["name"] = "nvidia.com/gpu"
    return [nvidia_gpu]


def _gfd_with_strategy(printed: dict[str, str]) -> dict[str, str]:
    return {**gfd_part(printed), "nvidia.com/mig.strategy": printed["nvidia.com/mig.strategy"]}


@pytest.mark.parametrize(
    ("gpus", "sms", "engines"),
    [(1, 0, (0, 0, 0, 0, 0)), (2, 12, (13, 14, 15, 16, 17))],
    ids=["single mig-enabled device", "multiple mig-enabled devices"],
)
def test_mig_devices_advertised_as_nvidia_gpu_get_gfd_s_single_strategy_labels(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    gpus: int,
    sms: int,
    engines: tuple[int, int, int, int, int],
) -> None:
    attributes = _nvml_attributes(1, 2, 100, sms=sms, engines=engines)
    found = [_single_gpu(i, [("1g.100gb", attributes)]) for i in range(gpus)]
    printed = labels(tmp_path, capsys, _single(list(range(gpus))), found)
    copy, decoder, encoder, jpeg, ofa = map(str, engines)
    assert _gfd_with_strategy(printed) == {
        "nvidia.com/gpu.count": str(gpus),
        "nvidia.com/gpu.replicas": "1",
        "nvidia.com/gpu.sharing-strategy": "none",
        "nvidia.com/gpu.memory": "100",
        "nvidia.com/gpu.product": "MOCKMODEL-MIG-1g.100gb",
        "nvidia.com/mig.strategy": "single",
        "nvidia.com/gpu.multiprocessors": str(sms),
        "nvidia.com/gpu.slices.gi": "1",
        "nvidia.com/gpu.slices.ci": "2",
        "nvidia.com/gpu.engines.copy": copy,
        "nvidia.com/gpu.engines.decoder": decoder,
        "nvidia.com/gpu.engines.encoder": encoder,
        "nvidia.com/gpu.engines.jpeg": jpeg,
        "nvidia.com/gpu.engines.ofa": ofa,
    }
    assert _mig_part(printed) == {}  # no per-profile labels under single


@pytest.mark.parametrize(
    ("devices", "full_gpus", "expected"),
    [
        ([[]], 0, GFD_SINGLE_INVALID),
        ([["1g.100gb", "3g.100gb"]], 0, GFD_SINGLE_INVALID),
        ([["1g.100gb"]], 1, {**GFD_SINGLE_INVALID, **GFD_FULL_GPU_ARCHITECTURE}),
        ([["1g.100gb"], []], 1, {**GFD_SINGLE_INVALID, **GFD_FULL_GPU_ARCHITECTURE}),
    ],
    ids=[
        "empty mig devices returns MIG invalid label",
        "mixed mig config returns MIG invalid label",
        "mixed mig enabled and disabled returns invalid config",
        "enabled, disabled, and empty returns invalid config",
    ],
)
def test_a_node_single_cannot_describe_gets_gfd_s_mig_invalid_labels(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    devices: list[list[str]],
    full_gpus: int,
    expected: dict[str, str],
) -> None:
    gpus = []
    for index, profiles in enumerate(devices):
        gi = {"1g.100gb": 1, "3g.100gb": 3}
        found = [(p, _nvml_attributes(gi[p], gi[p] + 1, 100)) for p in profiles]
        gpus.append(_single_gpu(index, found))
    gpus += [_fake_gpu(len(devices) + i) for i in range(full_gpus)]
    printed = labels(tmp_path, capsys, _single([0]), gpus)
    assert _gfd_with_strategy(printed) == expected
