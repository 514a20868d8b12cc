"""The node runtime's own client against an HTTPS stand-in of the API server: TLS checked
against the service account's CA and the server's name, the bearer token sent and re-read when
it rotates and never to another server, the patch type and body, the server's refusals as the
server words them, and the environment's proxy used as client-go uses it."""

from __future__ import annotations

import base64
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from builders import Clock
from in_pod import as_pod
from node_api import NODE, TOKEN, NodeApi, make_pki

from gpuconf.node import in_cluster
from gpuconf.node.own_node_client import ApiError, ApiUnreachable, OwnNode


def _client(clock: Clock | None = None) -> OwnNode:
    config = in_cluster.load()
    if clock is not None:
        config = config._replace(token=in_cluster.TokenFile(config.token.path, clock))
    return OwnNode("node-a", config)


@pytest.mark.usefixtures("pod")
def test_get_reads_the_node_with_the_pod_s_token(node_api: NodeApi) -> None:
    assert _client().get() == NODE
    [seen] = node_api.seen
    assert (seen.method, seen.path) == ("GET", "/api/v1/nodes/node-a")
    assert seen.headers["Authorization"] == f"Bearer {TOKEN}"
    assert seen.headers["Accept"] == "application/json"


@pytest.mark.usefixtures("pod")
def test_a_patch_is_a_strategic_merge_patch_of_the_node(node_api: NodeApi) -> None:
    body = {"metadata": {"labels": {"gpuconf.dev/pool": "t4", "gone": None}}}
    _client().patch(body)
    [seen] = node_api.seen
    assert (seen.method, seen.path) == ("PATCH", "/api/v1/nodes/node-a")
    assert seen.headers["Content-Type"] == "application/strategic-merge-patch+json"
    assert seen.headers["Authorization"] == f"Bearer {TOKEN}"
    assert seen.body == body


def test_a_server_whose_certificate_another_ca_signed_gets_nothing(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, node_api: NodeApi
) -> None:
    """The stand-in's certificate is signed by its own CA; this pod trusts another one."""
    stranger = make_pki(tmp_path / "other-pki")
    ca = (stranger / "ca.crt").read_bytes()
    as_pod(monkeypatch, tmp_path / "account", "127.0.0.1", node_api.port, TOKEN, ca)
    with pytest.raises(ApiUnreachable, match="CERTIFICATE_VERIFY_FAILED"):
        _client().get()
    assert node_api.seen == []  # no request, so no token, left the client


@pytest.mark.usefixtures("pod")
def test_a_rotated_token_is_sent_once_a_minute_has_passed(node_api: NodeApi, pod: Path) -> None:
    clock = Clock()
    client = _client(clock)
    client.get()
    (pod / "token").write_text("token-after-rotation", encoding="utf-8")
    clock.now += 30
    client.get()
    clock.now += 30
    client.get()
    sent = [seen.headers["Authorization"] for seen in node_api.seen]
    assert sent == [f"Bearer {TOKEN}", f"Bearer {TOKEN}", "Bearer token-after-rotation"]


@pytest.mark.usefixtures("pod")
def test_a_refusal_carries_the_server_s_status_and_message(node_api: NodeApi) -> None:
    node_api.statuses = [422]
    with pytest.raises(ApiError) as refused:
        _client().patch({"metadata": {"labels": {"x": "y"}}})
    assert refused.value.status == 422
    assert str(refused.value) == "the API server answered 422: the stand-in refuses with 422"


def test_no_server_listening_is_unreachable(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, pki: Path
) -> None:
    with socket.socket() as reserved:
        reserved.bind(("127.0.0.1", 0))
        port = reserved.getsockname()[1]
        ca = (pki / "ca.crt").read_bytes()
        as_pod(monkeypatch, tmp_path / "account", "127.0.0.1", port, TOKEN, ca)
        with pytest.raises(ApiUnreachable, match=f"https://127.0.0.1:{port}: .*refused"):
            _client().get()


def test_a_server_whose_certificate_names_another_host_gets_nothing(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, pki: Path
) -> None:
    """The stand-in's certificate, signed by the pod's CA, names 127.0.0.1; served on 127.0.0.2
    the name does not match."""
    with NodeApi(NODE, pki, host="127.0.0.2") as elsewhere:
        ca = (pki / "ca.crt").read_bytes()
        as_pod(monkeypatch, tmp_path / "account", "127.0.0.2", elsewhere.port, TOKEN, ca)
        with pytest.raises(ApiUnreachable, match="IP address mismatch"):
            _client().get()
        assert elsewhere.seen == []


