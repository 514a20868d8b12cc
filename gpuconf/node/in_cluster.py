"""Where a pod finds its API server and its credentials, read as client-go reads them
(kubernetes/client-go rest/config.go, InClusterConfig): the server from KUBERNETES_SERVICE_HOST
and KUBERNETES_SERVICE_PORT (net.JoinHostPort: an IPv6 host in brackets), the service account's
token and CA from the folder the kubelet mounts. The token is re-read every minute, as
transport/token_source.go's cached file token source does, because a projected token rotates:
the kubelet renews it at 80% of its lifetime and a process that kept the first one would be
refused once it expires. The one setup for every in-cluster call gpuconf's node side makes
(own_node_client for the node runtime, driver_upgrade's Kubernetes client)."""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import NamedTuple

log = logging.getLogger(__name__)

SERVICE_ACCOUNT_DIR = Path("/var/run/secrets/kubernetes.io/serviceaccount")
HOST_ENV, PORT_ENV = "KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT"
TOKEN_PERIOD_SECONDS = 60.0
"""client-go's fileTokenSource period: half the time between the kubelet's refresh of a
projected token and the old one's expiry (default lifetime 10 min, refreshed at 80%)."""
TOKEN_LEEWAY_SECONDS = 10.0
"""client-go's cachingTokenSource re-reads this long before the period ends."""


class InClusterConfigError(Exception):
    """The pod's view of its API server is missing or unreadable."""


def in_a_pod(environ: Mapping[str, str] = os.environ) -> bool:
    """Whether the process runs in a pod (the kubelet sets the service host)."""
    return bool(environ.get(HOST_ENV))


def join_host_port(host: str, port: str) -> str:
    """Go's net.JoinHostPort (net/ipsock.go): a host with a colon (IPv6, a zone included) goes
    in brackets."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


class TokenFile:
    """The bearer token in a file the kubelet rewrites: read at once (a missing or empty file is
    an error then), then again once TOKEN_PERIOD_SECONDS have passed (less the leeway). A failed
    re-read keeps the token it had and logs why, as client-go's cachingTokenSource does
    ("Unable to rotate token"). No message ever quotes the token."""

    def __init__(self, path: Path, clock: Callable[[], float] = time.monotonic) -> None:
        self.path = path
        self._clock = clock
        self._lock = threading.Lock()
        self._token = self._read()
        self._read_at = clock()

    def _read(self) -> str:
        try:
            token = self.path.read_text(encoding="utf-8").strip()
        except OSError as error:
            raise InClusterConfigError(
                f"cannot read the service account token {self.path}: {error.strerror}"
            ) from None
        if not token:
            raise InClusterConfigError(f"the service account token {self.path} is empty")
        if not all("!" <= character <= "~" for character in token):
            # http.client would refuse the header with the token in its message, which is logged.
            raise InClusterConfigError(
                f"the service account token {self.path} holds a space, a line break or another"
                " character a bearer token cannot"
            )
        return token

    def bearer(self) -> str:
        with self._lock:
            now = self._clock()
            if now >= self._read_at + TOKEN_PERIOD_SECONDS - TOKEN_LEEWAY_SECONDS:
                try:
                    self._token = self._read()
                    self._read_at = now
                except InClusterConfigError as error:
                    log.warning("unable to rotate the service account token: %s", error)
            return self._token


class InClusterConfig(NamedTuple):
    server: str
    """https://host:port"""
    ca_file: Path
    """The CA bundle the server's certificate must chain to."""
    token: TokenFile


def load(
    environ: Mapping[str, str] = os.environ, account_dir: Path | None = None
) -> InClusterConfig:
    """The pod's API server and credentials; InClusterConfigError when it has none."""
    host, port = environ.get(HOST_ENV, ""), environ.get(PORT_ENV, "")
    if not host or not port:
        raise InClusterConfigError(f"not in a cluster: {HOST_ENV} and {PORT_ENV} must both be set")
    folder = account_dir or SERVICE_ACCOUNT_DIR
    token = TokenFile(folder / "token")
    ca_file = folder / "ca.crt"
    try:
        has_ca = ca_file.stat().st_size > 0
    except OSError as error:
        raise InClusterConfigError(
            f"cannot read the cluster's CA {ca_file}: {error.strerror}"
        ) from None
    if not has_ca:
        raise InClusterConfigError(f"the cluster's CA {ca_file} is empty")
    return InClusterConfig(f"https://{join_host_port(host, port)}", ca_file, token)
