"""A pod's view of its API server, read as client-go's rest.InClusterConfig reads it: the
service host and port, the mounted token (re-read every minute, as transport/token_source.go
does) and the CA."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from builders import Clock

from gpuconf.node import in_cluster
from gpuconf.node.in_cluster import InClusterConfigError, TokenFile, load

ENV = {"KUBERNETES_SERVICE_HOST": "10.96.0.1", "KUBERNETES_SERVICE_PORT": "443"}


@pytest.fixture
def account(tmp_path: Path) -> Path:
    (tmp_path / "token").write_text("the-token\n", encoding="utf-8")
    (tmp_path / "ca.crt").write_text("-----BEGIN CERTIFICATE-----\n", encoding="utf-8")
    return tmp_path


def test_the_server_is_https_on_the_service_host_and_port(account: Path) -> None:
    config = load(ENV, account)
    assert config.server == "https://10.96.0.1:443"
    assert config.ca_file == account / "ca.crt"
    assert config.token.bearer() == "the-token"  # trailing newline trimmed, as client-go does


@pytest.mark.parametrize(
    ("host", "server"),
    [
        ("fd00:10:96::1", "https://[fd00:10:96::1]:6443"),
        ("fe80::1%eth0", "https://[fe80::1%eth0]:6443"),
        ("kubernetes.default.svc", "https://kubernetes.default.svc:6443"),
        # Go's net/ipsock.go JoinHostPort brackets a host only for a colon, not for a `%`.
        ("node%1", "https://node%1:6443"),
    ],
)
def test_an_ipv6_host_is_bracketed_as_go_s_join_host_port_does(
    account: Path, host: str, server: str
) -> None:
    environ = {"KUBERNETES_SERVICE_HOST": host, "KUBERNETES_SERVICE_PORT": "6443"}
    assert load(environ, account).server == server


def test_in_a_pod_means_the_service_host_is_set() -> None:
    assert in_cluster.in_a_pod(ENV)
    assert not in_cluster.in_a_pod({"KUBERNETES_SERVICE_HOST": ""})
    assert not in_cluster.in_a_pod({})


@pytest.mark.parametrize(
    ("environ", "remove", "message"),
    [
        ({"KUBERNETES_SERVICE_HOST": "10.96.0.1"}, None, "not in a cluster: "),
        (ENV, "token", "cannot read the service account token "),
        (ENV, "ca.crt", "cannot read the cluster's CA "),
    ],
    ids=["no-port", "no-token", "no-ca"],
)
def test_what_is_missing_is_named(
    account: Path, environ: dict[str, str], remove: str | None, message: str
) -> None:
    if remove:
        (account / remove).unlink()
    with pytest.raises(InClusterConfigError, match=message):
        load(environ, account)


@pytest.mark.parametrize("name", ["token", "ca.crt"])
def test_an_empty_token_or_ca_is_refused(account: Path, name: str) -> None:
    (account / name).write_text("", encoding="utf-8")
    with pytest.raises(InClusterConfigError, match="is empty"):
        load(ENV, account)


def test_the_token_is_re_read_once_a_minute_less_the_leeway(account: Path) -> None:
    clock = Clock(1000.0)
    token = TokenFile(account / "token", clock)
    (account / "token").write_text("rotated", encoding="utf-8")
    clock.now += in_cluster.TOKEN_PERIOD_SECONDS - in_cluster.TOKEN_LEEWAY_SECONDS - 1
    assert token.bearer() == "the-token"
    clock.now += 1
    assert token.bearer() == "rotated"


def test_a_failed_re_read_keeps_the_last_token_and_says_why(
    account: Path, caplog: pytest.LogCaptureFixture
) -> None:
    clock = Clock(1000.0)
    token = TokenFile(account / "token", clock)
    (account / "token").unlink()
    clock.now += in_cluster.TOKEN_PERIOD_SECONDS
    with caplog.at_level(logging.WARNING, logger="gpuconf.node.in_cluster"):
        assert token.bearer() == "the-token"
    assert "unable to rotate the service account token: cannot read" in caplog.text


@pytest.mark.parametrize("inner", ["\n", " ", "\t", "\x00", "\x7f", "\u00e9"])
def test_a_token_a_header_cannot_carry_is_refused_without_quoting_it(
    account: Path, inner: str
) -> None:
    """http.client would refuse the header and quote it, token and all, in its error."""
    (account / "token").write_text(f"secret-head{inner}secret-tail\n", encoding="utf-8")
    with pytest.raises(InClusterConfigError) as refused:
        load(ENV, account)
    assert str(refused.value) == (
        f"the service account token {account / 'token'} holds a space, a line break or another"
        " character a bearer token cannot"
    )
    assert "secret" not in str(refused.value)
