"""The node runtime's own client against an HTTPS stand-in of the API server: TLS checked
against the service account's CA, the bearer token sent and re-read when it rotates, the
patch type and body, and the server's refusals as the server words them."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
from in_pod import as_pod
from node_api import NODE, TOKEN, NodeApi, make_pki

from gpuconf.node import in_cluster
from gpuconf.node.own_node_client import ApiError, ApiUnreachable, OwnNode


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


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
def test_after_unauthorized_the_next_call_reads_the_token_again(
    node_api: NodeApi, pod: Path
) -> None:
    """The kubelet rotated the token and the server no longer takes the old one: the call
    fails, and the next one, within the minute, sends the new token."""
    client = _client(Clock())
    node_api.accepted_token = "token-after-rotation"
    (pod / "token").write_text("token-after-rotation", encoding="utf-8")
    with pytest.raises(ApiError) as refused:
        client.get()
    assert refused.value.status == 401
    assert client.get() == NODE


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
