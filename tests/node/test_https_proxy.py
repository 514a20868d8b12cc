"""Which API server addresses go through the environment's HTTPS proxy: NO_PROXY read as
client-go reads it (net/http.ProxyFromEnvironment, the httpproxy copy bundled in Go's standard
library, $GOROOT/src/vendor/golang.org/x/net/http/httpproxy/proxy.go, and x/net's proxy_test.go
cases), where urllib's own matching reads no CIDR ranges."""

from __future__ import annotations

import pytest
from https_proxy_cases import DIRECT, PROXIED, PROXY, REFUSED, TUNNELS

from gpuconf.node.https_proxy import ProxyUnusable, Tunnel, https_proxy, tunnel


def _proxied(server: str, no_proxy: str) -> bool:
    return https_proxy(server, {"HTTPS_PROXY": PROXY, "NO_PROXY": no_proxy}) == PROXY


@pytest.mark.parametrize(("server", "no_proxy"), DIRECT)
def test_a_server_no_proxy_lists_or_on_loopback_is_reached_directly(
    server: str, no_proxy: str
) -> None:
    assert not _proxied(server, no_proxy)


@pytest.mark.parametrize(("server", "no_proxy"), PROXIED)
def test_a_server_no_proxy_does_not_list_goes_through_the_proxy(server: str, no_proxy: str) -> None:
    assert _proxied(server, no_proxy)


# FromEnvironment: getEnvAny("HTTPS_PROXY", "https_proxy"), getEnvAny("NO_PROXY", "no_proxy").
def test_the_upper_case_names_come_first() -> None:
    environ = {"HTTPS_PROXY": PROXY, "https_proxy": "http://other.example:8080"}
    assert https_proxy("https://10.96.0.1:443", environ) == PROXY
    listed = {**environ, "NO_PROXY": "10.0.0.0/8", "no_proxy": "192.168.0.0/16"}
    assert https_proxy("https://10.96.0.1:443", listed) is None
    assert https_proxy("https://192.168.0.1:443", listed) == PROXY


def test_an_empty_name_counts_as_unset() -> None:
    environ = {"HTTPS_PROXY": "", "https_proxy": PROXY, "NO_PROXY": "", "no_proxy": "10.0.0.0/8"}
    assert https_proxy("https://10.96.0.1:443", environ) is None
    assert https_proxy("https://10.96.0.1:443", {**environ, "no_proxy": ""}) == PROXY


def test_without_a_proxy_every_server_is_reached_directly() -> None:
    assert https_proxy("https://10.96.0.1:443", {"NO_PROXY": ""}) is None


@pytest.mark.parametrize(("proxy", "expected"), TUNNELS)
def test_the_tunnel_reaches_the_proxy_as_go_s_transport_does(proxy: str, expected: Tunnel) -> None:
    assert tunnel(proxy) == expected


@pytest.mark.parametrize("proxy", REFUSED)
def test_a_proxy_the_client_cannot_speak_to_as_go_does_is_refused(proxy: str) -> None:
    """Go speaks TLS to an https:// proxy and SOCKS5 to a socks5:// one; a CONNECT in clear
    would carry the credentials unencrypted."""
    with pytest.raises(ProxyUnusable):
        tunnel(proxy)
