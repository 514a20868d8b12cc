"""The labels a node publishes: GPU Feature Discovery's, computed as GFD computes them, plus
gpuconf's pool and class labels (keys and value rules: gpuconf/gpus/gfd_labels.py)."""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

from gpuconf.api.node_config import NodeConfig, ResourceSettings
from gpuconf.api.node_facts import POOL_LABEL
from gpuconf.gpus import gfd_labels as gfd
from gpuconf.gpus.resource_names import NVIDIA_GPU
from gpuconf.node.devices import build_devices
from gpuconf.node.nvml.api import GpuInfo, MigAttributes, MigDevice

MACHINE_TYPE_FILE = Path(gfd.MACHINE_TYPE_FILE)
log = logging.getLogger(__name__)


class NodeFacts(NamedTuple):
    """What NVML and the host say, read once per labelling."""

    gpus: tuple[GpuInfo, ...]
    driver_version: str
    cuda_version: tuple[int, int] | None
    machine_type: str


def machine_type(path: Path = MACHINE_TYPE_FILE) -> str:
    """GFD's getMachineType: the file's text, stripped; "unknown" when it cannot be read."""
    try:
        return path.read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return "unknown"


def node_labels(config: NodeConfig, node_name: str, facts: NodeFacts) -> dict[str, str]:
    """Every label the node should carry now, sorted by key; empty when labels are off."""
    owner = config.labels.owner
    if owner == "off":
        return {}
    labels: dict[str, str] = {POOL_LABEL: config.pool}
    labels.update(_class_labels(config, node_name, facts.gpus))
    if owner == "gpuconf" and facts.gpus:
        labels.update(_gfd_labels(config, node_name, facts))
    return dict(sorted(labels.items()))


def _class_labels(config: NodeConfig, node_name: str, gpus: Sequence[GpuInfo]) -> dict[str, str]:
    by_index = {gpu.index: gpu for gpu in gpus}
    labels = {}
    for resource in config.resources:
        indices = config.gpu_indices(resource, node_name)
        offered = len(build_devices(resource, by_index, indices).devices)
        if offered:
            labels[gfd.class_label(resource.class_name)] = str(offered)
    return labels


def _gfd_labels(config: NodeConfig, node_name: str, facts: NodeFacts) -> dict[str, str]:
    labels = {gfd.MACHINE: gfd.sanitise(facts.machine_type)}
    labels.update(_version_labels(facts.driver_version, facts.cuda_version))
    labels[gfd.MIG_CAPABLE] = str(any(g.mig_capable for g in facts.gpus)).lower()
    labels[gfd.MPS_CAPABLE] = str(_mps_capable(config, facts.gpus)).lower()
    strategy = gfd.config_mig_strategy(config)
    if strategy != "none":
        labels[gfd.MIG_STRATEGY] = strategy
    # GFD's Merge(full GPU labelers, MIG labeler): the MIG labels win a key both write.
    labels.update(_resource_labels(config, node_name, facts.gpus))
    if strategy == "mixed":
        labels.update(_mig_labels(config, node_name, facts.gpus))
    elif strategy == "single":
        labels.update(_single_labels(config, facts.gpus))
    return labels


def _version_labels(driver: str, cuda: tuple[int, int] | None) -> dict[str, str]:
    """GFD's newVersionLabeler; a driver version not X.Y[.Z] (a Jetson's L4T) gives none."""
    labels: dict[str, str] = {}
    parts = driver.split(".")
    if 2 <= len(parts) <= 3:
        major, minor, revision = parts[0], parts[1], parts[2] if len(parts) == 3 else ""
        values = (major, minor, revision, major, minor, revision, driver)
        labels.update(zip(gfd.DRIVER_VERSION_KEYS, values, strict=True))
    if cuda is not None:
        major_text, minor_text = map(str, cuda)
        cuda_values = (major_text, minor_text, major_text, minor_text, f"{cuda[0]}.{cuda[1]}")
        labels.update(zip(gfd.CUDA_VERSION_KEYS, cuda_values, strict=True))
    return labels


