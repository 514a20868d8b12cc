"""The devices one resource advertises: IDs built from its settings and the GPUs found."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from gpuconf.api.node_config import ResourceSettings
from gpuconf.node.nvml.api import GpuInfo

MAX_DEVICE_ID_LENGTH = 63
REPLICA_SEPARATOR = "::"


@dataclass(frozen=True)
class PluginDevice:
    id: str
    gpu_index: int
    gpu_uuid: str
    visible_uuid: str
    """What a container is given: the GPU's UUID, or the MIG device's."""
    numa_node: int | None
    mig_uuid: str | None = None


@dataclass(frozen=True)
class BuiltDevices:
    devices: tuple[PluginDevice, ...]
    problems: tuple[str, ...]
    """Why GPUs of the resource are not advertised, one readable line each."""


def replica_id(uuid: str, replica: int) -> str:
    return f"{uuid}{REPLICA_SEPARATOR}{replica}"


def build_devices(
    resource: ResourceSettings, gpus_by_index: Mapping[int, GpuInfo], indices: Iterable[int]
) -> BuiltDevices:
    devices: list[PluginDevice] = []
    problems: list[str] = []
    for index in sorted(set(indices)):
        gpu = gpus_by_index.get(index)
        if gpu is None:
            problems.append(f"GPU {index} of {resource.name} is not on this node")
            continue
        units, problem = _units(resource, gpu)
        if problem:
            problems.append(problem)
        for unit in units:
            for device_id in _ids(unit.visible_uuid, resource.sharing.replicas):
                if len(device_id) > MAX_DEVICE_ID_LENGTH:
                    problems.append(
                        f"device ID {device_id} of {resource.name} is longer than "
                        f"{MAX_DEVICE_ID_LENGTH} characters; the kubelet would refuse it"
                    )
                    continue
                devices.append(
                    PluginDevice(
                        device_id,
                        unit.gpu_index,
                        unit.gpu_uuid,
                        unit.visible_uuid,
                        unit.numa_node,
                        unit.mig_uuid,
                    )
                )
    return BuiltDevices(tuple(devices), tuple(problems))


def _units(resource: ResourceSettings, gpu: GpuInfo) -> tuple[list[PluginDevice], str]:
    if resource.mig_profile is None:
        return [PluginDevice(gpu.uuid, gpu.index, gpu.uuid, gpu.uuid, gpu.numa_node)], ""
    if not gpu.mig_enabled:
        return [], f"GPU {gpu.index} of {resource.name} does not have MIG enabled"
    migs = sorted(
        (m for m in gpu.mig_devices if m.profile == resource.mig_profile),
        key=lambda m: (m.gpu_instance_id, m.compute_instance_id),
    )
    if not migs:
        return [], f"GPU {gpu.index} of {resource.name} has no {resource.mig_profile} MIG devices"
    return [
        PluginDevice(m.uuid, gpu.index, gpu.uuid, m.uuid, gpu.numa_node, m.uuid) for m in migs
    ], ""


def _ids(uuid: str, replicas: int) -> list[str]:
    if replicas <= 1:
        return [uuid]
    return [replica_id(uuid, n) for n in range(replicas)]
