"""The node labels NVIDIA's GPU Feature Discovery writes: their keys and how it spells values.

Read from NVIDIA/k8s-device-plugin v0.20.0, internal/lm: resource.go (product, count, replicas,
sharing-strategy, memory, family, compute.major|minor; `sanitise`, `getArchFamily`,
`getProductName` with its -SHARED suffix), nvml.go (cuda.driver-version.*,
cuda.runtime-version.* and their deprecated twins, mig.capable, mps.capable),
machine-type.go (gpu.machine), mig-strategy.go (mig.strategy; under migStrategy mixed one
`nvidia.com/mig-<profile>.*` set per MIG profile on the node, made by resource.go's
NewMIGResourceLabeler from internal/resource/nvml-mig-device.go's GetName and GetAttributes).
gpuconf's node runtime writes these keys (`gpuconf node labels` prints them), and its admission
policy lets it change exactly these keys (`gfd_keys`) and, on its pool's Nodes only, gpuconf's
pool label, its pool's class labels and the MIG keys of its pool's models' profiles
(`pool_keys`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import TYPE_CHECKING

from gpuconf.api.kubernetes_names import LABEL_VALUE_MAX
from gpuconf.api.node_facts import POOL_LABEL
from gpuconf.gpus.resource_names import MIG_PREFIX, NVIDIA_GPU

if TYPE_CHECKING:  # not at run time: `validate` loads neither the node config nor the models
    from gpuconf.api.gpu_model import GpuModel
    from gpuconf.api.node_config import NodeConfig

PRODUCT = "nvidia.com/gpu.product"
COUNT = "nvidia.com/gpu.count"
REPLICAS = "nvidia.com/gpu.replicas"
SHARING_STRATEGY = "nvidia.com/gpu.sharing-strategy"
MEMORY = "nvidia.com/gpu.memory"
FAMILY = "nvidia.com/gpu.family"
COMPUTE_MAJOR = "nvidia.com/gpu.compute.major"
COMPUTE_MINOR = "nvidia.com/gpu.compute.minor"
MACHINE = "nvidia.com/gpu.machine"
MIG_CAPABLE = "nvidia.com/mig.capable"
MIG_STRATEGY = "nvidia.com/mig.strategy"
MPS_CAPABLE = "nvidia.com/mps.capable"

DRIVER_VERSION_KEYS = (
    "nvidia.com/cuda.driver.major",
    "nvidia.com/cuda.driver.minor",
    "nvidia.com/cuda.driver.rev",
    "nvidia.com/cuda.driver-version.major",
    "nvidia.com/cuda.driver-version.minor",
    "nvidia.com/cuda.driver-version.revision",
    "nvidia.com/cuda.driver-version.full",
)
CUDA_VERSION_KEYS = (
    "nvidia.com/cuda.runtime.major",
    "nvidia.com/cuda.runtime.minor",
    "nvidia.com/cuda.runtime-version.major",
    "nvidia.com/cuda.runtime-version.minor",
    "nvidia.com/cuda.runtime-version.full",
)

GFD_KEYS = (
    PRODUCT,
    COUNT,
    REPLICAS,
    SHARING_STRATEGY,
    MEMORY,
    FAMILY,
    COMPUTE_MAJOR,
    COMPUTE_MINOR,
    MACHINE,
    MIG_CAPABLE,
    MIG_STRATEGY,
    MPS_CAPABLE,
    *DRIVER_VERSION_KEYS,
    *CUDA_VERSION_KEYS,
)
"""Every GFD key gpuconf writes for whole GPUs (not gpu.mode, vgpu.*, imex.*, gfd.timestamp);
MIG profiles add `mig_keys`."""

MIG_BASE_SUFFIXES = ("count", "replicas", "sharing-strategy", "product")
MIG_ATTRIBUTE_SUFFIXES = (
    "memory",
    "multiprocessors",
    "slices.gi",
    "slices.ci",
    "engines.copy",
    "engines.decoder",
    "engines.encoder",
    "engines.jpeg",
    "engines.ofa",
)
"""nvmlMigDevice.GetAttributes' keys (internal/resource/nvml-mig-device.go)."""

SINGLE_MIG_KEYS = tuple(f"{NVIDIA_GPU}.{s}" for s in MIG_ATTRIBUTE_SUFFIXES if s != "memory")
"""Under migStrategy single, GFD writes a MIG device's attributes under nvidia.com/gpu.* (its
memory as gpu.memory, a GFD_KEYS key): mig-strategy.go newMigStrategySingleLabeler."""
MIG_INVALID = "INVALID"
"""GFD's product suffix where single cannot describe the node (newInvalidMigStrategyLabeler)."""

MACHINE_TYPE_FILE = "/sys/class/dmi/id/product_name"
"""GFD's default --machine-type-file."""

CLASS_LABEL_PREFIX = "class.gpuconf.dev/"
"""class.gpuconf.dev/<class>: the devices (× replicas) the node offers for that class."""
OWNED_ANNOTATION = "gpuconf.dev/owned-labels"
"""The label keys gpuconf's node runtime set on its Node, comma-separated: the only ones it
ever changes or removes again."""

_NOT_ALLOWED = re.compile(r"[^A-Za-z0-9\-_. ]")


def sanitise(text: str) -> str:
    """GFD's `sanitise`: drop characters outside [A-Za-z0-9-_. ], join words with '-'."""
    return "-".join(_NOT_ALLOWED.sub("", text).split())


def product_name(nvml_name: str, shared: bool) -> str:
    """GFD's getProductName: the sanitised name, -SHARED when shared and not renamed."""
    name = sanitise(nvml_name)
    return _within_label_limit([name, "SHARED"] if shared and name else [name])


