"""Day-2 changes that never double-book a GPU.

A node config change moves GPUs between resources, or changes how many replicas a GPU offers.
Each GPU's part of the change applies at once unless it would withdraw a device ID a running
container holds (the kubelet's PodResources API, its device checkpoint while List does not
know its pods yet, and our own Allocate until a poll names what it handed out, say which:
kubelet/pod_resources_watch.py, kubelet/handed_out.py); then that GPU keeps its current
assignment, its withdrawn IDs advertised Unhealthy so nothing new lands on them, until the
holders are gone. Everything else applies at once. A GPU this process does not offer yet
(at start, or newly configured) is first offered once no container holds it under another
name or ID: after a restart with a changed config, the old assignment is what the kubelet
still lists.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from gpuconf.api.node_config import ResourceSettings
from gpuconf.node.devices import REPLICA_SEPARATOR, BuiltDevices, PluginDevice, build_devices
from gpuconf.node.kubelet.pod_resources import HeldDevices
from gpuconf.node.nvml.api import GpuInfo

Assignment = Mapping[int, tuple[ResourceSettings, ...]]
"""GPU index -> the resources that offer (part of) it; several only with MIG profiles."""


def assignment_of(resources: Iterable[tuple[ResourceSettings, Iterable[int]]]) -> Assignment:
    claims: dict[int, tuple[ResourceSettings, ...]] = {}
    for resource, indices in resources:
        for index in sorted(set(indices)):
            claims[index] = (*claims.get(index, ()), resource)
    return claims


@dataclass(frozen=True)
class PendingChange:
    gpu_index: int
    held: tuple[tuple[str, str], ...]
    """(resource, device ID) the change would withdraw while a container holds it."""
    current: tuple[str, ...]
    """Resources offering the GPU now."""
    wanted: tuple[str, ...]
    """Resources the config wants to offer it."""

    @classmethod
    def from_dict(cls, change: Mapping[str, Any]) -> PendingChange:
        """The change ``as_dict`` wrote (/status). A resource name has one "/" (an extended
        resource is domain/name), a device ID may have more."""
        held = []
        for entry in change["held"]:
            domain, _, rest = str(entry).partition("/")
            name, _, device_id = rest.partition("/")
            held.append((f"{domain}/{name}", device_id))
        return cls(
            int(change["gpu"]), tuple(held), tuple(change["current"]), tuple(change["wanted"])
        )

    def held_names(self) -> list[str]:
        """``held`` as "<resource>/<device ID>", as the log, /status and the annotation say it."""
        return [f"{name}/{device_id}" for name, device_id in self.held]

    def as_text(self) -> str:
        waits = (
            f"for {', '.join(self.held_names())} to be released"
            if self.held
            else "until the kubelet says which devices containers hold"
        )
        return (
            f"GPU {self.gpu_index}: {_names(self.current)} -> {_names(self.wanted)} waits {waits}"
        )

    def as_dict(self) -> dict[str, object]:
        return {
            "gpu": self.gpu_index,
            "held": self.held_names(),
            "current": list(self.current),
            "wanted": list(self.wanted),
        }


def _names(resources: tuple[str, ...]) -> str:
    return ",".join(resources) or "(none)"


@dataclass(frozen=True)
class Reclass:
    effective: Assignment
    pending: tuple[PendingChange, ...]
    draining: frozenset[tuple[str, str]]
    """(resource, device ID) advertised Unhealthy: withdrawn by a pending change."""


def _device_ids(
    resources: tuple[ResourceSettings, ...], gpu_index: int, gpus: Mapping[int, GpuInfo]
) -> set[tuple[str, str]]:
    return {
        (resource.name, device.id)
        for resource in resources
        for device in build_devices(resource, gpus, [gpu_index]).devices
    }


def _held_on(index: int, gpus: Mapping[int, GpuInfo], held: HeldDevices) -> set[tuple[str, str]]:
    """(resource, device ID) held on the GPU or its MIG devices, under any resource name."""
    gpu = gpus.get(index)
    if gpu is None:
        return set()
    units = {gpu.uuid, *(mig.uuid for mig in gpu.mig_devices)}
    return {
        (name, device_id)
        for name, ids in held.items()
        for device_id in ids
        if device_id.split(REPLICA_SEPARATOR)[0] in units
    }


def reclass(
    effective: Assignment,
    wanted: Assignment,
    held: HeldDevices | None,
    gpus: Mapping[int, GpuInfo],
) -> Reclass:
    """The next effective assignment: ``wanted`` for every GPU whose change withdraws nothing
    held. ``held`` None: the kubelet cannot say, so every withdrawn ID counts as held, and a
    GPU not offered now waits: a container may hold it under another resource."""
    result: dict[int, tuple[ResourceSettings, ...]] = {}
    pending: list[PendingChange] = []
    draining: set[tuple[str, str]] = set()
    for index in sorted(effective.keys() | wanted.keys()):
        now, then = effective.get(index, ()), wanted.get(index, ())
        if now == then:
            result[index] = then
            continue
        if not now and held is None:
            pending.append(PendingChange(index, (), (), tuple(r.name for r in then)))
            continue
        if not now and held is not None:
            # Not offered by us now, yet a container may hold it: put there before this process
            # started (under an older config) or by another plugin. Offer it once free.
            foreign = sorted(_held_on(index, gpus, held) - _device_ids(then, index, gpus))
            if foreign:
                pending.append(
                    PendingChange(
                        index,
                        tuple(foreign),
                        tuple(sorted({name for name, _ in foreign})),
                        tuple(r.name for r in then),
                    )
                )
                continue
        withdrawn = _device_ids(now, index, gpus) - _device_ids(then, index, gpus)
        blocking = sorted(
            (name, i) for name, i in withdrawn if held is None or i in held.get(name, frozenset())
        )
        if not blocking:
            if then:
                result[index] = then
            continue
        result[index] = now
        draining |= withdrawn
        pending.append(
            PendingChange(
                index,
                tuple(blocking),
                tuple(r.name for r in now),
                tuple(r.name for r in then),
            )
        )
    return Reclass(result, tuple(pending), frozenset(draining))


def devices_by_resource(
    effective: Assignment, gpus: Mapping[int, GpuInfo]
) -> dict[str, BuiltDevices]:
    """What each resource advertises under ``effective``, and why any of its GPUs is not."""
    devices: dict[str, list[PluginDevice]] = {}
    problems: dict[str, list[str]] = {}
    for index in sorted(effective):
        for resource in effective[index]:
            built = build_devices(resource, gpus, [index])
            devices.setdefault(resource.name, []).extend(built.devices)
            problems.setdefault(resource.name, []).extend(built.problems)
    return {name: BuiltDevices(tuple(devices[name]), tuple(problems[name])) for name in devices}
