"""The typed input: what a platform team writes in ``clusters/*.yaml``."""

from __future__ import annotations

from gpuconf.model.cluster import Cluster, ClusterSpec
from gpuconf.model.pool import DeclaredGpu, DeclaredNode, NodePool
from gpuconf.model.quota import Quota
from gpuconf.model.resource_class import ResourceClass, Selector

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
