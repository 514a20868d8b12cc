"""The declared inventory as NVIDIA's DRA driver (gpu.nvidia.com) would publish it in ResourceSlices.

Each device carries the attributes the chosen driver release publishes (gpuconf.gpus.dra_attributes)
whose values gpuconf knows at compile time: `type`, `uuid`, `productName`, `architecture`,
`cudaComputeCapability` and, where the pool declares its driver, `driverVersion`; a MIG device
adds `profile` and `parentUUID`; up to v25.3 a GPU also has `index` and a MIG device `index` and
`parentIndex`. Both publish their memory as the `memory` capacity, in bytes. A GPU with MIG
enabled is published only as its MIG devices. One node group stands for all its identical nodes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from gpuconf.api.cluster import Cluster
from gpuconf.compiler.dra.semver import SemVer
from gpuconf.compiler.resolve.class_selection import ResolvedClass, device_memory_mib
from gpuconf.compiler.resolve.declared_inventory import DeclaredInventory, Gpu, NodeGroup
from gpuconf.gpus.dra_attributes import DRIVER, AttributeSet, attribute_set

MIB = 1024 * 1024

DeviceKey = tuple[str, str | None, str]
"""(pool, declared node or None for the pool's undeclared nodes, device name)."""

AttributeValue = str | int | SemVer


@dataclass(frozen=True)
class DraDevice:
    group: NodeGroup
    gpu: Gpu
    name: str
    profile: str | None
    """The MIG profile; None for a whole GPU."""
    attributes: Mapping[str, AttributeValue]
    """By qualified name: gpu.nvidia.com's without a domain."""
    memory_bytes: int

    @property
    def key(self) -> DeviceKey:
        return (self.group.pool, self.group.node, self.name)

    def describe(self) -> str:
        where = f"node {self.group.node!r}" if self.group.node else f"pool {self.group.pool!r}"
        what = f"MIG {self.profile} device" if self.profile else self.gpu.model.name
        return f"{where} GPU {self.gpu.index} ({what})"


@dataclass(frozen=True)
class PublishedInventory:
    """What one release of the driver publishes for the cluster's declared inventory."""

    release: str
    names: AttributeSet
    devices: list[DraDevice]


def _gpu_uuid(group: NodeGroup, gpu: Gpu) -> str:
    # Undeclared GPUs get a stand-in that no declared UUID can equal.
    return gpu.uuid or f"GPU-undeclared-{group.pool}-{group.node or '*'}-{gpu.index}"


def _only_published(
    values: dict[str, AttributeValue], published: frozenset[str]
) -> dict[str, AttributeValue]:
    return {name: value for name, value in values.items() if name in published}


def published_devices(
    inventory: DeclaredInventory, release: str, drivers: Mapping[str, str | None]
) -> PublishedInventory:
    """`drivers`: each pool's declared driver version (None when it declares none)."""
    names = attribute_set(release)
    devices: list[DraDevice] = []
    for group in inventory.groups:
        driver = drivers.get(group.pool)
        for gpu in group.gpus:
            uuid = _gpu_uuid(group, gpu)
            common: dict[str, AttributeValue] = {
                "productName": gpu.model.nvml_name,
                "architecture": gpu.model.architecture,
                "cudaComputeCapability": SemVer.published(gpu.model.compute_capability),
            }
            if driver is not None:
                common["driverVersion"] = SemVer.published(driver)
            if gpu.mig is None:
                attributes = {**common, "type": "gpu", "uuid": uuid, "index": gpu.index}
                memory = device_memory_mib(gpu, None) * MIB
                devices.append(
                    DraDevice(
                        group,
                        gpu,
                        f"gpu-{gpu.index}",
                        None,
                        _only_published(attributes, names.gpu),
                        memory,
                    )
                )
                continue
            mig_index = 0
            for profile, count in sorted(gpu.mig.items()):
                memory = device_memory_mib(gpu, profile) * MIB
                for n in range(count):
                    mig_attributes: dict[str, AttributeValue] = {
                        **common,
                        "type": "mig",
                        "uuid": f"MIG-{uuid}-{profile}-{n}",
                        "index": mig_index,
                        "profile": profile,
                        "parentUUID": uuid,
                        "parentIndex": gpu.index,
                    }
                    name = f"gpu-{gpu.index}-mig-{profile}-{n}"
                    devices.append(
                        DraDevice(
                            group,
                            gpu,
                            name,
                            profile,
                            _only_published(mig_attributes, names.mig),
                            memory,
                        )
                    )
                    mig_index += 1
    return PublishedInventory(release, names, devices)


def cluster_devices(cluster: Cluster, inventory: DeclaredInventory) -> PublishedInventory:
    """The devices the cluster's chosen driver release (spec.dra.driverVersion) publishes."""
    spec = cluster.spec
    return published_devices(inventory, spec.dra.driver_version, spec.driver_versions())


def expected_devices(resolved: ResolvedClass, devices: list[DraDevice]) -> frozenset[DeviceKey]:
    """The devices the class holds in device-plugin mode, as the DRA driver names them."""
    profile = resolved.spec.select.mig_profile
    member_gpus = {(m.group.pool, m.group.node, m.gpu.index) for m in resolved.members}
    return frozenset(
        d.key
        for d in devices
        if d.profile == profile and (d.group.pool, d.group.node, d.gpu.index) in member_gpus
    )


__all__ = ["DRIVER", "DeviceKey", "DraDevice", "PublishedInventory", "cluster_devices"]
