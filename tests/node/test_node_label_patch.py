"""The labels reach the API server as one strategic-merge patch of the node's own object: set
and removed keys, the owned-keys annotation, and the resourceVersion it read (a conflict fails
and is retried later). The real Kubernetes client talks to a stand-in HTTP server."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import kubernetes
import pytest

from gpuconf.gpus.gfd_labels import OWNED_ANNOTATION
from gpuconf.node.node_labels import publish_labels

NODE = {
    "apiVersion": "v1",
    "kind": "Node",
    "metadata": {
        "name": "node-a",
        "resourceVersion": "42",
        "labels": {
            "kubernetes.io/hostname": "node-a",
            "nvidia.com/gpu.replicas": "4",
            "nvidia.com/gpu.product": "Tesla-T4-SHARED",
        },
        "annotations": {OWNED_ANNOTATION: "nvidia.com/gpu.replicas"},
    },
}


class ApiServer(ThreadingHTTPServer):
    patches: list[tuple[str, str, Any]]
    status: int = 200


class Handler(BaseHTTPRequestHandler):
    server: ApiServer

    def do_GET(self) -> None:
        self._reply(200, NODE)

    def do_PATCH(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.server.patches.append((self.path, self.headers["Content-Type"], body))
        self._reply(self.server.status, NODE if self.server.status == 200 else {"kind": "Status"})

    def _reply(self, status: int, body: Any) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *_: Any) -> None:
        pass


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[ApiServer]:
    httpd = ApiServer(("127.0.0.1", 0), Handler)
    httpd.patches = []
    threading.Thread(target=httpd.serve_forever, daemon=True).start()

    def in_cluster_config() -> None:
        configuration = kubernetes.client.Configuration()
        configuration.host = f"http://127.0.0.1:{httpd.server_address[1]}"
        kubernetes.client.Configuration.set_default(configuration)

    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "127.0.0.1")
    monkeypatch.setattr(kubernetes.config, "load_incluster_config", in_cluster_config)
    yield httpd
    httpd.shutdown()
    httpd.server_close()


def test_one_patch_sets_removes_and_records_the_owned_keys(server: ApiServer) -> None:
    wanted = {"nvidia.com/gpu.product": "Tesla-T4", "gpuconf.dev/pool": "t4"}
    assert publish_labels("node-a", wanted)
    [(path, content_type, body)] = server.patches
    assert path == "/api/v1/nodes/node-a"
    assert content_type == "application/strategic-merge-patch+json"
    assert body == {
        "metadata": {
            "resourceVersion": "42",
            # GFD's product label was there first: not gpuconf's to change.
            "labels": {"gpuconf.dev/pool": "t4", "nvidia.com/gpu.replicas": None},
            "annotations": {OWNED_ANNOTATION: "gpuconf.dev/pool"},
        }
    }


def test_a_refused_patch_is_reported_for_a_retry(server: ApiServer) -> None:
    server.status = 409
    assert not publish_labels("node-a", {"gpuconf.dev/pool": "t4"})
