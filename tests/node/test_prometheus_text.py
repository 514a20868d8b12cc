"""The runtime's exposition reads back in prometheus_client's own parser, as Prometheus reads it."""

from __future__ import annotations

import errno
import os
import shutil
import socket
import subprocess
import urllib.error
import urllib.request
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from gpuconf.node.metrics import Metrics
from gpuconf.node.metrics_http import MetricsServer
from gpuconf.node.prometheus_text import CONTENT_TYPE, Counter, Gauge, Registry


def _families(
    registry: Registry,
) -> dict[str, tuple[str, str, list[tuple[str, dict[str, str], float]]]]:
    text = registry.exposition().decode()
    return {
        family.name: (family.type, family.documentation, [(s.name, s.labels, s.value) for s in family.samples])
        for family in text_string_to_metric_families(text)
    }  # fmt: skip


def test_counters_and_gauges_read_back_with_their_labels_values_and_help() -> None:
    registry = Registry()
    calls = Counter("x_calls", "Calls, by \\ result\nand more.", ["result"], registry=registry)
    up = Gauge("x_up", "1 while up.", registry=registry)
    Counter("x_unused", "Never incremented.", ["resource"], registry=registry)
    calls.labels('o"k').inc()
    calls.labels('o"k').inc(2)
    calls.labels("fail\n").inc()
    up.set(1)
    assert _families(registry) == {
        "x_calls": (
            "counter",
            "Calls, by \\ result\nand more.",
            [
                ("x_calls_total", {"result": 'o"k'}, 3.0),
                ("x_calls_total", {"result": "fail\n"}, 1.0),
            ],
        ),
        "x_up": ("gauge", "1 while up.", [("x_up", {}, 1.0)]),
        "x_unused": ("counter", "Never incremented.", []),
    }


def test_a_removed_series_is_no_longer_exported() -> None:
    registry = Registry()
    devices = Gauge("x_devices", "Devices.", ["resource", "health"], registry=registry)
    devices.labels("a", "Healthy").set(3)
    devices.labels("b", "Healthy").set(1)
    devices.remove("a", "Healthy")
    assert _families(registry)["x_devices"][2] == [
        ("x_devices", {"resource": "b", "health": "Healthy"}, 1.0)
    ]


def test_the_metrics_port_answers_metrics_health_and_status_over_http() -> None:
    registry = Registry()
    Gauge("x_up", "1 while up.", registry=registry).set(1)
    server = MetricsServer(0, registry, lambda: False, lambda: {"pendingChanges": []})
    server.start()
    base = f"http://127.0.0.1:{server.port}"
    try:
        with urllib.request.urlopen(f"{base}/metrics", timeout=5) as reply:
            assert reply.headers["Content-Type"] == CONTENT_TYPE
            assert b"x_up 1.0\n" in reply.read()
        with urllib.request.urlopen(f"{base}/status", timeout=5) as reply:
            assert reply.read() == b'{\n "pendingChanges": []\n}\n'
        with pytest.raises(urllib.error.HTTPError) as unhealthy:
            urllib.request.urlopen(f"{base}/healthz", timeout=5)
        unhealthy.value.close()
        assert unhealthy.value.code == 503
    finally:
        server.stop()


def _ipv6_loopback_reachable() -> bool:
    """Whether ::1 can be used here: with net.ipv6.conf.all.disable_ipv6=1 the kernel still has
    AF_INET6 (has_dualstack_ipv6 says True) but binding or connecting to ::1 is EADDRNOTAVAIL."""
    if not socket.has_dualstack_ipv6():
        return False
    try:
        with socket.socket(socket.AF_INET6) as probe:
            probe.bind(("::1", 0))
    except OSError:
        return False
    return True


@pytest.mark.skipif(not _ipv6_loopback_reachable(), reason="no IPv6 loopback (::1) on this machine")
def test_the_metrics_port_answers_on_ipv6_as_on_ipv4() -> None:
    # On an IPv6-only cluster the kubelet probes /healthz, and Prometheus scrapes, at the pod's
    # IPv6 address: a listener on 0.0.0.0 alone refuses both.
    server = MetricsServer(0, Registry(), lambda: True)
    server.start()
    try:
        for host in ("127.0.0.1", "[::1]"):
            with urllib.request.urlopen(f"http://{host}:{server.port}/healthz", timeout=5) as reply:
                assert reply.status == 200
    finally:
        server.stop()


@pytest.mark.parametrize("refusal", [errno.EAFNOSUPPORT, errno.EADDRNOTAVAIL])
def test_where_the_dual_stack_listener_is_refused_the_metrics_port_answers_on_ipv4(
    monkeypatch: pytest.MonkeyPatch, refusal: int
) -> None:
    create_server = socket.create_server

    def no_ipv6(address: tuple[str, int], **options: Any) -> socket.socket:
        if options.get("family") == socket.AF_INET6:
            raise OSError(refusal, os.strerror(refusal))
        return create_server(address, **options)

    monkeypatch.setattr(socket, "has_dualstack_ipv6", lambda: True)
    monkeypatch.setattr(socket, "create_server", no_ipv6)
    server = MetricsServer(0, Registry(), lambda: True)
    server.start()
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{server.port}/healthz", timeout=5) as reply:
            assert reply.status == 200
    finally:
        server.stop()


@pytest.mark.skipif(
    shutil.which("promtool") is None, reason="promtool not installed (make promtool)"
)
def test_prometheus_own_checker_accepts_the_runtimes_whole_exposition() -> None:
    """promtool check metrics reads the text with Prometheus' own parser and linter: every
    family the runtime registers (node/metrics.py), with escapes and odd values, passes."""
    registry = Metrics().registry
    odd = Gauge("x_odd", 'Odd "values", \\ and\nlines.', ["what"], registry=registry)
    for what, value in (('q"u\\o\nte', float("inf")), ("big", 1e20), ("nan", float("nan"))):
        odd.labels(what).set(value)
    checked = subprocess.run(
        ["promtool", "check", "metrics"],
        input=registry.exposition(),
        capture_output=True,
        check=False,
    )
    assert (checked.returncode, checked.stdout, checked.stderr) == (0, b"", b"")
