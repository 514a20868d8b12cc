"""The typed input: what a platform team writes in ``clusters/*.yaml``."""

from __future__ import annotations

from gpuconf.api.cluster.document import Cluster, ClusterSpec
from gpuconf.api.cluster.pool import DeclaredGpu, DeclaredNode, NodePool
from gpuconf.api.cluster.quota import Quota
from gpuconf.api.cluster.resource_class import ResourceClass, Selector

__all__ = [
    "Cluster",
    "ClusterSpec",
    "DeclaredGpu",
    "DeclaredNode",
    "NodePool",
    "Quota",
    "ResourceClass",
    "Selector",
]
