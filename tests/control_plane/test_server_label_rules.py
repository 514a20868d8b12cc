"""gpuconf holds a site-shaped workload's labels, selector, nodeSelector and tolerations to what
kube-apiserver 1.34 refuses (compiler/templating/server_rules.py): a DaemonSet the server's
dry-run create refuses (ValidateLabels, ValidateLabelSelector, ValidatePodSpec's nodeSelector,
ValidateTolerations) is one gpuconf finds a problem in, and the other way round."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from control_plane.server import Refused, Server

from gpuconf.compiler.templating.server_rules import problems

NAMESPACE = "default"
DAEMONSET: dict[str, Any] = {
    "apiVersion": "apps/v1",
    "kind": "DaemonSet",
    "metadata": {"name": "gpuconf-test-label-rules", "namespace": NAMESPACE},
    "spec": {
        "selector": {"matchLabels": {"app": "x"}},
        "template": {
            "metadata": {"labels": {"app": "x"}},
            "spec": {"containers": [{"name": "c", "image": "busybox"}]},
        },
    },
}

KEYS = [
    "team",
    "example.com/team",
    "a" * 63,
    "a" * 64,
    "a b",
    "-a",
    "a_",
    "a.b_c-d",
    "Example.com/team",
    "example.com/",
    "/team",
    "a/b/c",
    f"{'a' * 253}/b",
    f"{'a' * 254}/b",
    "example_com/team",
    "team\n",
]
VALUES = ["", "x", "a" * 63, "a" * 64, "a b", "-a", "a.", "A.b_c-9", "a\n", "ü", "a/b"]
TOLERATIONS: list[dict[str, Any]] = [
    {"key": "a", "operator": "Bogus"},
    {"key": "a", "operator": "Equal", "value": "b"},
    {"key": "a", "value": "b"},
    {"key": "a", "operator": "", "value": "b"},
    {"key": "a", "value": "a b"},
    {"key": "a", "operator": "Exists"},
    {"key": "a", "operator": "Exists", "value": "b"},
    {"operator": "Exists"},
    {"operator": "Equal"},
    {},
    {"key": "a b", "operator": "Exists"},
    {"key": "example.com/a", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "a", "operator": "Exists", "effect": "Bogus"},
    {"key": "a", "operator": "Exists", "effect": "noSchedule"},
    {"key": "a", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 5},
    {"key": "a", "operator": "Exists", "effect": "NoSchedule", "tolerationSeconds": 5},
    {"key": "a", "operator": "Exists", "tolerationSeconds": 5},
    {"operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 0},
]
EXPRESSIONS: list[dict[str, Any]] = [
    {"key": "app", "operator": "In", "values": ["x"]},
    {"key": "app", "operator": "NotIn", "values": ["y"]},
    {"key": "app", "operator": "Exists"},
    {"key": "app", "operator": "In", "values": []},
    {"key": "app", "operator": "In"},
    {"key": "app", "operator": "Exists", "values": ["x"]},
    {"key": "app", "operator": "Bogus", "values": ["x"]},
    {"key": "app", "operator": "In", "values": ["x", "a b"]},
    {"key": "a b", "operator": "NotIn", "values": ["y"]},
]


def _with(path: tuple[str, ...], value: Any) -> dict[str, Any]:
    daemonset = copy.deepcopy(DAEMONSET)
    node = daemonset
    for key in path[:-1]:
        node = node.setdefault(key, {})
    existing = node.get(path[-1])
    if isinstance(existing, dict) and isinstance(value, dict):
        existing.update(value)
    elif isinstance(existing, list) and isinstance(value, list):
        existing.extend(value)
    else:
        node[path[-1]] = value
    return daemonset


POD_LABELS = ("spec", "template", "metadata", "labels")
CASES = [
    *(("labels", ("metadata", "labels"), {key: "x"}) for key in KEYS),
    *(("labels", ("metadata", "labels"), {"team": value}) for value in VALUES),
    *(("pod-labels", POD_LABELS, {key: "x"}) for key in KEYS),
    *(("pod-labels", POD_LABELS, {"team": value}) for value in VALUES),
    *(("nodeSelector", ("spec", "template", "spec", "nodeSelector"), {key: "x"}) for key in KEYS),
    *(("nodeSelector", ("spec", "template", "spec", "nodeSelector"), {"a": v}) for v in VALUES),
    *(("tolerations", ("spec", "template", "spec", "tolerations"), [t]) for t in TOLERATIONS),
    *(("matchExpressions", ("spec", "selector", "matchExpressions"), [e]) for e in EXPRESSIONS),
]


def _server_refusal(server: Server, daemonset: dict[str, Any]) -> Refused | None:
    """How kube-apiserver refuses a dry-run create of `daemonset`, if it does."""
    try:
        server.request(
            "POST",
            server.path("apps/v1", "DaemonSet", NAMESPACE),
            daemonset,
            query=[("dryRun", "All")],
        )
    except Refused as refused:
        return refused
    return None


def _server_admits(server: Server, daemonset: dict[str, Any]) -> bool:
    refused = _server_refusal(server, daemonset)
    if refused is None:
        return True
    assert refused.status == 422, refused.message  # its validation's Invalid, no other refusal
    return False


def test_the_unchanged_daemonset_is_admitted_and_gpuconf_finds_nothing(api_server: Server) -> None:
    assert _server_admits(api_server, DAEMONSET)
    assert list(problems(DAEMONSET)) == []


@pytest.mark.parametrize(("where", "path", "added"), CASES, ids=[f"{c[0]}-{c[2]!r}" for c in CASES])
def test_gpuconf_finds_a_problem_exactly_where_the_server_refuses_the_daemonset(
    api_server: Server, where: str, path: tuple[str, ...], added: Any
) -> None:
    daemonset = _with(path, added)
    found = list(problems(daemonset))
    assert _server_admits(api_server, daemonset) is not bool(found), found
