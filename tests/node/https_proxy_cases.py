"""The cases test_https_proxy.py checks gpuconf.node.https_proxy against by hand, and
test_https_proxy_go.py against golang.org/x/net/http/httpproxy itself (httpproxy_go/):
NO_PROXY read as client-go reads it, and the tunnel Go's transport opens to the proxy."""

from __future__ import annotations

import pytest

from gpuconf.node.https_proxy import Tunnel

PROXY = "http://proxy.example:3128"
"""HTTPS_PROXY for the DIRECT and PROXIED cases."""

DIRECT = [
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
]
"""(server, NO_PROXY): reached without the proxy, NO_PROXY lists it or it is loopback."""

PROXIED = [
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
]
"""(server, NO_PROXY): reached through the proxy."""

TUNNELS = [
    ("http://proxy.corp:3128", Tunnel("proxy.corp:3128", None)),
    ("proxy.corp:3128", Tunnel("proxy.corp:3128", None)),
    ("http://a%3Ab:c%40d@[fd00::1]:3128", Tunnel("[fd00::1]:3128", "Basic YTpiOmNAZA==")),
    ("http://ops@proxy.corp:3128", Tunnel("proxy.corp:3128", "Basic b3BzOg==")),
    ("http://proxy.corp", Tunnel("proxy.corp:80", None)),  # Go's schemePort("http")
    ("HTTP://Proxy.Corp:3128", Tunnel("proxy.corp:3128", None)),
]
"""(HTTPS_PROXY, the tunnel Go's transport opens to it)."""

REFUSED = ["https://ops:secret@proxy.corp:3128", "socks5://proxy.corp:1080", "http://:3128"]
"""HTTPS_PROXY values Go reaches other than by a CONNECT in clear to a named host."""