def _mps_capable(config: NodeConfig, gpus: Sequence[GpuInfo]) -> bool:
    """GFD's sharing labeler: true where MPS sharing is configured and no GPU has MIG on."""
    uses_mps = any(r.sharing.strategy == "mps" and r.sharing.replicas > 1 for r in config.resources)
    return uses_mps and not any(g.mig_enabled for g in gpus)


def _resource_labels(config: NodeConfig, node_name: str, gpus: Sequence[GpuInfo]) -> dict[str, str]:
    """GFD's newGPULabelers: per GPU name, MIG-enabled GPUs (sharing off) first, then whole
    GPUs with their sharing; later ones overwrite earlier ones, as GFD's list does (GFD's own
    order among names is a Go map's; gpuconf's is by name)."""
    sharing = _sharing(config, node_name, None)
    # GFD counts a name's GPUs whatever their MIG mode (`counts[name]++` in both loops).
    counts = Counter(g.name for g in gpus)
    labels: dict[str, str] = {}
    for mig_enabled in (True, False):
        group = [g for g in gpus if g.mig_enabled == mig_enabled]
        for name in sorted({g.name for g in group}):
            first = next(g for g in group if g.name == name)
            shared = None if mig_enabled else sharing
            labels.update(_gpu_labels(first, counts[name], shared, config))
            if not mig_enabled and sharing is None:
                labels.pop(gfd.REPLICAS, None)
                labels.pop(gfd.SHARING_STRATEGY, None)
    return labels


class _Sharing(NamedTuple):
    strategy: str
    replicas: int


def _sharing(config: NodeConfig, node_name: str, mig_profile: str | None) -> _Sharing | None:
    """The sharing of the node's whole GPUs (`mig_profile` None) or of its MIG devices of one
    profile, when all the node's classes of them agree on it; None (no replicas or
    sharing-strategy label) when they differ, which one GFD config per node cannot express."""
    found = {
        _Sharing(_strategy(r), r.sharing.replicas)
        for r in config.resources
        if r.mig_profile == mig_profile and config.gpu_indices(r, node_name)
    }
    if not found:
        return _Sharing("none", 1)
    return found.pop() if len(found) == 1 else None


def _strategy(resource: ResourceSettings) -> str:
    return resource.sharing.strategy if resource.sharing.replicas > 1 else "none"


def _gpu_labels(
    first: GpuInfo, count: int, sharing: _Sharing | None, config: NodeConfig
) -> dict[str, str]:
    """GFD's NewGPUResourceLabeler for the `count` GPUs of `first`'s name. `sharing` None on a
    MIG-enabled GPU means what GFD's nil config means: replicas 0, strategy none."""
    labels = {gfd.COUNT: str(count)}
    shared = False
    if first.mig_enabled:
        labels[gfd.REPLICAS], labels[gfd.SHARING_STRATEGY] = "0", "none"
    elif sharing is not None:
        labels[gfd.REPLICAS], labels[gfd.SHARING_STRATEGY] = str(sharing.replicas), sharing.strategy
        shared = sharing.replicas > 1 and not config.labels.rename_by_default
    labels[gfd.PRODUCT] = gfd.product_name(first.name, shared)
    if first.memory_mib:
        labels[gfd.MEMORY] = str(first.memory_mib)
    if first.compute_capability is not None and first.compute_capability[0] != 0:
        major, minor = first.compute_capability
        labels[gfd.FAMILY] = gfd.family(major, minor)
        labels[gfd.COMPUTE_MAJOR], labels[gfd.COMPUTE_MINOR] = str(major), str(minor)
    return labels


