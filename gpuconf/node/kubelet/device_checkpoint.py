"""Which device IDs the kubelet's device manager has on record as allocated: its checkpoint.

The kubelet keeps every allocation in `kubelet_internal_checkpoint`, beside its kubelet.sock in
the device-plugins folder (k8s.io/kubernetes v1.34.4 pkg/kubelet/cm/devicemanager: manager.go
newManagerImpl sets checkpointdir to the socket's folder, types.go names the file). It reads it
back at start (manager.go readCheckpoint) and counts those devices allocated until it has seen
every pod source and the pod is not active (manager.go UpdateAllocatedDevices), so right after a
kubelet restart this file knows what the PodResources List does not yet.

The file is JSON (checkpoint/checkpoint.go, written atomically by util/store/filestore.go):
{"Data": {"PodDeviceEntries": [{"PodUID", "ContainerName", "ResourceName", "DeviceIDs",
"AllocResp"}, ...] or null, "RegisteredDevices": {...}}, "Checksum": n}. DeviceIDs maps NUMA node
(a JSON string, "-1" for none) to IDs, the only shape a kubelet of gpuconf's range (1.29+)
reads: any other is unreadable to it too. The kubelet also refuses a file whose Checksum does
not match (checkpointmanager/checkpoint_manager.go GetCheckpoint calls checkpoint.go
VerifyChecksum, a CorruptCheckpointError); either way its manager.go Start goes on with no
allocation on record ("Continue after failing to read checkpoint file").

The checksum (FNV-32a over a go-spew dump of Data) is not recomputed here, so a file with a
wrong one is read as the devices it lists. That errs on the safe side: the kubelet's writes are
atomic renames, so only another writer leaves a mismatch, and devices counted held that the
kubelet dropped only hold a change up until the first nudge (a ListAndWatch update makes the
kubelet rewrite the file from its own record: manager.go genericDeviceUpdateCallback,
writeCheckpoint), never let one through early.
"""

from __future__ import annotations

import json
from pathlib import Path

from gpuconf.node.kubelet.pod_resources import HeldDevices

CHECKPOINT_FILE = "kubelet_internal_checkpoint"


class CheckpointUnreadable(Exception):
    """The checkpoint exists but cannot be read as the kubelet writes it."""


class CheckpointCorrupt(CheckpointUnreadable):
    """What the file holds is not a checkpoint the kubelet reads: it has no record either."""


class CheckpointInaccessible(CheckpointUnreadable):
    """Reading the file failed here (permission, not a file, I/O): the kubelet's record may be
    whole, so what it holds is unknown."""


def checkpointed_devices(path: Path) -> HeldDevices:
    """Resource name -> device IDs the kubelet has on record as allocated. No file is no
    allocation, as for the kubelet itself (manager.go readCheckpoint, ErrCheckpointNotFound)."""
    try:
        blob = path.read_bytes()
    except FileNotFoundError:
        return {}
    except OSError as error:
        raise CheckpointInaccessible(f"{path}: {error.strerror or error}") from None
    try:
        document = json.loads(blob)
    except (ValueError, UnicodeDecodeError) as error:
        raise CheckpointCorrupt(f"{path}: not JSON: {error}") from None
    try:
        return _devices(document)
    except _BadShape as error:
        raise CheckpointCorrupt(f"{path}: {error}") from None


class _BadShape(Exception):
    pass


def _devices(document: object) -> HeldDevices:
    if not isinstance(document, dict) or not isinstance(document.get("Checksum"), int):
        raise _BadShape("not a device manager checkpoint (no Data and Checksum)")
    data = document.get("Data")
    if not isinstance(data, dict) or "PodDeviceEntries" not in data:
        raise _BadShape("Data.PodDeviceEntries missing")
    entries = data["PodDeviceEntries"]
    if entries is None:  # Go's nil slice: no allocation
        return {}
    if not isinstance(entries, list):
        raise _BadShape("Data.PodDeviceEntries is not a list")
    held: dict[str, set[str]] = {}
    for number, entry in enumerate(entries):
        if not isinstance(entry, dict) or not isinstance(entry.get("ResourceName"), str):
            raise _BadShape(f"Data.PodDeviceEntries[{number}].ResourceName missing")
        held.setdefault(entry["ResourceName"], set()).update(
            _entry_ids(entry.get("DeviceIDs"), number)
        )
    return {name: frozenset(ids) for name, ids in held.items()}


def _entry_ids(device_ids: object, number: int) -> list[str]:
    where = f"Data.PodDeviceEntries[{number}].DeviceIDs"
    if device_ids is None:
        return []
    if not isinstance(device_ids, dict):
        raise _BadShape(f"{where} is not a map by NUMA node")
    ids: list[str] = []
    for listed in device_ids.values():
        if listed is None:
            continue
        if not isinstance(listed, list) or not all(isinstance(i, str) for i in listed):
            raise _BadShape(f"{where} holds something other than device ID strings")
        ids.extend(listed)
    return ids
