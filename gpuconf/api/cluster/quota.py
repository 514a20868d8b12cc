"""Quota: how many devices of each class one namespace may request, and who owns that namespace."""

from __future__ import annotations

from typing import Annotated, Literal

from gpuconf.api.base import DnsLabel, Model
from gpuconf.api.record import Limits

NamespacePolicy = Literal["create", "adopt", "external"]
"""create: gpuconf renders the Namespace; adopt: gpuconf only labels an existing one;
external: gpuconf renders no Namespace, only what goes inside it."""


QUOTA_MAX = 1_000_000
"""The most devices of a class one namespace's quota may hold."""


class Quota(Model):
    namespace: DnsLabel
    """The namespace the quota applies to."""
    classes: Annotated[
        dict[DnsLabel, Annotated[int, Limits(ge=0, le=QUOTA_MAX)]], Limits(min_length=1)
    ]
    """Class name -> how many of the class's devices the namespace may request."""
    namespace_policy: NamespacePolicy | None = None
    """Who owns the namespace (default: spec.namespacePolicy). create: gpuconf renders it;
    adopt: it exists already and gpuconf only adds its labels; external: gpuconf renders only
    the ResourceQuota. Argo CD and Flux never prune or delete a Namespace gpuconf renders."""
    cluster_queue: DnsLabel | None = None
    """With spec.kueue: the ClusterQueue (spec.kueue.clusterQueues[].name) this namespace's quota
    joins; namespaces naming the same one share its quota. Default: one named after the namespace."""
