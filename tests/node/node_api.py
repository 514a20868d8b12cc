"""kube-apiserver's `/api/v1/nodes/<name>` for one Node, over HTTPS on 127.0.0.1, for the node
runtime's own client (gpuconf/node/own_node_client.py): GET answers the Node, PATCH answers it
too, or a redirect when told to; every request is recorded with its headers and JSON body. Its certificate and CA are made
by the test control plane's `certs` program (tests/control_plane/certs: Go's standard library,
no openssl), built with the control plane."""

from __future__ import annotations

import json
import ssl
import subprocess
import threading
from dataclasses import dataclass
from email.message import Message
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from control_plane.cluster import build

from gpuconf.gpus.gfd_labels import OWNED_ANNOTATION

TOKEN = "token-before-rotation"
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


def make_pki(folder: Path) -> Path:
    """A fresh CA (ca.crt) and a serving certificate for 127.0.0.1 it signed (apiserver.crt,
    apiserver.key) in `folder`."""
    subprocess.run([build() / "certs", folder], check=True)
    return folder


@dataclass(frozen=True)
class Seen:
    method: str
    path: str
    headers: Message
    body: Any


class NodeApi(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, node: dict[str, Any], pki: Path, host: str = "127.0.0.1") -> None:
        """`host`: the loopback address to serve on; the certificate names 127.0.0.1 only."""
        super().__init__((host, 0), _Handler)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(pki / "apiserver.crt", pki / "apiserver.key")
        self.socket = context.wrap_socket(self.socket, server_side=True)
        self.node = node
        self.seen: list[Seen] = []
        self.statuses: list[int] = []
        """Statuses to answer the next requests with, in order (200: the Node), then 200."""
        self.redirect_to: str | None = None
        """When set, every request is answered 302 Found with this Location."""
        self._thread = threading.Thread(target=self.serve_forever, args=(0.05,), daemon=True)

    @property
    def port(self) -> int:
        return int(self.server_address[1])

    def __enter__(self) -> NodeApi:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.shutdown()
        self.server_close()
        self._thread.join()


def status(code: int, message: str) -> dict[str, Any]:
    """A failure as the API server words it (metav1.Status)."""
    return {"kind": "Status", "apiVersion": "v1", "status": "Failure", "message": message, "code": code}  # fmt: skip


class _Handler(BaseHTTPRequestHandler):
    server: NodeApi

    def do_GET(self) -> None:
        self._answer()

    def do_PATCH(self) -> None:
        self._answer()

    def _answer(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        data = self.rfile.read(length) if length else b""
        self.server.seen.append(
            Seen(self.command, self.path, self.headers, json.loads(data) if data else None)
        )
        if self.server.redirect_to is not None:
            self._reply(302, status(302, "Found"), {"Location": self.server.redirect_to})
        else:
            code = self.server.statuses.pop(0) if self.server.statuses else 200
            if code == 200:
                self._reply(200, self.server.node)
            else:
                self._reply(code, status(code, f"the stand-in refuses with {code}"))

    def _reply(
        self, code: int, body: dict[str, Any], headers: dict[str, str] | None = None
    ) -> None:
        data = json.dumps(body).encode()
        self.send_response(code)
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *_: Any) -> None:
        pass