@pytest.mark.usefixtures("pod")
def test_a_redirect_is_refused_and_the_token_never_reaches_the_other_server(
    node_api: NodeApi, pki: Path
) -> None:
    with NodeApi(NODE, pki) as other:
        node_api.redirect_to = f"https://127.0.0.1:{other.port}/api/v1/nodes/node-a"
        with pytest.raises(ApiError) as refused:
            _client().get()
        assert refused.value.status == 302
        assert other.seen == []
    assert len(node_api.seen) == 1


@pytest.fixture
def closed_port() -> Iterator[int]:
    """A port on 127.0.0.1 nothing listens on (bound, never listening: connections are refused)."""
    with socket.socket() as reserved:
        reserved.bind(("127.0.0.1", 0))
        yield reserved.getsockname()[1]


@pytest.mark.usefixtures("pod")
@pytest.mark.parametrize("no_proxy", ["127.0.0.0/8", ""])
def test_a_loopback_server_or_one_no_proxy_lists_by_range_is_reached_directly(
    monkeypatch: pytest.MonkeyPatch, node_api: NodeApi, closed_port: int, no_proxy: str
) -> None:
    monkeypatch.setenv("HTTPS_PROXY", f"http://127.0.0.1:{closed_port}")
    monkeypatch.setenv("NO_PROXY", no_proxy)
    assert _client().get() == NODE


class ProxyStandIn:
    """An HTTP proxy that records the first request line of each connection and refuses it."""

    def __init__(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.requests: list[str] = []
        self.heads: list[list[str]] = []
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        with self.listener:
            connection, _ = self.listener.accept()
            with connection:
                head = b""
                while b"\r\n\r\n" not in head and (chunk := connection.recv(4096)):
                    head += chunk
                lines = head.decode().split("\r\n")
                self.requests.append(lines[0])
                self.heads.append([line for line in lines[1:] if line])
                connection.sendall(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n")


@pytest.mark.parametrize(
    "no_proxy",
    [
        "fd00::/8,10.0.0.0/16,.cluster.local,10.96.0.1:8443",
        "",
        # Bare suffixes of the address: urllib's own NO_PROXY matching takes them, Go's does not.
        "0.1,96.0.1",
    ],
)
def test_a_service_address_no_proxy_does_not_list_goes_through_the_proxy(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, pki: Path, no_proxy: str
) -> None:
    """The entries that do list it are https_proxy's unit tests (test_https_proxy.py): reached
    directly, 10.96.0.1 is nowhere here."""
    proxy = ProxyStandIn()
    ca = (pki / "ca.crt").read_bytes()
    as_pod(monkeypatch, tmp_path / "account", "10.96.0.1", 443, TOKEN, ca)
    monkeypatch.setenv("HTTPS_PROXY", f"http://127.0.0.1:{proxy.port}")
    monkeypatch.setenv("NO_PROXY", no_proxy)
    with pytest.raises(ApiUnreachable, match="403 Forbidden"):
        _client().get()
    assert [line.split()[:2] for line in proxy.requests] == [["CONNECT", "10.96.0.1:443"]]


@pytest.mark.parametrize(
    ("proxy_url", "authorization"),
    [
        ("http://ops:p%40ss@127.0.0.1:{port}", "Basic " + base64.b64encode(b"ops:p@ss").decode()),
        ("127.0.0.1:{port}", None),  # no scheme: Go reads it as http://
    ],
)
def test_the_proxy_gets_a_connect_with_its_credentials_and_the_server_never_sees_them(
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    pki: Path,
    proxy_url: str,
    authorization: str | None,
) -> None:
    proxy = ProxyStandIn()
    as_pod(
        monkeypatch, tmp_path / "account", "10.96.0.1", 443, TOKEN, (pki / "ca.crt").read_bytes()
    )
    monkeypatch.setenv("HTTPS_PROXY", proxy_url.format(port=proxy.port))
    monkeypatch.delenv("NO_PROXY", raising=False)
    with pytest.raises(ApiUnreachable, match="403 Forbidden"):
        _client().get()
    assert [line.split()[:2] for line in proxy.requests] == [["CONNECT", "10.96.0.1:443"]]
    sent = [line for line in proxy.heads[0] if line.lower().startswith("proxy-authorization:")]
    assert sent == ([f"Proxy-Authorization: {authorization}"] if authorization else [])
    assert not any(line.lower().startswith("authorization:") for line in proxy.heads[0])


def test_an_https_proxy_is_never_sent_a_connect_in_clear(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, pki: Path
) -> None:
    proxy = ProxyStandIn()
    as_pod(
        monkeypatch, tmp_path / "account", "10.96.0.1", 443, TOKEN, (pki / "ca.crt").read_bytes()
    )
    monkeypatch.setenv("HTTPS_PROXY", f"https://ops:secret@127.0.0.1:{proxy.port}")
    monkeypatch.delenv("NO_PROXY", raising=False)
    with pytest.raises(ApiUnreachable, match="through an http:// proxy only"):
        _client().get()
    assert proxy.requests == []
