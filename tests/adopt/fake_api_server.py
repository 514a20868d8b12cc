"""A small stand-in for kube-apiserver, over real HTTP on 127.0.0.1, serving what the real one
serves for the calls gpuconf makes: GET /version, and of the Node and ResourceQuota lists (and,
when given, resource.k8s.io/v1 DeviceClasses and ResourceSlices; cluster-wide), in
pages with `limit` and `continue`, each error as a Status object with its code (403 Forbidden by
bearer token, 410 Expired for a continue token that has gone stale).

Its limits, beside the real server: no watch, no field or label selectors, no
resourceVersion semantics beyond an expiring continue token, tokens only (no client
certificates), one API version per resource, and nothing but the two lists."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

LISTS = {
    "/api/v1/nodes": ("NodeList", "nodes"),
    "/api/v1/resourcequotas": ("ResourceQuotaList", "resourcequotas"),
}
TOKEN = "gpuconf-reader"
DENIED_TOKEN = "no-rbac"
EXPIRED = (
    "The provided continue parameter is too old to display a consistent list result. You can "
    "start a new list without the continue parameter, or use the continue token in this response "
    "to retrieve the remainder of the results."
)


DRA_LISTS = {
    "/apis/resource.k8s.io/v1/deviceclasses": ("DeviceClassList", "deviceclasses"),
    "/apis/resource.k8s.io/v1/resourceslices": ("ResourceSliceList", "resourceslices"),
}


class FakeApiServer:
    def __init__(
        self,
        nodes: list[dict[str, Any]],
        quotas: list[dict[str, Any]],
        dra: tuple[list[dict[str, Any]], list[dict[str, Any]]] | None = None,
    ) -> None:
        """`dra`: DeviceClasses and ResourceSlices, served as resource.k8s.io/v1; without it the
        group is not served (404), as on a cluster with DRA off."""
        self.objects = {"/api/v1/nodes": nodes, "/api/v1/resourcequotas": quotas}
        self.lists = dict(LISTS)
        if dra is not None:
            self.lists.update(DRA_LISTS)
            self.objects.update(zip(DRA_LISTS, dra, strict=True))
        self.requests: list[str] = []
        self.expire_next_continue = False
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def kubeconfig(self, folder: Path) -> Path:
        path = folder / "kubeconfig"
        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "fake", "cluster": {"server": self.url}}],
            "users": [
                {"name": "reader", "user": {"token": TOKEN}},
                {"name": "nobody", "user": {"token": DENIED_TOKEN}},
            ],
            "contexts": [
                {"name": "lab", "context": {"cluster": "fake", "user": "reader"}},
                {"name": "no-rbac", "context": {"cluster": "fake", "user": "nobody"}},
            ],
            "current-context": "lab",
        }
        path.write_text(json.dumps(config))
        return path

    @contextmanager
    def running(self) -> Iterator[FakeApiServer]:
        thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        thread.start()
        try:
            yield self
        finally:
            self._server.shutdown()
            self._server.server_close()
            thread.join()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # the name http.server calls
                url = urlsplit(self.path)
                query = {k: v[-1] for k, v in parse_qs(url.query).items()}
                fake.requests.append(self.path)
                token = self.headers.get("Authorization", "").removeprefix("Bearer ")
                if url.path in ("/version", "/version/"):
                    return self._send(200, {"major": "1", "minor": "33+", "gitVersion": "v1.33.4"})
                if url.path not in fake.lists:
                    return self._status(
                        404, "NotFound", "the server could not find the requested resource"
                    )
                kind, resource = fake.lists[url.path]
                if token != TOKEN:
                    return self._status(
                        403,
                        "Forbidden",
                        f'{resource} is forbidden: User "system:serviceaccount:default:{token}" '
                        f'cannot list resource "{resource}" in API group "" at the cluster scope',
                    )
                items = fake.objects[url.path]
                start = int(query.get("continue", "0") or 0)
                if "continue" in query and fake.expire_next_continue:
                    fake.expire_next_continue = False
                    return self._status(410, "Expired", EXPIRED)
                limit = int(query.get("limit", "0") or 0) or len(items)
                page = items[start : start + limit]
                metadata: dict[str, Any] = {"resourceVersion": "4242"}
                if start + limit < len(items):
                    metadata["continue"] = str(start + limit)
                    metadata["remainingItemCount"] = len(items) - start - limit
                self._send(
                    200, {"kind": kind, "apiVersion": "v1", "metadata": metadata, "items": page}
                )
                return None

            def _status(self, code: int, reason: str, message: str) -> None:
                body = {
                    "kind": "Status",
                    "apiVersion": "v1",
                    "metadata": {},
                    "status": "Failure",
                    "message": message,
                    "reason": reason,
                    "code": code,
                }
                self._send(code, body)

            def _send(self, code: int, body: dict[str, Any]) -> None:
                data = json.dumps(body).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        return Handler
