"""NVIDIA's components a cluster may run beside gpuconf: the device plugin, the DRA driver, the
GPU Operator and its MIG manager, each with the release or place gpuconf writes for."""

from __future__ import annotations

from typing import Literal

from gpuconf.api.base import ConfigMapName, DnsLabel, ImageReference, Model
from gpuconf.api.record import field

# Every release of k8s-device-plugin from v0.17.0 to the current one.
NvidiaPluginRelease = Literal[
    "v0.17.0",
    "v0.17.1",
    "v0.17.2",
    "v0.17.3",
    "v0.17.4",
    "v0.18.0",
    "v0.18.1",
    "v0.18.2",
    "v0.19.0",
    "v0.19.1",
    "v0.19.2",
    "v0.19.3",
    "v0.20.0",
]
# Every release of k8s-dra-driver-gpu since v25.3.0; v0.4.0 is the renamed dra-driver-nvidia-gpu.
DraDriverRelease = Literal[
    "v25.3.0", "v25.3.1", "v25.3.2", "v25.8.0", "v25.8.1", "v25.12.0", "v0.4.0"
]


# GPU Operator releases whose chart values, ClusterPolicy CRD and MIG manager gpuconf has read.
GpuOperatorRelease = Literal["v25.3.4", "v25.10.1", "v26.3.3", "v26.7.0"]


class NvidiaPlugin(Model):
    version: NvidiaPluginRelease = "v0.20.0"
    """NVIDIA's device plugin release (plugin: nvidia); decides which of its options gpuconf writes."""
    rename_by_default: bool = True
    """Shared classes default to nvidia.com/gpu.shared; false keeps nvidia.com/gpu, as NVIDIA's
    chart does, for a cut-over without renaming workloads' requests (quotas then cannot tell
    shared GPUs from whole ones)."""


class Dra(Model):
    driver_version: DraDriverRelease = "v25.12.0"
    """The release of NVIDIA's DRA driver (gpu.nvidia.com); decides which device attributes
    the DeviceClass selectors may name."""
    feature_gates: dict[str, bool] = field(default_factory=dict)
    """The driver's feature gates as installed (its Helm value featureGates); from v25.8.0 it
    accepts time-slicing only with TimeSlicingSettings and MPS only with MPSSupport on."""


class MigManager(Model):
    namespace: DnsLabel = "gpu-operator"
    """The GPU Operator's namespace: its MIG manager reads its config ConfigMap only there."""
    config_map_name: ConfigMapName = "gpuconf-mig-parted-config"
    """The ConfigMap holding every pool's MIG layout (key config.yaml); set the ClusterPolicy's
    migManager.config.name to this name. A DNS subdomain of at most 240 characters, so that
    mig-manager/configmap-<name>.yaml is a file name Linux holds."""


class GpuOperator(Model):
    version: GpuOperatorRelease
    """The GPU Operator release installed (its Helm chart version); decides the values and
    ClusterPolicy fields gpuconf writes and which MIG manager runs."""
    namespace: DnsLabel = "gpu-operator"
    """The Operator's namespace (its MIG manager reads its ConfigMap only there)."""
    device_plugin: bool = False
    """Keep the Operator's own device plugin on, for GPU nodes outside gpuconf's pools: gpuconf's
    pool nodes then carry nvidia.com/gpu.deploy.device-plugin=false and gpuconf's plugin runs
    only where that label says false."""


DCGM_EXPORTER_IMAGE = "nvcr.io/nvidia/k8s/dcgm-exporter:4.5.3-4.8.2-distroless"
"""The image NVIDIA/dcgm-exporter's chart 4.8.2 (deployment/values.yaml) runs."""


class DcgmExporter(Model):
    enabled: bool = True
    """Run NVIDIA's dcgm-exporter on every GPU pool (not Jetson pools: no DCGM there); false
    where another dcgm-exporter runs already (the GPU Operator's, a Helm release)."""
    image: ImageReference = DCGM_EXPORTER_IMAGE
    """dcgm-exporter's image, pinned by version."""
