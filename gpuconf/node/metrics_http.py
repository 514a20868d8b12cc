"""/metrics, /healthz and /status (JSON, for `gpuconf node check`) on the metrics port."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

Status = Callable[[], Mapping[str, object]]


def _handler(
    registry: CollectorRegistry, healthy: Callable[[], bool], status: Status
) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            path = self.path.split("?", 1)[0]
            if path == "/metrics":
                self._reply(200, CONTENT_TYPE_LATEST, generate_latest(registry))
            elif path == "/healthz":
                ok = healthy()
                self._reply(200 if ok else 503, "text/plain", b"ok\n" if ok else b"unhealthy\n")
            elif path == "/status":
                body = json.dumps(status(), sort_keys=True, indent=1) + "\n"
                self._reply(200, "application/json", body.encode())
            else:
                self._reply(404, "text/plain", b"not found: try /metrics, /healthz or /status\n")

        def _reply(self, status: int, content_type: str, body: bytes) -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            return  # scrapes every few seconds would drown the log

    return Handler


class MetricsServer:
    def __init__(
        self,
        port: int,
        registry: CollectorRegistry,
        healthy: Callable[[], bool],
        status: Status = dict,
    ) -> None:
        self._http = ThreadingHTTPServer(("", port), _handler(registry, healthy, status))
        self._http.daemon_threads = True
        self._thread = threading.Thread(
            target=self._http.serve_forever, name="metrics", daemon=True
        )

    @property
    def port(self) -> int:
        return int(self._http.server_address[1])

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._http.shutdown()
        self._http.server_close()
