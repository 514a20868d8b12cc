"""Whether gpuconf's node runtime writes GPU Feature Discovery's labels on a cluster's GPU nodes.

It does only where it runs (allocation: device-plugin with plugin: gpuconf; with plugin: nvidia
or allocation: dra NVIDIA's components serve the GPUs and no gpuconf node runtime runs), where
its admission policy lets it patch its own Node (ValidatingAdmissionPolicy, GA in Kubernetes
1.30), and where `spec.node.labels.owner` is gpuconf. Everywhere else GFD's labels come from
NVIDIA's GFD (or the GPU Operator's), so nothing gpuconf renders may turn that GFD off there."""

from __future__ import annotations

from typing import TYPE_CHECKING

from gpuconf.api.base import kubernetes_minor

if TYPE_CHECKING:
    from gpuconf.api.cluster.document import ClusterSpec

LABELS_FROM = 30
"""The node runtime patches its Node only under its admission policy (GA in Kubernetes 1.30)."""


def runs_node_runtime(spec: ClusterSpec) -> bool:
    """gpuconf's node runtime (`gpuconf node run`, its device plugin) runs on the GPU pools."""
    return spec.allocation == "device-plugin" and spec.plugin == "gpuconf"


def node_runtime_labels_nodes(spec: ClusterSpec) -> bool:
    """gpuconf's node runtime runs and may label its own Node."""
    return runs_node_runtime(spec) and kubernetes_minor(spec.kubernetes.version) >= LABELS_FROM


def gpuconf_writes_gfd_labels(spec: ClusterSpec) -> bool:
    """gpuconf's node runtime writes GFD's keys (gpu.product, mig.capable, …) on its nodes."""
    return spec.node.labels.owner == "gpuconf" and node_runtime_labels_nodes(spec)
