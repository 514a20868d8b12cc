"""`gpuconf node labels` prints the labels NVIDIA's GPU Feature Discovery would write.

Expected values are GFD's own, from NVIDIA/k8s-device-plugin v0.20.0 (commit 1b826acc):
internal/lm/resource_test.go TestGPUResourceLabeler (a full GPU "MOCKMODEL" of 300 MiB,
compute capability 8.0, count 1, under each sharing config), TestSanitise, nvml_test.go
TestMigCapabilityLabeler and TestSharingLabeler, and nvml.go newVersionLabeler for the
driver and CUDA version labels.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from builders import gpu_uuid, node_config, resource

from gpuconf.gpus.gfd_labels import sanitise
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
