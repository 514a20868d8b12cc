"""The node config: what the compiler writes into each pool's ConfigMap and `gpuconf node` reads.

This is the contract between the two halves of gpuconf. The compiler resolves everything a
node needs (which GPU indices belong to which resource, how they are shared, what inventory
is expected), so the node runtime decides nothing from cluster-wide knowledge.
"""

from __future__ import annotations

from typing import Annotated, Literal

from gpuconf.api.base import INT32_MAX, Model
from gpuconf.api.node_facts import (
    DEFAULT_METRICS_PORT,
    KUBELET_PLUGIN_DIR,
    MAX_UNIX_SOCKET_PATH,
    DeviceListStrategy,
    LabelOwner,
)
from gpuconf.api.record import Limits, field
from gpuconf.api.short_names import shortened
from gpuconf.api.version import NodeConfigApiVersion
from gpuconf.diagnostics import KeyPath

NODE_CONFIG_FILE = "node-config.yaml"


class RuntimeSettings(Model):
    """What `gpuconf node setup` configures on the host, and how it makes the engine load it."""

    engine: Literal["docker", "containerd", "k3s", "cri-o"]
    set_as_default: bool
    binary_path: str
    containerd_config_version: Literal[2, 3, 4] | None = None
    """Only for a host without a containerd main config whose binary does not say its release;
    otherwise the host's file, or its binary, decides."""
    restart: Literal["auto", "signal", "systemd", "none"] = "auto"
    revert_on_stop: bool = False
    driver_root: str = "/"
    """Where the driver's files are: / for a host driver, /run/nvidia/driver for gpuconf's installer."""
    enable_cdi: bool = False
    """Turn on CDI in the engine (DRA, and the cdi device list strategy, need it)."""


class HealthSettings(Model):
    ignored_xids: list[int]
    """XIDs that never make a GPU unhealthy."""
    reset_xids: list[int] = field(default_factory=list)
    """XIDs after which a GPU is unhealthy until NVML shows it reset or re-enumerated."""
    recover_after_seconds: Annotated[int, Limits(ge=0, le=INT32_MAX)]
    """Quiet period after the last other XID before the GPU is healthy again; 0 never."""


class ExpectedGpu(Model):
    index: Annotated[int, Limits(ge=0, le=INT32_MAX)]
    model: str
    """Catalog model name."""
    nvml_name: str
    """What NVML's device name must be."""
    memory_mi_b: Annotated[int, Limits(ge=1, le=INT32_MAX)] = field(key="memoryMiB")
    uuid: str | None = None
    mig: dict[str, int] | None = None
    """Declared MIG layout {profile: count}; None when MIG is disabled."""


class ExpectedInventory(Model):
    """The GPUs each node of the pool should have.

    A pool's declared nodes mostly have the same GPUs and differ only in their UUIDs, so those
    GPUs are written once (`common`) and each such node lists its UUIDs (`uuids`): the
    ConfigMap stays under a third of the size it would be with every GPU written out per node."""

    default: list[ExpectedGpu]
    """The inventory of every node of the pool that is listed neither in `uuids` nor in `nodes`."""
    common: list[ExpectedGpu] = field(default_factory=list)
    """The GPUs, UUIDs aside, of every node listed in `uuids`."""
    uuids: dict[str, list[str | None]] = field(default_factory=dict)
    """Declared nodes that have the `common` GPUs: their UUIDs, in the order of `common`."""
    nodes: dict[str, list[ExpectedGpu]] = field(default_factory=dict)
    """Declared nodes with GPUs of their own, by node name."""

    def for_node(self, node_name: str) -> list[ExpectedGpu]:
        listed = self.nodes.get(node_name)
        if listed is not None:
            return listed
        uuids = self.uuids.get(node_name)
        if uuids is not None:
            return [gpu.replace(uuid=uuid) for gpu, uuid in zip(self.common, uuids, strict=True)]
        return self.default

    def inconsistencies(self) -> list[tuple[KeyPath, str]]:
        """What the schema cannot say: each `uuids` list matches `common`, no node is listed
        twice, and `common` leaves UUIDs to `uuids`. As (key path, message) pairs."""
        found: list[tuple[KeyPath, str]] = []
        for index, gpu in enumerate(self.common):
            if gpu.uuid is not None:
                found.append((("common", index, "uuid"), "common GPUs take their UUIDs from uuids"))
        for node, uuids in self.uuids.items():
            if len(uuids) != len(self.common):
                found.append(
                    (
                        ("uuids", node),
                        f"{len(uuids)} UUID(s) for the {len(self.common)} common GPU(s)",
                    )
                )
            if node in self.nodes:
                found.append((("uuids", node), "the node is also listed in nodes"))
        return found