def _within_label_limit(parts: list[str]) -> str:
    """GFD's limitProductName (commit 871fb493, after v0.20.0: before it the value was written
    whole and NFD dropped the label): the parts joined with '-', and, over a label value's 63
    characters, only the model (the first part) cut, then stripped of a trailing '-', '.', '_'."""
    whole = "-".join(parts)
    if len(whole) <= LABEL_VALUE_MAX:
        return whole
    suffix = "-".join(parts[1:])
    if not suffix:
        return whole[:LABEL_VALUE_MAX].rstrip("-._")
    room = LABEL_VALUE_MAX - len(suffix) - 1
    if room <= 0:
        return whole[:LABEL_VALUE_MAX].rstrip("-._")
    return f"{parts[0][:room].rstrip('-._')}-{suffix}"


def mig_resource(profile: str) -> str:
    """GFD's mixed-strategy resource name; nvmlMigDevice.GetName turns '+' into '.'."""
    return MIG_PREFIX + profile.replace("+", ".")


def mig_key(profile: str, suffix: str) -> str:
    return f"{mig_resource(profile)}.{suffix}"


def mig_keys(profile: str) -> tuple[str, ...]:
    """Every label GFD writes for one MIG profile under migStrategy mixed."""
    return tuple(mig_key(profile, s) for s in (*MIG_BASE_SUFFIXES, *MIG_ATTRIBUTE_SUFFIXES))


def mig_profiles(models: Iterable[GpuModel]) -> list[str]:
    """Every MIG profile the models' catalog entries have, sorted: the GPU instance profiles a
    layout gpuconf validates can create on them, so every `nvidia.com/mig-<profile>.*` key GFD's
    mixed strategy can write for their MIG devices."""
    found = {p for model in models if model.mig is not None for p in model.mig.profiles}
    return sorted(found)


def config_mig_strategy(config: NodeConfig) -> str:
    """GFD's migStrategy for a node of this config: none without MIG resources; single where
    its MIG devices are advertised as nvidia.com/gpu, as NVIDIA's plugin does under single (a
    class's resourceName); mixed otherwise (each profile its own resource, as gpuconf's are).
    Not gpus/mig.mig_strategy, NVIDIA's plugin's from the GPUs' layouts: a MIG class named
    nvidia.com/gpu beside whole GPUs is single here and mixed there."""
    mig = [r for r in config.resources if r.mig_profile is not None]
    if not mig:
        return "none"
    return "single" if any(r.name == NVIDIA_GPU for r in mig) else "mixed"


def labelled_mig_profiles(config: NodeConfig) -> frozenset[str]:
    """The MIG profiles a node of this config labels under mixed, where present: those its
    config names (labels.migProfiles), else (a config from before it) those it advertises."""
    if config.labels.mig_profiles is not None:
        return frozenset(config.labels.mig_profiles)
    return frozenset(r.mig_profile for r in config.resources if r.mig_profile is not None)


def mig_label_keys(config: NodeConfig) -> tuple[str, ...]:
    """The MIG label keys a node of this config may publish beyond `gfd_keys`, sorted."""
    if config.labels.owner != "gpuconf":
        return ()
    strategy = config_mig_strategy(config)
    if strategy == "single":
        return tuple(sorted(SINGLE_MIG_KEYS))
    if strategy == "mixed":
        return tuple(sorted(k for p in labelled_mig_profiles(config) for k in mig_keys(p)))
    return ()


def mig_product_name(parent_name: str, profile: str, shared: bool) -> str:
    """GFD's getProductName(parent model, "MIG", profile): "NVIDIA-A100-SXM4-40GB-MIG-1g.5gb";
    with profile MIG_INVALID, newInvalidMigStrategyLabeler's "<model>-MIG-INVALID"."""
    parts = [sanitise(p) for p in (parent_name, "MIG", profile.replace("+", ".")) if p]
    return _within_label_limit([*parts, "SHARED"] if shared else parts)


def family(major: int, minor: int) -> str:
    """GFD's getArchFamily."""
    if major in (10, 12):
        return "blackwell"
    if major == 7:
        return "volta" if minor < 5 else "turing"
    if major == 8:
        return "ampere" if minor < 9 else "ada-lovelace"
    return {
        1: "tesla",
        2: "fermi",
        3: "kepler",
        5: "maxwell",
        6: "pascal",
        9: "hopper",
        13: "rubin",
    }.get(major, "undefined")


def class_label(class_name: str) -> str:
    return CLASS_LABEL_PREFIX + class_name


def gfd_keys(owner: str) -> tuple[str, ...]:
    """The GFD keys a node of any pool publishes for `spec.node.labels.owner`, sorted (its
    pool's own keys, MIG ones included, are `pool_keys`)."""
    return tuple(sorted(GFD_KEYS)) if owner == "gpuconf" else ()


def writes_key(key: str, mig: bool) -> bool:
    """Whether gpuconf's node runtime, as the labels' owner, may write `key` on a node of a pool
    (`mig`: a pool with MIG layouts, whose nodes also write mig.strategy and MIG keys)."""
    if key in GFD_KEYS:
        return key != MIG_STRATEGY or mig
    return mig and (key in SINGLE_MIG_KEYS or key.startswith(MIG_PREFIX))


def pool_keys(config: NodeConfig) -> tuple[str, ...]:
    """The label keys a node of this config publishes beyond `gfd_keys`, sorted: gpuconf's pool
    label, the labels of the classes its pool serves and its models' MIG keys."""
    if config.labels.owner == "off":
        return ()
    classes = (class_label(r.class_name) for r in config.resources)
    return tuple(sorted({POOL_LABEL, *classes, *mig_label_keys(config)}))
