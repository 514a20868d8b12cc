"""Publish the drift report on the Node object, where `kubectl get nodes` users can see it."""

from __future__ import annotations

import json
import logging
import os

from gpuconf.node.drift import DriftReport

log = logging.getLogger(__name__)

DRIFT_ANNOTATION = "gpuconf.dev/inventory-drift"
REPORT_ANNOTATION = "gpuconf.dev/inventory-report"


def in_cluster() -> bool:
    return bool(os.environ.get("KUBERNETES_SERVICE_HOST"))


def annotations_for(report: DriftReport) -> dict[str, str]:
    return {
        DRIFT_ANNOTATION: "true" if report.drifted else "false",
        REPORT_ANNOTATION: json.dumps(report.as_dict(), sort_keys=True, separators=(",", ":")),
    }


def annotate_node(node_name: str, report: DriftReport) -> None:
    """Patch the Node's annotations when running in a cluster; log, never raise, on failure."""
    if not in_cluster():
        return
    try:
        import kubernetes  # only here: the client is heavy and only this call needs it

        kubernetes.config.load_incluster_config()  # type: ignore[no-untyped-call]
        body = {"metadata": {"annotations": annotations_for(report)}}
        kubernetes.client.CoreV1Api().patch_node(node_name, body)
    except Exception as error:  # an annotation is a courtesy; the node runtime must keep running
        log.warning("could not annotate node %s with the inventory report: %s", node_name, error)
