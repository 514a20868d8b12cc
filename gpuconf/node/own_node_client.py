"""The node runtime's only API calls, GET and PATCH of its own Node, over HTTPS with the standard
library: the Kubernetes client's models cost the runtime ~40 MiB of resident memory for two
requests. TLS is verified against the service account's CA, the server's name included; the
bearer token comes from in_cluster.TokenFile, read when the client is made: the runtime makes
one per call (its calls are minutes apart), so each sends the token the kubelet last wrote and
a rotated-out one is never sent twice. The environment's HTTPS proxy is used where
https_proxy decides, as client-go decides (NO_PROXY's CIDR ranges, never for loopback). A
redirect is refused, never followed: it would carry the token to another server."""

from __future__ import annotations

import json
import ssl
import urllib.error
import urllib.request
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote

from gpuconf.node.https_proxy import ProxyUnusable, https_proxy, tunnel
from gpuconf.node.in_cluster import InClusterConfig

STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"
TIMEOUT_SECONDS = 30.0
"""A request that hangs longer is dropped: the caller logs it and tries again later."""


class ApiError(Exception):
    """The API server answered with an error status."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(f"the API server answered {status}: {message}")
        self.status = status
        self.message = message


class ApiUnreachable(Exception):
    """No answer: refused, timed out, or the server's certificate is not the cluster's."""


def status_message(body: bytes | str | None, reason: str) -> str:
    """The message of the Status object the server sent, else the HTTP reason."""
    try:
        return str(json.loads(body or "")["message"])
    except (TypeError, ValueError, KeyError):
        return reason


class RefuseRedirects(urllib.request.HTTPRedirectHandler):
    """A 3xx answer surfaces as an HTTPError (so ApiError) instead of being followed with the
    Authorization header; the API server never redirects a Node's URL."""

    def redirect_request(self, *_: Any) -> None:
        return None


class OwnNode:
    def __init__(self, name: str, config: InClusterConfig) -> None:
        self.name = name
        self.url = f"{config.server}/api/v1/nodes/{quote(name, safe='')}"
        self._server = config.server
        self._token = config.token
        context = ssl.create_default_context(cafile=str(config.ca_file))
        proxy = https_proxy(config.server)
        try:
            self._tunnel = tunnel(proxy) if proxy else None
        except ProxyUnusable as unusable:
            raise ApiUnreachable(
                f"cannot reach the API server {config.server}: {unusable}"
            ) from None
        self._opener = urllib.request.OpenerDirector()
        # HTTPS only, no plain HTTP handler, and no ProxyHandler: each request is sent through
        # the proxy https_proxy chose (or none). ProxyHandler would apply urllib's NO_PROXY
        # matching on top, which bypasses more than Go's: `0.1` would match 10.96.0.1.
        for handler in (
            urllib.request.HTTPSHandler(context=context),
            urllib.request.HTTPDefaultErrorHandler(),
            RefuseRedirects(),
            urllib.request.HTTPErrorProcessor(),
        ):
            self._opener.add_handler(handler)

    def get(self) -> dict[str, Any]:
        return self._request("GET")

    def patch(self, body: Mapping[str, Any]) -> dict[str, Any]:
        """A strategic-merge patch, as kubectl patch and the Kubernetes client send a dict."""
        return self._request("PATCH", json.dumps(body).encode(), STRATEGIC_MERGE_PATCH)

    def _request(
        self, method: str, data: bytes | None = None, content_type: str | None = None
    ) -> dict[str, Any]:
        request = urllib.request.Request(self.url, data, method=method)
        request.add_header("Accept", "application/json")
        request.add_header("Authorization", f"Bearer {self._token.bearer()}")
        if content_type:
            request.add_header("Content-Type", content_type)
        if self._tunnel is not None:
            request.set_proxy(self._tunnel.proxy, "https")  # a CONNECT tunnel to the server
            if self._tunnel.authorization:
                # urllib sends this header on the CONNECT alone, never to the server.
                request.add_header("Proxy-Authorization", self._tunnel.authorization)
        try:
            with self._opener.open(request, timeout=TIMEOUT_SECONDS) as response:
                answer: dict[str, Any] = json.loads(response.read())
                return answer
        except urllib.error.HTTPError as error:
            message = status_message(error.read(), str(error.reason))
            raise ApiError(error.code, message) from None
        except urllib.error.URLError as error:
            raise ApiUnreachable(
                f"cannot reach the API server {self._server}: {error.reason}"
            ) from None
        except (OSError, ValueError) as error:  # a reset connection, a timeout, a broken body
            raise ApiUnreachable(f"no answer from the API server {self._server}: {error}") from None
