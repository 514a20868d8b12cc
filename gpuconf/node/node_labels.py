"""Publish the node's labels on its own Node: set and remove only the keys gpuconf owns.

gpuconf owns a key it set itself (listed in the gpuconf.dev/owned-labels annotation) or one
that was absent when it first wanted it; a key someone else set (GFD, NFD, an administrator)
is never changed or removed, whatever gpuconf would write there. A key Node Feature Discovery
manages (GFD publishes through it) is NFD's even where gpuconf set it first: gpuconf lets go of
it rather than fight NFD's master over it.
"""

from __future__ import annotations

import enum
import logging
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, NamedTuple

from gpuconf.api.base import LABEL_VALUE
from gpuconf.gpus.gfd_labels import OWNED_ANNOTATION
from gpuconf.node import in_cluster

if TYPE_CHECKING:
    from gpuconf.node.own_node_client import OwnNode

log = logging.getLogger(__name__)


class LabelChange(NamedTuple):
    labels: dict[str, str | None]
    """Keys to set, and keys to remove (None), as a strategic-merge patch says it."""
    owned: tuple[str, ...]
    """The keys gpuconf owns after the change, sorted."""
    foreign: tuple[str, ...]
    """Keys gpuconf wants but leaves alone: someone else set them."""
    invalid: tuple[str, ...]
    """Keys gpuconf wants with a value Kubernetes refuses (a machine type past 63 characters):
    not written, as NFD's worker ignores such a label (nfd-worker.go, IsValidLabelValue), so
    the rest of the patch is not refused with it."""


_VALID_VALUE = re.compile(LABEL_VALUE)


NFD_FEATURE_LABELS = "nfd.node.kubernetes.io/feature-labels"
"""NFD's master lists the labels it manages here, comma-separated, dropping the prefix of its
default namespace (node-feature-discovery pkg/nfd-master/nfd-master.go updateNodeObject; an
NFD -instance prefixes the annotation's name with `<instance>.`)."""
NFD_DEFAULT_NAMESPACE = "feature.node.kubernetes.io/"


def owned_keys(annotations: Mapping[str, str]) -> frozenset[str]:
    text = annotations.get(OWNED_ANNOTATION, "")
    return frozenset(key for key in text.split(",") if key)


def nfd_keys(annotations: Mapping[str, str]) -> frozenset[str]:
    """Every label any NFD instance says it manages on the Node."""
    keys: set[str] = set()
    for name, text in annotations.items():
        if name == NFD_FEATURE_LABELS or name.endswith("." + NFD_FEATURE_LABELS):
            for key in filter(None, text.split(",")):
                keys.add(key if "/" in key else NFD_DEFAULT_NAMESPACE + key)
    return frozenset(keys)


def reconcile(
    current: Mapping[str, str],
    owned_before: frozenset[str],
    wanted: Mapping[str, str],
    managed_elsewhere: frozenset[str] = frozenset(),
) -> LabelChange:
    patch: dict[str, str | None] = {}
    owned: set[str] = set()
    foreign: list[str] = []
    owned_before = owned_before - managed_elsewhere
    invalid = tuple(
        sorted(key for key, value in wanted.items() if not _VALID_VALUE.fullmatch(value))
    )
    wanted = {key: value for key, value in wanted.items() if key not in invalid}
    for key, value in sorted(wanted.items()):
        if key in managed_elsewhere:
            foreign.append(key)
        elif key in owned_before or key not in current:
            owned.add(key)
            if current.get(key) != value:
                patch[key] = value
        else:
            foreign.append(key)
    for key in sorted(owned_before - wanted.keys()):
        if key in current:
            patch[key] = None
    return LabelChange(patch, tuple(sorted(owned)), tuple(foreign), invalid)


class Published(enum.Enum):
    """What publish_labels did: the caller logs from this, not from a second look around."""

    YES = "published"
    NOT_IN_A_POD = "not in a pod: no Node to label"
    FAILED = "failed (logged); try again later"


def publish_labels(node_name: str, wanted: Mapping[str, str]) -> Published:
    """Bring the Node's labels to `wanted` where gpuconf owns them."""
    if not in_cluster.in_a_pod():
        return Published.NOT_IN_A_POD
    try:
        from gpuconf.node.own_node_client import OwnNode  # in a pod only: urllib.request is ~1 MiB

        _reconcile_node(OwnNode(node_name, in_cluster.load()), wanted)
    except Exception as error:  # labels are a courtesy; the node runtime must keep running
        log.warning("could not label node %s: %s", node_name, error)
        return Published.FAILED
    return Published.YES


def _reconcile_node(node: OwnNode, wanted: Mapping[str, str]) -> None:
    meta = node.get().get("metadata")
    if meta is None:
        raise ValueError("the Node has no metadata")
    annotations = meta.get("annotations") or {}
    owned_before = owned_keys(annotations)
    change = reconcile(meta.get("labels") or {}, owned_before, wanted, nfd_keys(annotations))
    for key in change.foreign:
        log.warning("label %s on node %s is not gpuconf's; left alone", key, node.name)
    for key in change.invalid:
        log.warning(
            "label %s=%r on node %s is not a valid label value (at most 63 characters: "
            "letters, digits, '-', '_', '.'); not written",
            key,
            wanted[key],
            node.name,
        )
    if change.labels or owned_before != frozenset(change.owned):
        body = {
            "metadata": {
                # A conflict (someone changed the Node meanwhile) fails; the next turn retries.
                "resourceVersion": meta["resourceVersion"],
                "labels": change.labels,
                "annotations": {OWNED_ANNOTATION: ",".join(change.owned)},
            }
        }
        node.patch(body)
