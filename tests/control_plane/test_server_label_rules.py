"""gpuconf holds a site-shaped workload's labels, annotations, selector and pod template to what
kube-apiserver 1.34 refuses (compiler/templating/server_rules.py, scheduling_rules.py,
container_rules.py): a DaemonSet the server's dry-run create refuses (ValidateLabels,
ValidateAnnotations, ValidateLabelSelector, and ValidatePodSpec's nodeSelector, class names,
ValidateTolerations, validateAffinity, validateTopologySpreadConstraints, ValidateEnv and
ValidateContainerResourceRequirements) is one gpuconf finds a problem in, at the field the
server blames, and the other way round: each rule with a value on either side of its boundary."""

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
ANY = {"key": "app", "operator": "Exists"}
APP = {"matchLabels": {"app": "x"}}
APP_TWICE = {"matchLabels": {"app": "x"}, "matchExpressions": [ANY]}
NODE = {"key": "metadata.name", "operator": "In", "values": ["node-1"]}
WEIGHTS = [0, 1, 100, 101, -1]
MATCH_FIELDS: list[dict[str, Any]] = [
    NODE,
    {**NODE, "operator": "NotIn"},
    {**NODE, "values": ["node-1", "node-2"]},
    {**NODE, "values": []},
    {"key": "metadata.name", "operator": "In"},
    {**NODE, "operator": "Exists", "values": []},
    {**NODE, "operator": "Gt"},
    {**NODE, "key": "metadata.namespace"},
    {**NODE, "key": "kubernetes.io/hostname"},
    {**NODE, "values": ["Node_1"]},
    {**NODE, "values": ["node-1.example.com"]},
    {**NODE, "values": ["a" * 253]},
    {**NODE, "values": ["a" * 254]},
]
POD_AFFINITY_TERMS: list[dict[str, Any]] = [
    {"namespaces": ["gpu-operator"]},
    {"namespaces": ["gpu.operator"]},
    {"namespaces": ["Gpu"]},
    {"namespaces": ["a" * 63]},
    {"namespaces": ["a" * 64]},
    {"labelSelector": APP, "matchLabelKeys": ["pod-template-hash"]},
    {"labelSelector": APP, "matchLabelKeys": ["a b"]},
    {"labelSelector": APP, "mismatchLabelKeys": ["a b"]},
    {"matchLabelKeys": ["pod-template-hash"]},
    {"mismatchLabelKeys": ["tenant"]},
    {"labelSelector": APP, "matchLabelKeys": ["app"]},
    {"labelSelector": {"matchExpressions": [ANY]}, "matchLabelKeys": ["app"]},
    {"labelSelector": APP_TWICE, "matchLabelKeys": ["app"]},
    {"labelSelector": APP_TWICE, "mismatchLabelKeys": ["app"]},
    {"labelSelector": {"matchExpressions": [ANY, ANY]}, "matchLabelKeys": ["app"]},
    {"labelSelector": APP, "matchLabelKeys": ["tenant"], "mismatchLabelKeys": ["tenant"]},
    {"labelSelector": APP, "matchLabelKeys": ["tenant"], "mismatchLabelKeys": ["team"]},
    {"labelSelector": APP, "matchLabelKeys": [], "mismatchLabelKeys": []},
]
TOPOLOGY_KEYS = ["topology.kubernetes.io/zone", "Zone", "a" * 64]
POLICIES = ["Honor", "Ignore", "honor", ""]
CONSTRAINTS: list[dict[str, Any]] = [
    {"maxSkew": 0},
    {"maxSkew": 1},
    {"maxSkew": -1},
    {"topologyKey": ""},
    {"topologyKey": "a b"},
    {"whenUnsatisfiable": "ScheduleAnyway"},
    {"whenUnsatisfiable": "DoNotSchedul"},
    {"whenUnsatisfiable": ""},
    {"minDomains": 1},
    {"minDomains": 0},
    {"minDomains": -1},
    {"minDomains": 2, "whenUnsatisfiable": "ScheduleAnyway"},
    {"minDomains": None, "whenUnsatisfiable": "ScheduleAnyway"},
    *(
        {field: policy}
        for field in ("nodeAffinityPolicy", "nodeTaintsPolicy")
        for policy in POLICIES
    ),
    {"labelSelector": APP, "matchLabelKeys": ["pod-template-hash"]},
    {"labelSelector": APP, "matchLabelKeys": ["a b"]},
    {"matchLabelKeys": ["pod-template-hash"]},
    {"labelSelector": APP, "matchLabelKeys": ["app"]},
    {"labelSelector": APP_TWICE, "matchLabelKeys": ["app"]},
]
CLASS_NAMES = ["gpu-node-critical", "nvidia", "", "GPU", "gpu_node", "a.b", "a" * 253, "a" * 254]
ENV_NAMES = ["NODE_NAME", "", "my.var", "MY VAR", "1X", "A=B", "ü", "a\tb", "~"]
ENV_SOURCES: list[dict[str, Any]] = [
    {"valueFrom": {}},
    {"valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}},
    {"valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}, "value": "v"},
    {"valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}, "value": ""},
    {
        "valueFrom": {
            "secretKeyRef": {"name": "s", "key": "k"},
            "configMapKeyRef": {"name": "c", "key": "k"},
        }
    },
    {"valueFrom": {"resourceFieldRef": {"resource": "limits.memory"}}},
    {"valueFrom": {"resourceFieldRef": {"resource": "limits.nvidia.com/gpu"}}},
    {"valueFrom": {"resourceFieldRef": {"resource": "requests.hugepages-2Mi"}}},
    {"valueFrom": {"resourceFieldRef": {"resource": "limits.hugepages"}}},
    {"valueFrom": {"resourceFieldRef": {"resource": ""}}},
    *(
        {"valueFrom": {source: {"name": name, "key": key}}}
        for source in ("secretKeyRef", "configMapKeyRef")
        for name, key in [
            ("s", "a b"),
            ("s", ""),
            ("s", "."),
            ("s", ".."),
            ("s", "..a"),
            ("s", ".a"),
            ("s", "a" * 253),
            ("s", "a" * 254),
            ("S", "k"),
            ("", "k"),
            ("a.b-c", "k"),
        ]
    ),
    {"valueFrom": {"secretKeyRef": {"key": "k"}}},
    {"valueFrom": {"configMapKeyRef": {"key": "k", "optional": True}}},
]
FIELD_REFS: list[tuple[Any, ...]] = [
    ("spec.nodeName",),
    ("spec.nodename",),
    ("spec.host",),
    ("status.hostIP",),
    ("status.phase",),
    ("metadata.labels",),
    ("metadata.labels['app']",),
    ("metadata.labels['a b']",),
    ("metadata.annotations['Example.com/Team']",),
    ("metadata.annotations['a b']",),
    ("metadata.name['x']",),
    ("metadata.name", "v1"),
    ("metadata.name", "v2"),
    ("",),
]
# The divisor the server compares is Quantity.String() of what it decodes (1000 is 1k, 1e3 and
# +1Ki stay as written). A float goes out as Python's json writes it, not as a Go client would
# (1e18: 1e+18 here, 1000000000000000000 from kubectl): only floats whose two spellings the
# server reads alike are here.
CPU_DIVISORS: list[Any] = ["1", "1m", "1000m", "0.001", "2", "1k", "1e-3", "+1", "0", 1, 0.001]
BYTE_DIVISORS: list[Any] = [
    *("1", "1Ki", "1024", "1k", "1000", "1e3", "1Mi", "1M", "1024Ki", "0", "2Gi", "1000Mi"),
    *("+1Ki", "01", "1000E", "10e-1", "0.5Ki", "1.0", "8Ei", "1Ei", "-1", "1.G", "2048Ki"),
    *(1, 1024, 1000, 0.001, 1000.0, 1e21),
]
SOME_BYTE_DIVISORS = ["1", "1Ki", "1024", "1k", "1000", "1e3", "1024Ki", "0", "2Gi"]
DIVISORS: list[tuple[str, Any]] = [
    *(
        (f"{field}.{name}", divisor)
        for field in ("limits", "requests")
        for name, divisors in [
            ("cpu", [*CPU_DIVISORS, 1.5e-07, None]),
            ("memory", BYTE_DIVISORS),
            ("ephemeral-storage", [*SOME_BYTE_DIVISORS, None]),
            ("hugepages-2Mi", [*SOME_BYTE_DIVISORS, None]),
        ]
        for divisor in divisors
    ),
    ("limits.nvidia.com/gpu", "7"),
    ("limits.cpus", "7"),
]
GPU_UNLIMITED = {"requests": {"nvidia.com/gpu": 1}}
RESOURCES: list[dict[str, Any]] = [
    {"requests": {"cpu": "100m"}, "limits": {"cpu": "1"}},
    {"requests": {"cpu": "2"}, "limits": {"cpu": "1"}},
    {"requests": {"memory": "1Gi"}, "limits": {"memory": "1024Mi"}},
    {"requests": {"memory": "1025Mi"}, "limits": {"memory": "1Gi"}},
    {"requests": {"cpu": "2"}},
    {"limits": {"cpu": "-1"}},
    {"requests": {"memory": "-1Mi"}},
    {"requests": {"cpu": 0}},
    {"requests": {"gpu": 1}},
    {"requests": {"pods": 1}},
    {"limits": {"example.com/foo": 1}},
    {"limits": {"nvidia.com/gpu": 1}},
    GPU_UNLIMITED,
    {"requests": {"nvidia.com/gpu": 1}, "limits": {"nvidia.com/gpu": 2}},
    {"requests": {"nvidia.com/gpu": 2}, "limits": {"nvidia.com/gpu": 2}},
    {"limits": {"nvidia.com/gpu": "0.5"}},
    {"limits": {"nvidia.com/gpu": "1500m"}},
    {"limits": {"nvidia.com/gpu": "2000m"}},
    {"limits": {"nvidia.com/Gpu": 1}},
    {"limits": {"kubernetes.io/foo": 1}},
    {"limits": {"example.kubernetes.io/foo": 1}},
    {"limits": {"requests.example.com/foo": 1}},
    {"limits": {"a b/c": 1}},
    {"limits": {"hugepages-2Mi": "2Mi", "memory": "1Gi"}, "requests": {"memory": "1Gi"}},
    {"limits": {"hugepages-2Mi": "2Mi"}, "requests": {"hugepages-2Mi": "2Mi"}},
    {"limits": {"hugepages-2Mi": "2Mi"}, "requests": {"hugepages-2Mi": "2Mi", "cpu": "1"}},
    *(
        {"limits": {name: value, "memory": "1Gi"}, "requests": {"memory": "1Gi"}}
        for name, value in [
            ("hugepages-2Mi", "4Mi"),
            ("hugepages-2Mi", "3Mi"),
            ("hugepages-2Mi", "100m"),
            ("hugepages-2Mi", "0"),
            ("hugepages-1Gi", "2Mi"),
            ("hugepages-1Gi", "1Gi"),
            ("hugepages-abc", "2Mi"),
            ("hugepages-0.5", "1"),
            ("hugepages-1", "7"),
        ]
    ),
    # The server holds a quantity rounded up to a nano, and tests wholeness on MilliValue,
    # itself rounded up: 0.9995 is 1 to it.
    {"limits": {"nvidia.com/gpu": "0.9995"}, "requests": {"nvidia.com/gpu": "0.9995"}},
    {"limits": {"nvidia.com/gpu": "1001m"}},
    {"limits": {"nvidia.com/gpu": "1999999999n"}},
    {"requests": {"cpu": "1.0000000002"}, "limits": {"cpu": "1.0000000001"}},
    {"requests": {"cpu": "1.0001"}, "limits": {"cpu": "1"}},
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


def _weighted_node_affinity(weight: int) -> dict[str, Any]:
    term = {"weight": weight, "preference": {"matchExpressions": [ANY]}}
    return {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [term]}}


def _weighted_pod_affinity(weight: int, kind: str = "podAffinity") -> dict[str, Any]:
    weighted = {"weight": weight, "podAffinityTerm": {"topologyKey": "zone"}}
    return {kind: {"preferredDuringSchedulingIgnoredDuringExecution": [weighted]}}


def _match_fields(requirement: dict[str, Any], preferred: bool = False) -> dict[str, Any]:
    term = {"matchFields": [requirement]}
    if preferred:
        weighted = {"weight": 1, "preference": term}
        return {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [weighted]}}
    terms = {"nodeSelectorTerms": [term]}
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": terms}}


def _pod_affinity_term(**fields: Any) -> dict[str, Any]:
    term = {"topologyKey": "zone", **fields}
    return {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}


def _constraint(**fields: Any) -> dict[str, Any]:
    return {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule", **fields}


def _container(group: str = "containers", **fields: Any) -> dict[str, Any]:
    return {group: [{"name": "c", "image": "busybox", **fields}]}


def _env(**fields: Any) -> dict[str, Any]:
    return _container(env=[{"name": "X", **fields}])


def _field_ref(field_path: str, api_version: str | None = None) -> dict[str, Any]:
    version = {} if api_version is None else {"apiVersion": api_version}
    return _env(valueFrom={"fieldRef": {"fieldPath": field_path, **version}})


def _divisor(resource: str, divisor: Any) -> dict[str, Any]:
    reference = {"resource": resource} | ({} if divisor is None else {"divisor": divisor})
    return _env(valueFrom={"resourceFieldRef": reference})


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


CONSTRAINT_PAIRS: list[list[dict[str, Any]]] = [
    [_constraint(), _constraint()],
    [_constraint(), _constraint(whenUnsatisfiable="ScheduleAnyway")],
    [_constraint(), _constraint(topologyKey="kubernetes.io/hostname")],
    [_constraint(maxSkew=1), _constraint(maxSkew=2)],
]


POD_LABELS = ("spec", "template", "metadata", "labels")
POD_ANNOTATIONS = ("spec", "template", "metadata", "annotations")
AFFINITY = ("spec", "template", "spec", "affinity")
SPREAD = ("spec", "template", "spec", "topologySpreadConstraints")
POD = ("spec", "template", "spec")
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
    *(("node-affinity-weight", AFFINITY, _weighted_node_affinity(w)) for w in WEIGHTS),
    *(("pod-affinity-weight", AFFINITY, _weighted_pod_affinity(w)) for w in WEIGHTS),
    *(
        ("pod-anti-affinity-weight", AFFINITY, _weighted_pod_affinity(w, "podAntiAffinity"))
        for w in WEIGHTS
    ),
    *(("required-matchFields", AFFINITY, _match_fields(r)) for r in MATCH_FIELDS),
    *(("preferred-matchFields", AFFINITY, _match_fields(r, preferred=True)) for r in MATCH_FIELDS),
    (
        "no-nodeSelectorTerms",
        AFFINITY,
        {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": []}
            }
        },
    ),
    *(("pod-affinity-term", AFFINITY, _pod_affinity_term(**t)) for t in POD_AFFINITY_TERMS),
    *(("pod-affinity-topologyKey", AFFINITY, _pod_affinity(ANY, key)) for key in TOPOLOGY_KEYS),
    *(("topologySpreadConstraint", SPREAD, [_constraint(**c)]) for c in CONSTRAINTS),
    *(("topologySpreadConstraints", SPREAD, pair) for pair in CONSTRAINT_PAIRS),
    *(("priorityClassName", POD, {"priorityClassName": name}) for name in CLASS_NAMES),
    *(("runtimeClassName", POD, {"runtimeClassName": name}) for name in CLASS_NAMES),
    *(("env-name", POD, _env(name=name, value="v")) for name in ENV_NAMES),
    *(("env-valueFrom", POD, _env(**fields)) for fields in ENV_SOURCES),
    *(("env-fieldRef", POD, _field_ref(*ref)) for ref in FIELD_REFS),
    *(("env-divisor", POD, _divisor(*divisor)) for divisor in DIVISORS),
    *(("resources", POD, _container(resources=r)) for r in RESOURCES),
    (
        "init-container-resources",
        POD,
        _container("initContainers", name="init", resources=GPU_UNLIMITED),
    ),
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
    # validatePodAffinityTerm names a refused namespaces entry `namespace`, without its index;
    # ValidateMatchLabelKeysAndMismatchLabelKeys a matchLabelKeys entry also in the
    # labelSelector by the term's path and the entry's index (term[i]); validateResourceRequirements
    # a request above its limit resources.requests, a request without its limit resources.limits,
    # hugepages without cpu or memory resources (gpuconf names the hugepages entry).
    entry = (
        _dotted(found[0].path[:-1])
        .replace("spec.template.metadata", "spec.template")
        .replace(".namespaces", ".namespace")
        .replace(".matchLabelKeys", "")
        .replace(".resources.requests", ".resources")
        .replace(".resources.limits", ".resources")
    )
    assert any(field.startswith(entry) for field in blamed), (entry, blamed)
