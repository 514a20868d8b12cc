"""Which API server addresses go through the environment's HTTPS proxy: NO_PROXY read as
client-go reads it (net/http.ProxyFromEnvironment, the httpproxy copy bundled in Go's standard
library, $GOROOT/src/vendor/golang.org/x/net/http/httpproxy/proxy.go, and x/net's proxy_test.go
cases), where urllib's own matching reads no CIDR ranges."""

from __future__ import annotations

import pytest

from gpuconf.node.https_proxy import ProxyUnusable, Tunnel, https_proxy, tunnel

PROXY = "http://proxy.example:3128"


def _proxied(server: str, no_proxy: str) -> bool:
    return https_proxy(server, {"HTTPS_PROXY": PROXY, "NO_PROXY": no_proxy}) == PROXY


@pytest.mark.parametrize(
    ("server", "no_proxy"),
    [
        pytest.param("https://10.96.0.1:443", "10.96.0.0/12", id="service-cidr"),
        pytest.param("https://10.96.0.1:443", "192.168.0.0/16, 10.0.0.0/8", id="second-range"),
        pytest.param("https://[fd00:10:96::1]:443", "fd00:10:96::/108", id="ipv6-cidr"),
        pytest.param("https://[fd00:10:96::1]:443", "[fd00:10:96::1]:443", id="ipv6-port"),
        pytest.param("https://[fd00:10:96::1]:443", "fd00:10:96::1", id="ipv6-address"),
        pytest.param("https://10.96.0.1:443", "10.96.0.1", id="ipv4-address"),
        pytest.param("https://10.96.0.1", "10.96.0.1:443", id="default-port"),
        pytest.param("https://api.cluster.local:6443", "cluster.local", id="domain-suffix"),
        pytest.param("https://cluster.local:6443", "cluster.local", id="domain-itself"),
        pytest.param("https://api.cluster.local:6443", ".cluster.local", id="leading-dot"),
        pytest.param("https://api.cluster.local:6443", "*.cluster.local", id="leading-star"),
        pytest.param("https://API.Cluster.Local:6443", "api.cluster.local:6443", id="case-port"),
        pytest.param("https://10.96.0.1:443", "*", id="everything"),
        pytest.param("https://localhost:6443", "", id="localhost"),
        pytest.param("https://127.0.0.5:6443", "", id="loopback"),
        pytest.param("https://[::1]:6443", "", id="ipv6-loopback"),
    ],
)
def test_a_server_no_proxy_lists_or_on_loopback_is_reached_directly(
    server: str, no_proxy: str
) -> None:
    assert not _proxied(server, no_proxy)


@pytest.mark.parametrize(
    ("server", "no_proxy"),
    [
        pytest.param("https://10.96.0.1:443", "", id="nothing-listed"),
        pytest.param("https://10.96.0.1:443", "10.0.0.0/16", id="other-range"),
        pytest.param("https://10.96.0.1:443", "fd00::/8", id="other-family"),
        pytest.param("https://10.96.0.1:443", "10.96.0.1:6443", id="other-port"),
        pytest.param("https://10.96.0.1:443", "0.1", id="address-no-suffix"),
        pytest.param("https://10.96.0.1:443", "10.96.0.1.example", id="domain-not-address"),
        pytest.param("https://cluster.local:6443", ".cluster.local", id="dot-only-subdomains"),
        pytest.param("https://cluster.local:6443", "*.cluster.local", id="star-only-subdomains"),
        pytest.param("https://mycluster.local:6443", "cluster.local", id="not-a-subdomain"),
        pytest.param("https://[fd00:10:96::1]:443", "[fd00:10:96::1]:6443", id="ipv6-other-port"),
        # net.SplitHostPort fails without a port, the brackets stay, ParseIP fails: config.init
        # makes it a domain, and a domain never matches an address.
        pytest.param("https://[fd00:10:96::1]:443", "[fd00:10:96::1]", id="ipv6-brackets"),
    ],
)
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


@pytest.mark.parametrize(
    ("proxy", "expected"),
    [
        ("http://proxy.corp:3128", Tunnel("proxy.corp:3128", None)),
        ("proxy.corp:3128", Tunnel("proxy.corp:3128", None)),
        ("http://a%3Ab:c%40d@[fd00::1]:3128", Tunnel("[fd00::1]:3128", "Basic YTpiOmNAZA==")),
        ("http://ops@proxy.corp:3128", Tunnel("proxy.corp:3128", "Basic b3BzOg==")),
        ("http://proxy.corp", Tunnel("proxy.corp:80", None)),  # Go's schemePort("http")
        ("HTTP://Proxy.Corp:3128", Tunnel("proxy.corp:3128", None)),
    ],
)
def test_the_tunnel_reaches_the_proxy_as_go_s_transport_does(proxy: str, expected: Tunnel) -> None:
    assert tunnel(proxy) == expected


@pytest.mark.parametrize(
    "proxy", ["https://ops:secret@proxy.corp:3128", "socks5://proxy.corp:1080", "http://:3128"]
)
def test_a_proxy_the_client_cannot_speak_to_as_go_does_is_refused(proxy: str) -> None:
    """Go speaks TLS to an https:// proxy and SOCKS5 to a socks5:// one; a CONNECT in clear
    would carry the credentials unencrypted."""
    with pytest.raises(ProxyUnusable):
        tunnel(proxy)
