"""Reading the kubelet's device-manager checkpoint (gpuconf/node/kubelet/device_checkpoint.py).

data/kubelet_internal_checkpoint is the file the kubelet's own code wrote (data/README.md);
test_kubelet_go.py reads one the Go kubelet writes during the test, too.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from builders import gpu_uuid

from gpuconf.node.kubelet.device_checkpoint import (
    CheckpointCorrupt,
    CheckpointInaccessible,
    checkpointed_devices,
)

WRITTEN_BY_THE_KUBELET = Path(__file__).with_name("data") / "kubelet_internal_checkpoint"


def write(path: Path, document: object) -> Path:
    path.write_text(json.dumps(document))
    return path


def test_the_kubelet_s_checkpoint_yields_every_allocated_id_over_all_numa_nodes() -> None:
    assert checkpointed_devices(WRITTEN_BY_THE_KUBELET) == {
        "gpuconf.dev/h100": frozenset(gpu_uuid(i) for i in range(5)),
        "gpuconf.dev/h100-sliced": frozenset({f"{gpu_uuid(6)}::3"}),
    }


def test_registered_but_unallocated_devices_do_not_count() -> None:
    assert gpu_uuid(5) not in checkpointed_devices(WRITTEN_BY_THE_KUBELET)["gpuconf.dev/h100"]


def test_a_checkpoint_without_allocations_holds_nothing(tmp_path: Path) -> None:
    # Go's nil slice: what manager.go writes once every pod's devices are released
    document = {"Data": {"PodDeviceEntries": None, "RegisteredDevices": {}}, "Checksum": 7}
    assert checkpointed_devices(write(tmp_path / "cp", document)) == {}


def test_a_checkpoint_whose_checksum_the_kubelet_would_refuse_still_counts_its_devices(
    tmp_path: Path,
) -> None:
    # Not recomputed (a go-spew dump): counting them held only waits until the kubelet rewrites it.
    document = json.loads(WRITTEN_BY_THE_KUBELET.read_text())
    document["Checksum"] += 1
    assert checkpointed_devices(write(tmp_path / "cp", document)) == checkpointed_devices(
        WRITTEN_BY_THE_KUBELET
    )


def test_no_checkpoint_file_holds_nothing_as_for_the_kubelet(tmp_path: Path) -> None:
    assert checkpointed_devices(tmp_path / "kubelet_internal_checkpoint") == {}


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (WRITTEN_BY_THE_KUBELET.read_bytes()[:200], "not JSON"),
        (b"\xff\xfe", "not JSON"),
        (b"[]", "no Data and Checksum"),
        (b'{"Data": {"PodDeviceEntries": []}}', "no Data and Checksum"),
        (b'{"Data": {}, "Checksum": 1}', "Data.PodDeviceEntries missing"),
        (b'{"Data": {"PodDeviceEntries": {}}, "Checksum": 1}', "is not a list"),
        (
            b'{"Data": {"PodDeviceEntries": [{"DeviceIDs": []}]}, "Checksum": 1}',
            "PodDeviceEntries[0].ResourceName missing",
        ),
        (
            b'{"Data": {"PodDeviceEntries": [{"ResourceName": "r", "DeviceIDs": "GPU-0"}]},'
            b' "Checksum": 1}',
            "PodDeviceEntries[0].DeviceIDs is not a map by NUMA node",
        ),
        (
            # the list of kubelets up to 1.19, which checkpoint.go (the only format v1.34.4
            # reads) cannot unmarshal into its map either
            b'{"Data": {"PodDeviceEntries": [{"ResourceName": "r", "DeviceIDs": ["GPU-0"]}]},'
            b' "Checksum": 1}',
            "PodDeviceEntries[0].DeviceIDs is not a map by NUMA node",
        ),
        (
            b'{"Data": {"PodDeviceEntries": [{"ResourceName": "r", "DeviceIDs": {"0": [1]}}]},'
            b' "Checksum": 1}',
            "holds something other than device ID strings",
        ),
    ],
    ids=["truncated", "not-utf8", "a-list", "no-checksum", "no-entries", "entries-a-map",
         "no-resource", "ids-a-string", "ids-a-list", "ids-not-strings"],
)  # fmt: skip
def test_a_checkpoint_not_as_the_kubelet_writes_it_is_corrupt_with_the_reason(
    tmp_path: Path, content: bytes, message: str
) -> None:
    path = tmp_path / "kubelet_internal_checkpoint"
    path.write_bytes(content)
    with pytest.raises(CheckpointCorrupt, match=re.escape(message)) as unreadable:
        checkpointed_devices(path)
    assert str(unreadable.value).startswith(f"{path}: ")


def test_a_checkpoint_that_cannot_be_opened_is_inaccessible_not_corrupt(tmp_path: Path) -> None:
    (tmp_path / "kubelet_internal_checkpoint").mkdir()
    with pytest.raises(CheckpointInaccessible, match="Is a directory"):
        checkpointed_devices(tmp_path / "kubelet_internal_checkpoint")