class GpuIndices(Model):
    default: list[int]
    """GPU indices of the resource on nodes listed neither in `nodes` nor in the inventory's
    `uuids`."""
    common: list[int] = field(default_factory=list)
    """GPU indices on the nodes of the inventory's `uuids` that `nodes` does not list."""
    nodes: dict[str, list[int]] = field(default_factory=dict)
    """By node name: declared nodes whose indices differ from what `common` or `default` gives."""


class SharingSettings(Model):
    strategy: Literal["none", "time-slicing", "mps"]
    replicas: Annotated[int, Limits(ge=1, le=INT32_MAX)] = 1
    fail_requests_greater_than_one: bool = False
    mps_pipe_directory: str | None = None
    """MPS only: the control daemon's pipe directory on the host, mounted into containers."""
    mps_shm_directory: str | None = None
    """MPS only: the host directory the control daemon and its clients share as /dev/shm."""
    mps_memory_limit_mi_b: int | None = field(default=None, key="mpsMemoryLimitMiB")
    mps_active_thread_percentage: int | None = None


SOCKET_STEM_CHARACTERS = MAX_UNIX_SOCKET_PATH - len(KUBELET_PLUGIN_DIR) - len("/.sock")
"""A socket file name's length before `.sock`, so its path in the kubelet's directory fits."""


class ResourceSettings(Model):
    name: str
    """The extended resource name, e.g. gpuconf.dev/t4-shared."""
    class_name: str = field(key="class")
    gpus: GpuIndices
    mig_profile: str | None = None
    """When set, the resource offers this node's MIG devices of this profile on those GPUs."""
    sharing: SharingSettings
    allocation_policy: Literal["spread", "pack"] = "spread"

    def socket_name(self) -> str:
        """The unix socket file name in the kubelet's plugin directory: the resource's name,
        cut short with a digest where the path would not fit a unix socket's; the kubelet
        knows a plugin by the endpoint it registers, so any unique name serves."""
        return shortened("gpuconf-" + self.name.replace("/", "_"), SOCKET_STEM_CHARACTERS) + ".sock"


class LabelSettings(Model):
    """Which labels the node runtime publishes on its Node (the cluster's spec.node.labels)."""

    owner: LabelOwner = "off"
    """gpuconf: GFD's keys and gpuconf's; gfd: only gpuconf.dev/pool and class.gpuconf.dev/*;
    off: none."""
    rename_by_default: bool = False
    """false: gpu.product ends in -SHARED on shared GPUs, as GFD writes it by default."""
    mig_profiles: list[str] | None = None
    """The MIG profiles whose GFD labels (nvidia.com/mig-<profile>.*) the node may publish, as
    its admission policy admits them: every profile of the pool's GPU models under migStrategy
    mixed. None (a config from before this field): the profiles its resources select."""


class NodeConfig(Model):
    api_version: NodeConfigApiVersion
    kind: Literal["NodeConfig"]
    cluster: str
    pool: str
    platform: Literal["tegra"] | None = None
    """tegra: a Jetson module. Its GPU is found from the SoC instead of NVML, and its driver is
    part of L4T, ready once the module's L4T release file is there."""
    runtime: RuntimeSettings
    device_list_strategy: DeviceListStrategy = "volume-mounts"
    drift_policy: Literal["warn", "strict"] = "warn"
    health: HealthSettings
    metrics_port: Annotated[int, Limits(ge=0, le=65535)] = DEFAULT_METRICS_PORT
    inventory: ExpectedInventory
    resources: list[ResourceSettings] = field(default_factory=list)
    labels: LabelSettings = field(default_factory=LabelSettings)

    def gpu_indices(self, resource: ResourceSettings, node_name: str) -> list[int]:
        """The GPU indices `resource` offers on `node_name`."""
        gpus = resource.gpus
        listed = gpus.nodes.get(node_name)
        if listed is not None:
            return listed
        return gpus.common if node_name in self.inventory.uuids else gpus.default
