"""Publish the drift report on the Node object, where `kubectl get nodes` users can see it."""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence

from gpuconf.node import in_cluster
from gpuconf.node.drift import DriftReport

log = logging.getLogger(__name__)

DRIFT_ANNOTATION = "gpuconf.dev/inventory-drift"
REPORT_ANNOTATION = "gpuconf.dev/inventory-report"
PENDING_ANNOTATION = "gpuconf.dev/pending-gpu-changes"
"""Config changes waiting for running containers to release GPUs, as a JSON list."""


def annotations_for(report: DriftReport) -> dict[str, str]:
    return {
        DRIFT_ANNOTATION: "true" if report.drifted else "false",
        REPORT_ANNOTATION: json.dumps(report.as_dict(), sort_keys=True, separators=(",", ":")),
    }


def pending_annotation(pending: Sequence[Mapping[str, object]]) -> dict[str, str]:
    return {PENDING_ANNOTATION: json.dumps(list(pending), sort_keys=True, separators=(",", ":"))}


def annotate_node(node_name: str, report: DriftReport) -> None:
    """Patch the Node's annotations when running in a cluster; log, never raise, on failure."""
    _patch(node_name, annotations_for(report), "the inventory report")


def annotate_pending(node_name: str, pending: Sequence[Mapping[str, object]]) -> None:
    _patch(node_name, pending_annotation(pending), "pending GPU changes")


def _patch(node_name: str, annotations: dict[str, str], what: str) -> None:
    if not in_cluster.in_a_pod():
        return
    try:
        from gpuconf.node.own_node_client import OwnNode  # in a pod only: urllib.request is ~1 MiB

        OwnNode(node_name, in_cluster.load()).patch({"metadata": {"annotations": annotations}})
    except Exception as error:  # an annotation is a courtesy; the node runtime must keep running
        log.warning("could not annotate node %s with %s: %s", node_name, what, error)
