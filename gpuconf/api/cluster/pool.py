"""A node pool: the nodes that share a GPU shape, a container runtime and a driver."""

from __future__ import annotations

from typing import Annotated, Literal

from gpuconf.api.base import (
    INT64_MAX,
    AbsolutePath,
    DnsSubdomain,
    DriverVersion,
    GpuUuid,
    JetPackVersion,
    LabelKey,
    LabelValue,
    MigProfileName,
    Model,
    PoolName,
)
from gpuconf.api.gpu_model import GpuModelReference
from gpuconf.api.node_facts import CONTAINERISED_DRIVER_ROOT, MAX_GPUS_PER_NODE
from gpuconf.api.record import Limits, field

GpuIndex = Annotated[int, Limits(ge=0, le=MAX_GPUS_PER_NODE - 1)]
MAX_POOL_SIZE = 100_000
"""The most nodes a pool has."""
ARCH_LABEL = "kubernetes.io/arch"
"""The well-known node label the kubelet sets to the node's CPU architecture."""


class ContainerRuntime(Model):
    engine: Literal["docker", "containerd", "k3s", "cri-o"]
    """The container engine on the pool's nodes; decides which runtime config `gpuconf node setup` writes."""
    set_as_default: bool = True
    """Make nvidia the default runtime, so pods need no runtimeClassName."""
    binary_path: AbsolutePath = "/usr/bin/nvidia-container-runtime"
    """Where nvidia-container-runtime is installed on the host."""
    containerd_config_version: Literal[2, 3, 4] | None = None
    """containerd only: the config version of the pool's containerd (2 for 1.x, 3 for 2.0–2.2, 4 from 2.3). Setup follows the host's main file when there is one; it creates a missing one in the version the host's containerd binary writes, and in this one only when the binary does not say its release; 3 or 4 lets the device list default to CDI."""
    restart: Literal["auto", "signal", "systemd", "none"] = "auto"
    """How setup makes the engine load a changed config: auto picks the safe way per engine (docker: SIGHUP reload; containerd: systemd restart; cri-o: SIGHUP from 1.26, else systemd; k3s: none, an operator restarts k3s)."""
    revert_on_stop: bool = False
    """When setup's pod stops, put the host's original runtime files back and reload the engine."""


class Driver(Model):
    version: DriverVersion
    """The NVIDIA driver version the pool runs, e.g. "550.54.15"."""
    install: bool = False
    """Emit a driver-installer DaemonSet that installs this version on the pool's nodes."""
    os: Literal["ubuntu20.04", "ubuntu22.04", "ubuntu24.04", "rhel8", "rhel9"] = "ubuntu22.04"
    """The node OS; picks the driver container image tag."""
    max_unavailable: Annotated[int, Limits(ge=1, le=100_000)] = 1
    """Installer only: how many of the pool's nodes change driver at once (the DaemonSet's
    rolling update moves on once a node's new driver answers with this version and the node is
    uncordoned)."""
    eviction_timeout_seconds: Annotated[int, Limits(ge=0, le=86_400)] = 600
    """Installer only: how long gpuconf's driver-drain retries evicting the node's GPU pods (a
    PodDisruptionBudget answers 429) and waits for them to go before it gives up, leaving the
    node cordoned and labelled gpuconf.dev/driver-upgrade=eviction-timed-out, and the kubelet
    retries it; 0 waits for ever."""


class Toleration(Model):
    key: LabelKey | None = None
    operator: Literal["Exists", "Equal"] = "Equal"
    value: LabelValue | None = None
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"] | None = None
    toleration_seconds: Annotated[int | None, Limits(ge=0, le=INT64_MAX)] = None
    """Only with effect NoExecute: how long the pod stays bound after the taint appears."""


class GpuShape(Model):
    model: GpuModelReference
    """A catalog model (e.g. "Tesla-T4", "Jetson-AGX-Orin-64GB") or one declared in spec.gpuModels."""
    count: Annotated[int, Limits(ge=1, le=MAX_GPUS_PER_NODE)]
    """GPUs on each node of the pool."""


class MigLayout(Model):
    strategy: Literal["mig"]
    """Multi-Instance GPU partitioning (the only sharing a pool declares; classes declare the rest)."""
    layout: str | dict[MigProfileName, Annotated[int, Limits(ge=1, le=7)]]
    """A named layout (all-<profile>, all-balanced, all-disabled) or a {profile: count} map."""
    indices: list[GpuIndex] | None = None
    """The GPUs (by index) to partition; all GPUs of each node when absent."""


class DeclaredGpu(Model):
    index: GpuIndex
    """The NVML index of the GPU on its node."""
    uuid: GpuUuid | None = None
    """The GPU's UUID, when known; the node runtime checks it."""
    model: GpuModelReference | None = None
    """The GPU's model, when it differs from the pool's."""


class DeclaredNode(Model):
    name: DnsSubdomain
    """The Kubernetes Node name."""
    gpus: Annotated[list[DeclaredGpu], Limits(min_length=1)]
    """The node's full GPU inventory."""


class NodePool(Model):
    name: PoolName
    """Pool name: a DNS label of at most 55 characters (gpuconf-<name> is the nodes'
    nvidia.com/mig.config label value), unique in the cluster."""
    platform: Literal["discrete", "tegra"] = "discrete"
    """discrete: PCIe/SXM GPUs seen through NVML; tegra: Jetson modules, whose integrated GPU is
    discovered from the SoC (no NVML, no MIG, no MPS)."""
    architecture: Literal["amd64", "arm64"] | None = None
    """CPU architecture of the pool's nodes, rendered as a kubernetes.io/arch node selector.
    Tegra pools are arm64; discrete pools run on either when it is not given."""
    jetpack: JetPackVersion | None = None
    """Tegra only: the JetPack release on the modules, quoted ("6.2"); checked against the modules."""
    node_selector: dict[LabelKey, LabelValue] = field(default_factory=dict)
    """Labels that pick the pool's nodes; defaults to {gpuconf.dev/pool: <name>}."""
    tolerations: list[Toleration] = field(default_factory=list)
    """Taints on the pool's nodes that gpuconf's pods tolerate."""
    runtime: ContainerRuntime
    """The container runtime on the pool's nodes."""
    driver: Driver | None = None
    """The NVIDIA driver; omit when the node image already has one and nothing is checked."""
    gpus: GpuShape | None = None
    """The pool-wide GPU shape; nodes listed under `nodes` may refine it."""
    size: Annotated[int | None, Limits(ge=1, le=MAX_POOL_SIZE)] = None
    """How many nodes the pool has; defaults to the number of declared nodes."""
    nodes: list[DeclaredNode] = field(default_factory=list)
    """Nodes whose GPU inventory is declared one by one (UUIDs optional)."""
    sharing: list[MigLayout] | None = None
    """MIG partitioning of the pool's GPUs: a list of layouts, one per disjoint set of `indices`
    (one layout without `indices` covers every GPU)."""

    def cpu_architecture(self) -> str | None:
        """The architecture the pool's pods must land on; None when any will do."""
        return self.architecture or ("arm64" if self.platform == "tegra" else None)

    def driver_root(self) -> str:
        """Where the driver's files are: gpuconf's installer puts them under /run/nvidia/driver."""
        installed = self.driver is not None and self.driver.install
        return CONTAINERISED_DRIVER_ROOT if installed else "/"

    def mig_layouts(self) -> list[MigLayout]:
        """The pool's MIG layouts as a list (empty when the pool declares none)."""
        return self.sharing or []
