"""Whether a request to the API server goes through the environment's HTTPS proxy, decided as
client-go decides it: its transport's Proxy is net/http.ProxyFromEnvironment (client-go
transport/cache.go), wrapped by apimachinery's NewProxierWithNoProxyCIDR (pkg/util/net/http.go,
SetTransportDefaults; it reads NO_PROXY, then no_proxy), and ProxyFromEnvironment is the copy
of golang.org/x/net's httpproxy bundled in Go's standard library
($GOROOT/src/vendor/golang.org/x/net/http/httpproxy/proxy.go, Go 1.26: FromEnvironment,
config.init and useProxy). Localhost and loopback addresses never go through it; NO_PROXY's
entries are `*`, IPv4 and IPv6 CIDR ranges, IP addresses (`[v6]:port` or `v4:port` match that
port only; `[v6]` without a port matches nothing, as Go reads it as a domain) and domains
(`example.com` matches it and its subdomains, `.example.com` and `*.example.com` only the
subdomains). A cluster-wide proxy lists the service CIDR there; urllib's own matching reads no
CIDR ranges, so the node runtime would send its Node calls to the proxy."""

from __future__ import annotations

import base64
import ipaddress
import os
from collections.abc import Mapping
from typing import NamedTuple
from urllib.parse import unquote, urlsplit

from gpuconf.node.in_cluster import join_host_port

IpAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


class Target(NamedTuple):
    host: str
    """Lower case, an IPv6 address without its brackets."""
    port: str
    ip: IpAddress | None


def https_proxy(url: str, environ: Mapping[str, str] = os.environ) -> str | None:
    """The proxy an HTTPS request to `url` goes through; None to connect directly."""
    proxy = _first_set(environ, "HTTPS_PROXY", "https_proxy")
    if not proxy:
        return None
    parts = urlsplit(url)
    target = Target(parts.hostname or "", str(parts.port or 443), _ip(parts.hostname or ""))
    if _never_proxied(target) or bypasses(_first_set(environ, "NO_PROXY", "no_proxy"), target):
        return None
    return proxy


class Tunnel(NamedTuple):
    """Where an HTTPS request's CONNECT goes, and the Proxy-Authorization it sends."""

    proxy: str
    """host:port of the proxy."""
    authorization: str | None


class ProxyUnusable(ValueError):
    """HTTPS_PROXY names a proxy this client cannot reach as Go's transport would."""


HTTP_PROXY_PORT = 80
"""Go's schemePort for http (net/http transport.go canonicalAddr)."""


def tunnel(proxy: str) -> Tunnel:
    """The proxy https_proxy chose, as Go's transport reaches an http:// proxy: a value without a
    scheme is an http:// URL (httpproxy's parseProxy), its port 80 unless given, credentials in
    it Basic Proxy-Authorization on the CONNECT (net/http transport.go, connectMethodForRequest
    and dialConn). Go speaks TLS to an https:// proxy and SOCKS5 to a socks5:// one; urllib does
    neither, and would send the CONNECT, credentials included, in clear: refused instead."""
    parts = urlsplit(proxy if "://" in proxy else f"http://{proxy}")
    if parts.scheme.lower() != "http":
        raise ProxyUnusable(
            f"HTTPS_PROXY is a {parts.scheme}:// proxy; the node runtime reaches the API server "
            "through an http:// proxy only (or none: list the API server in NO_PROXY)"
        )
    try:
        port = parts.port or HTTP_PROXY_PORT
    except ValueError as error:
        raise ProxyUnusable(f"HTTPS_PROXY is not a proxy address: {error}") from None
    host = parts.hostname or ""
    if not host:
        raise ProxyUnusable("HTTPS_PROXY names no host")
    authorization = None
    if parts.username is not None:
        credentials = f"{unquote(parts.username)}:{unquote(parts.password or '')}"
        authorization = "Basic " + base64.b64encode(credentials.encode()).decode("ascii")
    return Tunnel(join_host_port(host, str(port)), authorization)


def _first_set(environ: Mapping[str, str], *names: str) -> str:
    """Go's getEnvAny: the first name set, an empty value as unset (FromEnvironment asks for
    the upper-case name first)."""
    return next((environ[name] for name in names if environ.get(name)), "")


def _ip(host: str) -> IpAddress | None:
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        return None


def _never_proxied(target: Target) -> bool:
    return target.host == "localhost" or (target.ip is not None and target.ip.is_loopback)


def bypasses(no_proxy: str, target: Target) -> bool:
    """Whether an entry of NO_PROXY (comma-separated) matches the target."""
    return any(_matches(entry, target) for entry in _entries(no_proxy))


def _entries(no_proxy: str) -> list[str]:
    return [entry for entry in (part.strip().lower() for part in no_proxy.split(",")) if entry]


def _matches(entry: str, target: Target) -> bool:
    if entry == "*":
        return True
    if "/" in entry:
        try:
            network = ipaddress.ip_network(entry, strict=False)
        except ValueError:
            pass  # not a range: Go reads it as a host below
        else:
            return target.ip is not None and target.ip in network
    host, port = _split_host_port(entry)
    if not host:
        return False  # Go ignores a malformed entry
    port_matches = not port or port == target.port
    entry_ip = _ip(host)
    if entry_ip is not None:
        return entry_ip == target.ip and port_matches
    if target.ip is not None:
        return False  # a domain never matches an address
    domain = host[1:] if host.startswith("*.") else host
    if domain.startswith("."):
        return target.host.endswith(domain) and port_matches
    return (target.host == domain or target.host.endswith("." + domain)) and port_matches


def _split_host_port(entry: str) -> tuple[str, str]:
    """Go's net.SplitHostPort where it succeeds, else the whole entry as the host: a bracketed
    IPv6 address without a port keeps its brackets, parses as no address and so matches no
    server (config.init reads it as a domain)."""
    if entry.startswith("["):
        host, closed, rest = entry[1:].partition("]")
        if closed and rest.startswith(":") and ":" not in rest[1:]:
            return host, rest[1:]
        return entry, ""
    if entry.count(":") == 1:
        host, port = entry.split(":")
        return host, port
    return entry, ""
