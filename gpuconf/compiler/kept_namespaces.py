"""Namespaces gpuconf created stay in the rendered tree after their last quota goes.

A Namespace file leaving the tree asks Argo CD and Flux to delete the namespace and every
workload in it (the manifests' Prune=false / prune: disabled marks stop that, but leave the
agent out of sync). So a re-render keeps each Namespace a previous render created
(namespacePolicy: create) that it no longer creates (its quota gone or made external,
spec.namespace changed), marked as kept, until someone deletes its file on purpose:
dropping a namespace is a commit of its own, never a side effect of dropping a quota.
Namespaces that were adopted are not kept: they were never ours. This module only reads which;
plan writes them (plan/cluster_objects.py), with the metadata of the gpuconf running now.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gpuconf.api.cluster import Cluster
from gpuconf.compiler.emit import written_by_gpuconf
from gpuconf.compiler.plan.annotation_readers import ANNOTATION_READERS
from gpuconf.compiler.plan.cluster_objects import (
    KEPT_ANNOTATION,
    KEPT_NOTES,
    NEVER_DELETED,
    KeptNamespace,
    namespace_policies,
)
from gpuconf.compiler.plan.pod_security import POD_SECURITY_PRIVILEGED, POD_SECURITY_READERS
from gpuconf.compiler.resolve.metadata_guard import keeps
from gpuconf.compiler.resolve.object_labels import CLUSTER_LABEL, MANAGED_BY, MANAGED_BY_LABEL
from gpuconf.formats.located_yaml import LoadFailed, parse_text

_LARGEST_NAMESPACE_FILE = 64 * 1024


def _created_by_gpuconf(obj: Any, name: str, cluster: str) -> bool:
    if not isinstance(obj, dict) or obj.get("apiVersion") != "v1" or obj.get("kind") != "Namespace":
        return False
    meta = obj.get("metadata")
    if not isinstance(meta, dict) or meta.get("name") != name:
        return False
    labels, annotations = meta.get("labels"), meta.get("annotations")
    return (
        isinstance(labels, dict)
        and isinstance(annotations, dict)
        and labels.get(MANAGED_BY_LABEL) == MANAGED_BY
        and labels.get(CLUSTER_LABEL) == cluster
        and keeps(NEVER_DELETED, annotations, ANNOTATION_READERS)
    )


def _was_own(meta: dict[str, Any]) -> bool:
    """gpuconf's own namespace until the last render (its Pod Security labels, as a site's
    block may have made audit and warn stricter), or kept as such by an earlier one."""
    labels: dict[str, str] = meta["labels"]
    annotations: dict[str, str] = meta["annotations"]
    return (
        keeps(POD_SECURITY_PRIVILEGED, labels, POD_SECURITY_READERS)
        or annotations.get(KEPT_ANNOTATION) == KEPT_NOTES[True]
    )


def kept_namespaces(previous: Path, cluster: Cluster) -> list[KeptNamespace]:
    """The Namespaces gpuconf created in `previous` (the cluster's folder as the last render
    left it) that it no longer renders. Only those files are read; plan writes them anew."""
    folder = previous / "namespaces"
    if not folder.is_dir() or not written_by_gpuconf(previous):
        return []
    rendered = namespace_policies(cluster)
    kept = []
    for file in sorted(folder.glob("*.yaml")):
        if file.stem in rendered and rendered[file.stem] != "external":
            continue
        if not file.is_file() or file.stat().st_size > _LARGEST_NAMESPACE_FILE:
            continue
        try:
            obj = parse_text(file.read_text(encoding="utf-8"), str(file)).data
        except (OSError, UnicodeDecodeError, LoadFailed):
            continue  # not a file gpuconf wrote
        if _created_by_gpuconf(obj, file.stem, cluster.metadata.name):
            kept.append(KeptNamespace(file.stem, _was_own(obj["metadata"])))
    return kept
