"""gpuconf.node.https_proxy's answers for https_proxy_cases' tables against Go's own:
golang.org/x/net/http/httpproxy (Config.ProxyFunc: config.init, useProxy, parseProxy; the code
Go's standard library bundles as net/http.ProxyFromEnvironment, which client-go uses) and
net/http transport.go's canonicalAddr, run by httpproxy_go/ (main.go) in one process for all
cases. v0.62.0's config.init, useProxy and parseProxy are Go 1.26's bundled copy line for line
($GOROOT/src/vendor/golang.org/x/net/http/httpproxy/proxy.go); its FromEnvironment is not
(it reads the lower-case names first, Go 1.26's copy the upper-case ones), so the environment's
names stay with test_https_proxy.py and only Config is asked here."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any, NamedTuple

import pytest
from go_program import prebuilt_or_built
from https_proxy_cases import DIRECT, PROXIED, PROXY, REFUSED, TUNNELS

from gpuconf.node.https_proxy import Tunnel, https_proxy, tunnel

SOURCE = Path(__file__).with_name("httpproxy_go")
ENV = "GPUCONF_HTTPPROXY_GO_BIN"
SERVER = "https://10.96.0.1:443"
"""The server the TUNNELS and REFUSED proxies are asked about: one no proxy list names."""


class Question(NamedTuple):
    https_proxy: str
    no_proxy: str
    url: str


def _values(case: Any) -> tuple[Any, ...]:
    """A parametrize table's row: a pytest.param, a tuple, or a lone value."""
    if hasattr(case, "values"):
        return tuple(case.values)
    return case if isinstance(case, tuple) else (case,)


def _questions() -> list[Question]:
    servers = [_values(case) for case in [*DIRECT, *PROXIED]]
    proxies = [_values(case)[0] for case in [*TUNNELS, *REFUSED]]
    return [Question(PROXY, no_proxy, server) for server, no_proxy in servers] + [
        Question(proxy, "", SERVER) for proxy in proxies
    ]


@pytest.fixture(scope="module")
def go_answers() -> dict[Question, dict[str, Any]]:
    binary = prebuilt_or_built(
        ENV, "Go httpproxy program", SOURCE, "httpproxy-go", "httpproxy-answers"
    )
    questions = _questions()
    lines = "".join(
        json.dumps({"httpsProxy": q.https_proxy, "noProxy": q.no_proxy, "url": q.url}) + "\n"
        for q in questions
    )
    result = subprocess.run(
        [str(binary)], input=lines, capture_output=True, text=True, check=True, timeout=30
    )
    answers = [json.loads(line) for line in result.stdout.splitlines()]
    assert len(answers) == len(questions), result.stderr
    return dict(zip(questions, answers, strict=True))


def _go_tunnel(answer: dict[str, Any]) -> Tunnel | None:
    """None where Go connects directly. Go dials an ASCII proxy name in the case it was given
    (net/http request.go idnaASCII); gpuconf lower-cases it, the same host to DNS."""
    assert answer["error"] is None, answer["error"]
    if answer["proxy"] is None:
        return None
    return Tunnel(answer["hostPort"].lower(), answer["authorization"])


def _gpuconf_tunnel(question: Question) -> Tunnel | None:
    environ = {"HTTPS_PROXY": question.https_proxy, "NO_PROXY": question.no_proxy}
    proxy = https_proxy(question.url, environ)
    return None if proxy is None else tunnel(proxy)


@pytest.mark.parametrize(("server", "no_proxy"), [*DIRECT, *PROXIED])
def test_go_picks_the_same_proxy_or_none_for_each_server(
    go_answers: dict[Question, dict[str, Any]], server: str, no_proxy: str
) -> None:
    question = Question(PROXY, no_proxy, server)
    assert _gpuconf_tunnel(question) == _go_tunnel(go_answers[question])


@pytest.mark.parametrize(("proxy", "expected"), TUNNELS)
def test_go_tunnels_to_the_same_proxy_with_the_same_credentials(
    go_answers: dict[Question, dict[str, Any]], proxy: str, expected: Tunnel
) -> None:
    question = Question(proxy, "", SERVER)
    assert _gpuconf_tunnel(question) == _go_tunnel(go_answers[question]) == expected


@pytest.mark.parametrize("proxy", REFUSED)
def test_a_refused_proxy_is_one_go_reaches_other_than_by_a_clear_connect_to_a_host(
    go_answers: dict[Question, dict[str, Any]], proxy: str
) -> None:
    """Go uses it, over TLS or SOCKS5, or dials an empty host (the local machine)."""
    answer = go_answers[Question(proxy, "", SERVER)]
    assert _go_tunnel(answer) is not None
    assert answer["scheme"] != "http" or answer["hostPort"].startswith(":")
