"""/metrics, /healthz and /status (JSON, for `gpuconf node check`) on the metrics port.

A GET and one reply per connection, on plain sockets: http.server would load http.client,
email and ssl (2.5 MiB of the runtime's resident memory) for the same three answers.
"""

from __future__ import annotations

import contextlib
import errno
import json
import socket
import threading
from collections.abc import Callable, Mapping

from gpuconf.errors import UserError
from gpuconf.node.prometheus_text import CONTENT_TYPE, Registry

Status = Callable[[], Mapping[str, object]]

MAX_REQUEST_HEAD = 8192
CLIENT_TIMEOUT_SECONDS = 5.0
_REASONS = {200: "OK", 400: "Bad Request", 404: "Not Found", 405: "Method Not Allowed"}
_REASONS[503] = "Service Unavailable"


class MetricsPortUnavailable(UserError):
    """The metrics port cannot be listened on (another process has it, or it is not allowed)."""


class MetricsServer:
    def __init__(
        self,
        port: int,
        registry: Registry,
        healthy: Callable[[], bool],
        status: Status = dict,
    ) -> None:
        self._registry = registry
        self._healthy = healthy
        self._status = status
        try:
            self._listener = _listen(port)
        except OSError as error:
            raise MetricsPortUnavailable(
                f"cannot serve metrics on port {port}: {error.strerror or error}"
            ) from None
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._serve, name="metrics", daemon=True)

    @property
    def port(self) -> int:
        return int(self._listener.getsockname()[1])

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stopping.set()
        with contextlib.suppress(OSError):  # not connected: closing alone ends accept()
            self._listener.shutdown(socket.SHUT_RDWR)
        self._listener.close()
        self._thread.join(timeout=5)

    def _serve(self) -> None:
        while not self._stopping.is_set():
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            threading.Thread(target=self._answer, args=(client,), daemon=True).start()

    def _answer(self, client: socket.socket) -> None:
        with client:
            client.settimeout(CLIENT_TIMEOUT_SECONDS)
            try:
                head = _read_head(client)
                client.sendall(self._reply(head))
            except OSError:
                return

    def _reply(self, head: bytes) -> bytes:
        request_line = head.split(b"\r\n", 1)[0].decode("latin-1").split()
        if len(request_line) != 3:
            return _response(400, "text/plain", b"bad request\n")
        method, target, _ = request_line
        if method not in ("GET", "HEAD"):
            return _response(405, "text/plain", b"only GET\n")
        path = target.split("?", 1)[0]
        if path == "/metrics":
            body = self._registry.exposition()
            response = _response(200, CONTENT_TYPE, body)
        elif path == "/healthz":
            ok = self._healthy()
            response = _response(
                200 if ok else 503, "text/plain", b"ok\n" if ok else b"unhealthy\n"
            )
        elif path == "/status":
            text = json.dumps(self._status(), sort_keys=True, indent=1) + "\n"
            response = _response(200, "application/json", text.encode())
        else:
            body = b"not found: try /metrics, /healthz or /status\n"
            response = _response(404, "text/plain", body)
        return response.split(b"\r\n\r\n", 1)[0] + b"\r\n\r\n" if method == "HEAD" else response


def _listen(port: int) -> socket.socket:
    """Every address of the pod, IPv6 ones too: on an IPv6-only cluster the kubelet's probes and
    Prometheus reach the pod at its IPv6 address. IPv4 alone where the kernel has no IPv6."""
    if socket.has_dualstack_ipv6():
        try:
            return socket.create_server(("", port), family=socket.AF_INET6, dualstack_ipv6=True)
        except OSError as error:
            if error.errno not in (errno.EAFNOSUPPORT, errno.EADDRNOTAVAIL):
                raise
    return socket.create_server(("", port))


def _read_head(client: socket.socket) -> bytes:
    head = b""
    while b"\r\n\r\n" not in head and len(head) < MAX_REQUEST_HEAD:
        chunk = client.recv(4096)
        if not chunk:
            break
        head += chunk
    return head


def _response(status: int, content_type: str, body: bytes) -> bytes:
    head = (
        f"HTTP/1.0 {status} {_REASONS[status]}\r\nContent-Type: {content_type}\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    )
    return head.encode() + body
