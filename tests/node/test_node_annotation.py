"""The drift report reaches the node's own Node as annotations, through the node runtime's own
client (an HTTPS stand-in of the API server here); a failure is logged, never raised."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
from node_api import TOKEN, NodeApi

from gpuconf.node.drift import DriftReport
from gpuconf.node.node_annotation import annotate_node

DRIFTED = DriftReport(problems=["GPU 1: declared but not found"], matching_indices=frozenset({0}))


@pytest.mark.usefixtures("pod")
def test_outside_a_cluster_nothing_is_patched(
    monkeypatch: pytest.MonkeyPatch, node_api: NodeApi
) -> None:
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST")
    annotate_node("node-a", DRIFTED)
    assert node_api.seen == []


@pytest.mark.usefixtures("pod")
def test_in_a_cluster_the_node_gets_both_annotations(node_api: NodeApi) -> None:
    annotate_node("node-a", DRIFTED)
    [seen] = node_api.seen
    assert (seen.method, seen.path) == ("PATCH", "/api/v1/nodes/node-a")
    assert seen.headers["Content-Type"] == "application/strategic-merge-patch+json"
    annotations = seen.body["metadata"]["annotations"]
    assert seen.body == {"metadata": {"annotations": annotations}}
    assert annotations["gpuconf.dev/inventory-drift"] == "true"
    assert json.loads(annotations["gpuconf.dev/inventory-report"]) == DRIFTED.as_dict()
    assert annotations["gpuconf.dev/inventory-report"].startswith(
        '{"drifted":true,"matchingIndices":[0],'
    )


@pytest.mark.usefixtures("pod")
def test_a_matching_inventory_is_annotated_false(node_api: NodeApi) -> None:
    annotate_node("node-a", DriftReport(problems=[], matching_indices=frozenset({0})))
    [seen] = node_api.seen
    assert seen.body["metadata"]["annotations"]["gpuconf.dev/inventory-drift"] == "false"


@pytest.mark.usefixtures("pod")
def test_a_refusal_is_logged_with_the_server_s_message_not_raised(
    node_api: NodeApi, caplog: pytest.LogCaptureFixture
) -> None:
    node_api.statuses = [403]
    with caplog.at_level(logging.WARNING, logger="gpuconf.node.node_annotation"):
        annotate_node("node-a", DRIFTED)
    (record,) = caplog.records
    assert record.getMessage() == (
        "could not annotate node node-a with the inventory report: "
        "the API server answered 403: the stand-in refuses with 403"
    )


def test_a_pod_without_its_token_logs_why_not_raises(
    pod: Path, caplog: pytest.LogCaptureFixture
) -> None:
    (pod / "token").unlink()
    with caplog.at_level(logging.WARNING, logger="gpuconf.node.node_annotation"):
        annotate_node("node-a", DRIFTED)
    assert "could not annotate node node-a" in caplog.text
    assert f"cannot read the service account token {pod / 'token'}" in caplog.text


@pytest.mark.usefixtures("pod")
def test_each_patch_sends_the_token_the_kubelet_last_wrote(node_api: NodeApi, pod: Path) -> None:
    """The runtime makes a client per call, so a rotated token is sent at once."""
    annotate_node("node-a", DRIFTED)
    (pod / "token").write_text("token-after-rotation", encoding="utf-8")
    annotate_node("node-a", DRIFTED)
    sent = [seen.headers["Authorization"] for seen in node_api.seen]
    assert sent == [f"Bearer {TOKEN}", "Bearer token-after-rotation"]


def test_a_token_broken_across_lines_is_never_logged(
    node_api: NodeApi, pod: Path, caplog: pytest.LogCaptureFixture
) -> None:
    (pod / "token").write_text("secret-head\nsecret-tail\n", encoding="utf-8")
    with caplog.at_level(logging.WARNING, logger="gpuconf.node.node_annotation"):
        annotate_node("node-a", DRIFTED)
    assert node_api.seen == []
    assert f"the service account token {pod / 'token'} holds a space" in caplog.text
    assert "secret" not in caplog.text