def _mig_labels(config: NodeConfig, node_name: str, gpus: Sequence[GpuInfo]) -> dict[str, str]:
    """GFD's newMigStrategyMixedLabeler: per MIG profile on the node, its count and sharing,
    the parent's product with -MIG-<profile>, and the first device's NVML attributes. Every
    profile present is labelled, as GFD does, within the profiles the node config names (those
    its admission policy admits: a profile outside the pool's catalog is drift, reported by
    `gpuconf node check`, and labelling it would have the whole patch refused)."""
    allowed = gfd.labelled_mig_profiles(config)
    labels: dict[str, str] = {}
    for profile, devices in sorted(_mig_devices(gpus).items()):
        if profile not in allowed:
            log.warning("MIG profile %s is not one the pool's GPUs have: no labels for it", profile)
            continue
        parent, first = devices[0]
        sharing = _sharing(config, node_name, profile)
        shared = False
        labels[gfd.mig_key(profile, "count")] = str(len(devices))
        if sharing is not None:
            labels[gfd.mig_key(profile, "replicas")] = str(sharing.replicas)
            labels[gfd.mig_key(profile, "sharing-strategy")] = sharing.strategy
            shared = sharing.replicas > 1 and not config.labels.rename_by_default
        labels[gfd.mig_key(profile, "product")] = gfd.mig_product_name(parent.name, profile, shared)
        if first.attributes is not None:
            labels.update(_mig_attribute_labels(gfd.mig_resource(profile), first.attributes))
    return labels


def _mig_devices(gpus: Sequence[GpuInfo]) -> dict[str, list[tuple[GpuInfo, MigDevice]]]:
    found: dict[str, list[tuple[GpuInfo, MigDevice]]] = {}
    for gpu in gpus:
        if gpu.mig_enabled:
            for device in gpu.mig_devices:
                found.setdefault(device.profile, []).append((gpu, device))
    return found


def _single_labels(config: NodeConfig, gpus: Sequence[GpuInfo]) -> dict[str, str]:
    """GFD's newMigStrategySingleLabeler: the node's MIG devices are nvidia.com/gpu, so its
    nvidia.com/gpu.* labels describe them, when every GPU has MIG on with devices of one profile;
    otherwise newInvalidMigStrategyLabeler's -MIG-INVALID labels."""
    mig_enabled = [g for g in gpus if g.mig_enabled]
    if not mig_enabled:
        return {}  # no MIG-enabled GPU: what migStrategy none writes
    found = _mig_devices(gpus)
    if (
        any(not g.mig_devices for g in mig_enabled)
        or len(mig_enabled) < len(gpus)
        or len(found) != 1
    ):
        return {
            gfd.PRODUCT: gfd.mig_product_name(mig_enabled[0].name, gfd.MIG_INVALID, False),
            gfd.COUNT: "0",
            gfd.REPLICAS: "0",
            gfd.SHARING_STRATEGY: "",
            gfd.MEMORY: "0",
        }
    [(profile, devices)] = found.items()
    parent, first = devices[0]
    # resource.go baseLabeler for nvidia.com/gpu: its replicas where it is replicated, else 1.
    [resource] = [r for r in config.resources if r.name == NVIDIA_GPU and r.mig_profile]
    replicas = resource.sharing.replicas
    shared = replicas > 1 and not config.labels.rename_by_default
    labels = {
        gfd.PRODUCT: gfd.mig_product_name(parent.name, profile, shared),
        gfd.COUNT: str(len(devices)),
        gfd.REPLICAS: str(replicas),
        gfd.SHARING_STRATEGY: _strategy(resource),
    }
    if first.attributes is not None:
        labels.update(_mig_attribute_labels(NVIDIA_GPU, first.attributes))
    return labels


def _mig_attribute_labels(resource: str, found: MigAttributes) -> dict[str, str]:
    """nvmlMigDevice.GetAttributes (k8s-device-plugin v0.20.0, internal/resource/nvml-mig-device.go)."""
    values = (
        found.memory_size_mb,
        found.multiprocessor_count,
        found.gpu_instance_slice_count,
        found.compute_instance_slice_count,
        found.shared_copy_engine_count,
        found.shared_decoder_count,
        found.shared_encoder_count,
        found.shared_jpeg_count,
        found.shared_ofa_count,
    )
    return {
        f"{resource}.{suffix}": str(value)
        for suffix, value in zip(gfd.MIG_ATTRIBUTE_SUFFIXES, values, strict=True)
    }
