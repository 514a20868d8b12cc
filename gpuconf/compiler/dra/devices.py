"""The declared inventory as NVIDIA's DRA driver (gpu.nvidia.com) would publish it in ResourceSlices.

Attribute names follow the driver's kubelet plugin (cmd/gpu-kubelet-plugin/deviceinfo.go): a whole
GPU has `type: gpu`, `uuid`, `index`, `productName`, `architecture`; a MIG device has `type: mig`,
its own `uuid` and `index`, `profile`, `parentUUID`, `parentIndex` and its parent's `productName`.
Both publish their memory as the `memory` capacity, in bytes. A GPU with MIG enabled is published
only as its MIG devices. One node group stands for all its identical nodes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from gpuconf.compiler.resolve.class_selection import ResolvedClass, device_memory_mib
from gpuconf.compiler.resolve.declared_inventory import DeclaredInventory, Gpu, NodeGroup

DRIVER = "gpu.nvidia.com"
MIB = 1024 * 1024

DeviceKey = tuple[str, str | None, str]
"""(pool, declared node or None for the pool's undeclared nodes, device name)."""


@dataclass(frozen=True)
class DraDevice:
    group: NodeGroup
    gpu: Gpu
    name: str
    profile: str | None
    """The MIG profile; None for a whole GPU."""
    attributes: Mapping[str, str | int]
    memory_bytes: int

    @property
    def key(self) -> DeviceKey:
        return (self.group.pool, self.group.node, self.name)

    def describe(self) -> str:
        where = f"node {self.group.node!r}" if self.group.node else f"pool {self.group.pool!r}"
        what = f"MIG {self.profile} device" if self.profile else self.gpu.model.name
        return f"{where} GPU {self.gpu.index} ({what})"


def _gpu_uuid(group: NodeGroup, gpu: Gpu) -> str:
    # Undeclared GPUs get a stand-in that no declared UUID can equal.
    return gpu.uuid or f"GPU-undeclared-{group.pool}-{group.node or '*'}-{gpu.index}"


def published_devices(inventory: DeclaredInventory) -> list[DraDevice]:
    devices: list[DraDevice] = []
    for group in inventory.groups:
        for gpu in group.gpus:
            uuid = _gpu_uuid(group, gpu)
            common: dict[str, str | int] = {
                "productName": gpu.model.nvml_name,
                "architecture": gpu.model.architecture,
            }
            if gpu.mig is None:
                attributes: dict[str, str | int] = {
                    **common,
                    "type": "gpu",
                    "uuid": uuid,
                    "index": gpu.index,
                }
                memory = device_memory_mib(gpu, None) * MIB
                devices.append(DraDevice(group, gpu, f"gpu-{gpu.index}", None, attributes, memory))
                continue
            mig_index = 0
            for profile, count in sorted(gpu.mig.items()):
                memory = device_memory_mib(gpu, profile) * MIB
                for n in range(count):
                    mig_attributes: dict[str, str | int] = {
                        **common,
                        "type": "mig",
                        "uuid": f"MIG-{uuid}-{profile}-{n}",
                        "index": mig_index,
                        "profile": profile,
                        "parentUUID": uuid,
                        "parentIndex": gpu.index,
                    }
                    name = f"gpu-{gpu.index}-mig-{profile}-{n}"
                    devices.append(DraDevice(group, gpu, name, profile, mig_attributes, memory))
                    mig_index += 1
    return devices


def expected_devices(resolved: ResolvedClass, devices: list[DraDevice]) -> frozenset[DeviceKey]:
    """The devices the class holds in device-plugin mode, as the DRA driver names them."""
    profile = resolved.spec.select.mig_profile
    member_gpus = {(m.group.pool, m.group.node, m.gpu.index) for m in resolved.members}
    return frozenset(
        d.key
        for d in devices
        if d.profile == profile and (d.group.pool, d.group.node, d.gpu.index) in member_gpus
    )
