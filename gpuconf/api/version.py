"""The one spelling of each API version gpuconf's files carry.

Cluster files and node configs are versioned apart: a cluster file's schema changes with what
users write, a node config's with what render and `gpuconf node` exchange."""

from __future__ import annotations

from typing import Final, Literal

ClusterApiVersion = Literal["gpuconf.dev/v1alpha2"]
CLUSTER_API_VERSION: Final[ClusterApiVersion] = "gpuconf.dev/v1alpha2"
"""The cluster-file version gpuconf writes and its models describe (mypy checks that this value
is the one the Literal allows)."""
CLUSTER_V1ALPHA1: Final = "gpuconf.dev/v1alpha1"
"""The first cluster-file version: still read, converted in memory (api/cluster/conversion.py)."""

NodeConfigApiVersion = Literal["gpuconf.dev/v1alpha1"]
NODE_CONFIG_API_VERSION: Final[NodeConfigApiVersion] = "gpuconf.dev/v1alpha1"
"""The version of the node config render writes for each pool and `gpuconf node` reads."""
