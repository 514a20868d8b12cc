"""The labels reach the API server as one strategic-merge patch of the node's own object: set
and removed keys, the owned-keys annotation, and the resourceVersion it read (a conflict fails
and is retried later). The node runtime's own client talks to an HTTPS stand-in."""

from __future__ import annotations

import ast
import logging
import subprocess
import sys
from pathlib import Path

import pytest
from node_api import TOKEN, NodeApi

from gpuconf.gpus.gfd_labels import OWNED_ANNOTATION
from gpuconf.node.node_labels import Published, publish_labels


@pytest.mark.usefixtures("pod")
def test_one_patch_sets_removes_and_records_the_owned_keys(node_api: NodeApi) -> None:
    wanted = {"nvidia.com/gpu.product": "Tesla-T4", "gpuconf.dev/pool": "t4"}
    assert publish_labels("node-a", wanted) is Published.YES
    read, patched = node_api.seen
    assert (read.method, read.path) == ("GET", "/api/v1/nodes/node-a")
    assert (patched.method, patched.path) == ("PATCH", "/api/v1/nodes/node-a")
    assert patched.headers["Content-Type"] == "application/strategic-merge-patch+json"
    assert patched.headers["Authorization"] == f"Bearer {TOKEN}"
    assert patched.body == {
        "metadata": {
            "resourceVersion": "42",
            # GFD's product label was there first: not gpuconf's to change.
            "labels": {"gpuconf.dev/pool": "t4", "nvidia.com/gpu.replicas": None},
            "annotations": {OWNED_ANNOTATION: "gpuconf.dev/pool"},
        }
    }


@pytest.mark.usefixtures("pod")
def test_labels_already_published_are_not_patched_again(node_api: NodeApi) -> None:
    assert publish_labels("node-a", {"nvidia.com/gpu.replicas": "4"}) is Published.YES
    assert [seen.method for seen in node_api.seen] == ["GET"]


@pytest.mark.usefixtures("pod")
def test_a_refused_patch_is_logged_and_reported_for_a_retry(
    node_api: NodeApi, caplog: pytest.LogCaptureFixture
) -> None:
    node_api.statuses = [200, 409]  # the Node is read, the patch conflicts
    with caplog.at_level(logging.WARNING, logger="gpuconf.node.node_labels"):
        assert publish_labels("node-a", {"gpuconf.dev/pool": "t4"}) is Published.FAILED
    assert [seen.method for seen in node_api.seen] == ["GET", "PATCH"]
    (record,) = caplog.records
    assert record.getMessage() == (
        "could not label node node-a: the API server answered 409: the stand-in refuses with 409"
    )


def test_outside_a_cluster_publishing_is_done_with_nothing_sent(
    monkeypatch: pytest.MonkeyPatch, node_api: NodeApi
) -> None:
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    assert publish_labels("node-a", {"gpuconf.dev/pool": "t4"}) is Published.NOT_IN_A_POD
    assert node_api.seen == []


LOADED_AFTER_PUBLISHING = """\
import sys
from pathlib import Path

from gpuconf.node import in_cluster, node_annotation, node_labels

in_cluster.SERVICE_ACCOUNT_DIR = Path(sys.argv[1])
assert node_labels.publish_labels("node-a", {"gpuconf.dev/pool": "t4"}) is node_labels.Published.YES
node_annotation.annotate_pending("node-a", [])
print(sorted({name.split(".")[0] for name in sys.modules}))
"""


def test_publishing_in_a_cluster_loads_no_kubernetes_client(node_api: NodeApi, pod: Path) -> None:
    """The runtime's first Node patches load the standard library's HTTPS client, not the
    Kubernetes client and its models (import-linter's contract says the same of the code)."""
    done = subprocess.run(
        [sys.executable, "-c", LOADED_AFTER_PUBLISHING, str(pod)],
        capture_output=True,
        text=True,
        check=True,
    )
    loaded = ast.literal_eval(done.stdout)
    assert [seen.method for seen in node_api.seen] == ["GET", "PATCH", "PATCH"]
    assert "urllib" in loaded
    assert not {"kubernetes", "urllib3", "yaml", "google"} & set(loaded)
