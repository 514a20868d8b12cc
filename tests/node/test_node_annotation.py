from __future__ import annotations

import json
import logging
from typing import Any, ClassVar

import kubernetes
import pytest

from gpuconf.node.drift import DriftReport
from gpuconf.node.node_annotation import annotate_node

DRIFTED = DriftReport(problems=["GPU 1: declared but not found"], matching_indices=frozenset({0}))


class RecordingCoreV1Api:
    patches: ClassVar[list[tuple[str, Any]]] = []

    def patch_node(self, name: str, body: Any) -> None:
        self.patches.append((name, body))


@pytest.fixture
def api(monkeypatch: pytest.MonkeyPatch) -> type[RecordingCoreV1Api]:
    RecordingCoreV1Api.patches = []
    monkeypatch.setattr(kubernetes.client, "CoreV1Api", RecordingCoreV1Api)
    monkeypatch.setattr(kubernetes.config, "load_incluster_config", lambda: None)
    return RecordingCoreV1Api


def test_outside_a_cluster_nothing_is_patched(
    monkeypatch: pytest.MonkeyPatch, api: type[RecordingCoreV1Api]
) -> None:
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    annotate_node("node-a", DRIFTED)
    assert api.patches == []


def test_in_a_cluster_the_node_gets_both_annotations(
    monkeypatch: pytest.MonkeyPatch, api: type[RecordingCoreV1Api]
) -> None:
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1")
    annotate_node("node-a", DRIFTED)
    [(name, body)] = api.patches
    annotations = body["metadata"]["annotations"]
    assert name == "node-a"
    assert annotations["gpuconf.dev/inventory-drift"] == "true"
    assert json.loads(annotations["gpuconf.dev/inventory-report"]) == DRIFTED.as_dict()
    assert annotations["gpuconf.dev/inventory-report"].startswith(
        '{"drifted":true,"matchingIndices":[0],'
    )


def test_a_matching_inventory_is_annotated_false(
    monkeypatch: pytest.MonkeyPatch, api: type[RecordingCoreV1Api]
) -> None:
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1")
    annotate_node("node-a", DriftReport(problems=[], matching_indices=frozenset({0})))
    assert api.patches[0][1]["metadata"]["annotations"]["gpuconf.dev/inventory-drift"] == "false"


def test_api_failures_are_logged_not_raised(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def refuse() -> None:
        raise kubernetes.config.ConfigException("no service account token")

    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1")
    monkeypatch.setattr(kubernetes.config, "load_incluster_config", refuse)
    with caplog.at_level(logging.WARNING):
        annotate_node("node-a", DRIFTED)
    assert "could not annotate node node-a" in caplog.text
    assert "no service account token" in caplog.text
