"""gpuconf holds a site-shaped workload's labels, annotations, selector, nodeSelector,
tolerations, affinity and topologySpreadConstraints to what kube-apiserver 1.34 refuses
(compiler/templating/server_rules.py): a DaemonSet the server's dry-run create refuses
(ValidateLabels, ValidateAnnotations, ValidateLabelSelector, ValidatePodSpec's nodeSelector,
ValidateTolerations, validateAffinity, validateTopologySpreadConstraints) is one gpuconf finds a
problem in, at the field the server blames, and the other way round."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from control_plane.server import Server

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
    {"key": "a", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": -5},
    {"key": "", "operator": "Equal", "value": "b"},
    {"key": "", "operator": "Exists"},
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
NODE_EXPRESSIONS: list[dict[str, Any]] = [
    *EXPRESSIONS,
    {"key": "app", "operator": "DoesNotExist"},
    {"key": "gpus", "operator": "Gt", "values": ["1"]},
    {"key": "gpus", "operator": "Lt", "values": ["8"]},
    {"key": "gpus", "operator": "Gt", "values": ["many"]},
    {"key": "gpus", "operator": "Gt", "values": ["1", "2"]},
    {"key": "gpus", "operator": "Lt", "values": []},
    {"key": "gpus", "operator": "Lt"},
    {"key": "gpus", "operator": "Gt", "values": ["a b"]},
]
ANNOTATION_KEYS = ["Team", "example.com/Team", "Example.com/team", "a b", "a" * 64, "example.com/"]
ANNOTATIONS_AT_LIMIT = {"big": "x" * (256 * 1024 - len("big"))}
ANNOTATIONS_PAST_LIMIT = {"big": "x" * (256 * 1024 - len("big") + 1)}


def _required_node_affinity(expression: dict[str, Any]) -> dict[str, Any]:
    terms = {"nodeSelectorTerms": [{"matchExpressions": [expression]}]}
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": terms}}


def _preferred_node_affinity(expression: dict[str, Any]) -> dict[str, Any]:
    term = {"weight": 1, "preference": {"matchExpressions": [expression]}}
    return {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [term]}}


def _pod_affinity(expression: dict[str, Any], topology_key: str = "zone") -> dict[str, Any]:
    term = {"topologyKey": topology_key, "labelSelector": {"matchExpressions": [expression]}}
    return {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}


def _pod_anti_affinity(expression: dict[str, Any]) -> dict[str, Any]:
    term = {"topologyKey": "zone", "namespaceSelector": {"matchExpressions": [expression]}}
    weighted = {"weight": 1, "podAffinityTerm": term}
    return {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [weighted]}}


def _spread(expression: dict[str, Any]) -> list[dict[str, Any]]:
    selector = {"matchExpressions": [expression]}
    return [
        {
            "maxSkew": 1,
            "topologyKey": "zone",
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": selector,
        }
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
POD_ANNOTATIONS = ("spec", "template", "metadata", "annotations")
AFFINITY = ("spec", "template", "spec", "affinity")
SPREAD = ("spec", "template", "spec", "topologySpreadConstraints")
ANY = {"key": "app", "operator": "Exists"}
CASES = [
    *(("labels", ("metadata", "labels"), {key: "x"}) for key in KEYS),
    *(("labels", ("metadata", "labels"), {"team": value}) for value in VALUES),
    *(("pod-labels", POD_LABELS, {key: "x"}) for key in KEYS),
    *(("pod-labels", POD_LABELS, {"team": value}) for value in VALUES),
    *(("nodeSelector", ("spec", "template", "spec", "nodeSelector"), {key: "x"}) for key in KEYS),
    *(("nodeSelector", ("spec", "template", "spec", "nodeSelector"), {"a": v}) for v in VALUES),
    *(("tolerations", ("spec", "template", "spec", "tolerations"), [t]) for t in TOLERATIONS),
    *(("matchExpressions", ("spec", "selector", "matchExpressions"), [e]) for e in EXPRESSIONS),
    *(("annotations", ("metadata", "annotations"), {key: "x"}) for key in ANNOTATION_KEYS),
    *(("pod-annotations", POD_ANNOTATIONS, {key: "x"}) for key in ANNOTATION_KEYS),
    ("annotations-at-limit", ("metadata", "annotations"), ANNOTATIONS_AT_LIMIT),
    ("annotations-past-limit", ("metadata", "annotations"), ANNOTATIONS_PAST_LIMIT),
    ("pod-annotations-past-limit", POD_ANNOTATIONS, ANNOTATIONS_PAST_LIMIT),
    *(("required-node-affinity", AFFINITY, _required_node_affinity(e)) for e in NODE_EXPRESSIONS),
    *(("preferred-node-affinity", AFFINITY, _preferred_node_affinity(e)) for e in NODE_EXPRESSIONS),
    *(("pod-affinity", AFFINITY, _pod_affinity(e)) for e in EXPRESSIONS),
    *(("pod-affinity-topologyKey", AFFINITY, _pod_affinity(ANY, key)) for key in ("a b", "")),
    *(("pod-anti-affinity", AFFINITY, _pod_anti_affinity(e)) for e in EXPRESSIONS),
    *(("topologySpreadConstraints", SPREAD, _spread(e)) for e in EXPRESSIONS),
]


def _dotted(path: tuple[str | int, ...]) -> str:
    return "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in path)[1:]


def test_the_unchanged_daemonset_is_admitted_and_gpuconf_finds_nothing(api_server: Server) -> None:
    assert api_server.refusal(DAEMONSET) is None
    assert list(problems(DAEMONSET)) == []


@pytest.mark.parametrize(
    ("where", "path", "added"), CASES, ids=[f"{c[0]}-{c[2]!r}"[:120] for c in CASES]
)
def test_gpuconf_finds_a_problem_exactly_where_the_server_refuses_the_daemonset(
    api_server: Server, where: str, path: tuple[str, ...], added: Any
) -> None:
    daemonset = _with(path, added)
    found = list(problems(daemonset))
    refused = api_server.refusal(daemonset)
    assert (refused is None) is not bool(found), found
    if refused is None:
        return
    assert refused.status == 422, refused.message  # its validation's Invalid, no other refusal
    # The entry gpuconf blames (its key or index) holds a field the server blames.
    blamed = [cause.get("field", "") for cause in refused.body["details"]["causes"]]
    # ValidatePodTemplateSpec checks the template's metadata at spec.template, not
    # spec.template.metadata: the server names its labels spec.template.labels.
    entry = _dotted(found[0].path[:-1]).replace("spec.template.metadata", "spec.template")
    assert any(field.startswith(entry) for field in blamed), (entry, blamed)
