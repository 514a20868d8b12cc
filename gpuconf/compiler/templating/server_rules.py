"""What kube-apiserver refuses in an object that its kind's JSON schema lets through: label keys
and values (the object's, a workload's selector, its pod template's labels and nodeSelector),
annotation keys and their total size (the object's and its pod template's), a pod template's
tolerations, and the label selectors and node selector requirements of its affinity and
topologySpreadConstraints. A site's template may write any of these (its blocks are plain
YAML), so its output is held to them before a byte is written.

Read from k8s.io/apimachinery v0.34.4 pkg/apis/meta/v1/validation/validation.go (ValidateLabels,
ValidateLabelName, ValidateLabelSelector, ValidateLabelSelectorRequirement) and
pkg/api/validation/objectmeta.go (ValidateAnnotations), and k8s.io/kubernetes v1.34.4
pkg/apis/core/validation/validation.go (ValidatePodSpec's nodeSelector, ValidateTolerations,
validateTaintEffect, validateAffinity, ValidateNodeSelectorRequirement (values unchecked in
preferred terms), validatePodAffinityTerm, validateTopologySpreadConstraints). Keys and values are held to api/base.py's LABEL_KEY
and LABEL_VALUE, as a cluster file's are (IsQualifiedName, IsValidLabelValue), and worded as
shape_errors words them; tests/control_plane/test_server_label_rules.py pins the reading
against the server."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any, NamedTuple

from gpuconf.api.base import LABEL_KEY, LABEL_VALUE
from gpuconf.api.kubernetes_names import qualified_name
from gpuconf.api.shape_errors import as_yaml_spells, pattern_wording
from gpuconf.diagnostics import KeyPath
from gpuconf.hints import did_you_mean

TOLERATION_OPERATORS = ("Equal", "Exists")
TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
SELECTOR_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")
NODE_SELECTOR_OPERATORS = (*SELECTOR_OPERATORS, "Gt", "Lt")
ANNOTATIONS_SIZE_MAX = 256 * 1024
"""TotalAnnotationSizeLimitB: the bytes of every annotation's key and value together."""
POD_TEMPLATE = ("spec", "template")
POD = (*POD_TEMPLATE, "spec")


class Problem(NamedTuple):
    path: KeyPath
    value: Any
    """What the refused entry holds there (the line that writes it is looked for by it)."""
    message: str
    hint: str = ""


WORKLOAD = ("apps/v1", "DaemonSet")
"""The one workload kind gpuconf plans (an output must be its artifact's kind): its
spec.selector is a LabelSelector and spec.template a pod template (another kind's spec.template,
such as an ApplicationSet's, is not a pod's)."""


def problems(data: Mapping[str, Any]) -> Iterator[Problem]:
    """What the API server would refuse in `data`, a manifest, in the order it validates.
    A value of the wrong type is left to the kind's schema."""
    yield from _labels(data, ("metadata", "labels"))
    yield from _annotations(data, ("metadata", "annotations"))
    if (data.get("apiVersion"), data.get("kind")) == WORKLOAD:
        yield from _selector(data, ("spec", "selector"))
        yield from _labels(data, (*POD_TEMPLATE, "metadata", "labels"))
        yield from _annotations(data, (*POD_TEMPLATE, "metadata", "annotations"))
        yield from _labels(data, (*POD, "nodeSelector"))
        yield from _affinity(data, (*POD, "affinity"))
        yield from _tolerations(data, (*POD, "tolerations"))
        for i, _ in _entries(data, (*POD, "topologySpreadConstraints")):
            yield from _selector(data, (*POD, "topologySpreadConstraints", i, "labelSelector"))


def _at(data: Any, path: KeyPath) -> Any:
    for key in path:
        if isinstance(data, dict):
            data = data.get(key)
        elif isinstance(data, list) and isinstance(key, int) and key < len(data):
            data = data[key]
        else:
            return None
    return data


def _entries(data: Any, path: KeyPath) -> list[tuple[int, dict[str, Any]]]:
    """The mappings in the list at `path`, with their indexes."""
    found = _at(data, path)
    items = found if isinstance(found, list) else []
    return [(i, item) for i, item in enumerate(items) if isinstance(item, dict)]


def label_key_problem(key: str) -> tuple[str, str] | None:
    """ValidateLabelName (IsQualifiedName), worded; None when the server takes `key`."""
    return None if re.fullmatch(LABEL_KEY, key) else pattern_wording(LABEL_KEY, key)


def label_value_problem(value: str) -> tuple[str, str] | None:
    """IsValidLabelValue, worded; None when the server takes `value`."""
    return None if re.fullmatch(LABEL_VALUE, value) else pattern_wording(LABEL_VALUE, value)


def _labels(data: Mapping[str, Any], path: KeyPath) -> Iterator[Problem]:
    labels = _at(data, path)
    if not isinstance(labels, dict):
        return
    for key, value in labels.items():
        found = label_key_problem(key) or (
            label_value_problem(value) if isinstance(value, str) else None
        )
        if found is not None:
            yield Problem((*path, key), value, *found)


def _annotations(data: Mapping[str, Any], path: KeyPath) -> Iterator[Problem]:
    """ValidateAnnotations: each key a qualified name once lower-cased, all of them together
    (keys and values, in bytes) at most ANNOTATIONS_SIZE_MAX."""
    annotations = _at(data, path)
    if not isinstance(annotations, dict):
        return
    for key in annotations:
        if isinstance(key, str) and not re.fullmatch(LABEL_KEY, key.lower()):
            yield Problem(
                (*path, key),
                key,
                f"{as_yaml_spells(key)} is not a valid annotation key: {qualified_name(key.lower())}",
                "an optional DNS-subdomain prefix of at most 253 characters and '/', then a name "
                "of at most 63 characters (letters of either case)",
            )
    size = sum(
        len(key.encode()) + len(value.encode())
        for key, value in annotations.items()
        if isinstance(key, str) and isinstance(value, str)
    )
    if size > ANNOTATIONS_SIZE_MAX:
        yield Problem(
            path,
            annotations,
            f"the annotations take {size} bytes; the API server takes at most "
            f"{ANNOTATIONS_SIZE_MAX} (keys and values together)",
        )


def _selector(data: Mapping[str, Any], path: KeyPath) -> Iterator[Problem]:
    yield from _labels(data, (*path, "matchLabels"))
    for i, expression in _entries(data, (*path, "matchExpressions")):
        yield from _requirement(expression, (*path, "matchExpressions", i))


def _affinity(data: Mapping[str, Any], path: KeyPath) -> Iterator[Problem]:
    required = (*path, "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution")
    for i, term in _entries(data, (*required, "nodeSelectorTerms")):
        for j, expression in _entries(term, ("matchExpressions",)):
            where = (*required, "nodeSelectorTerms", i, "matchExpressions", j)
            yield from _requirement(expression, where, NODE_SELECTOR_OPERATORS)
    preferred = (*path, "nodeAffinity", "preferredDuringSchedulingIgnoredDuringExecution")
    for i, term in _entries(data, preferred):
        for j, expression in _entries(term, ("preference", "matchExpressions")):
            where = (*preferred, i, "preference", "matchExpressions", j)
            # A preference's values go unchecked: it may match no node at all.
            yield from _requirement(expression, where, NODE_SELECTOR_OPERATORS, values=False)
    for kind in ("podAffinity", "podAntiAffinity"):
        terms = (*path, kind, "requiredDuringSchedulingIgnoredDuringExecution")
        for i, _ in _entries(data, terms):
            yield from _pod_affinity_term(data, (*terms, i))
        weighted = (*path, kind, "preferredDuringSchedulingIgnoredDuringExecution")
        for i, _ in _entries(data, weighted):
            yield from _pod_affinity_term(data, (*weighted, i, "podAffinityTerm"))


def _pod_affinity_term(data: Mapping[str, Any], path: KeyPath) -> Iterator[Problem]:
    yield from _selector(data, (*path, "labelSelector"))
    yield from _selector(data, (*path, "namespaceSelector"))
    topology_key = _at(data, (*path, "topologyKey"))
    found = label_key_problem(topology_key) if isinstance(topology_key, str) else None
    if found is not None:
        yield Problem((*path, "topologyKey"), topology_key, *found)


def _requirement(
    expression: Mapping[str, Any],
    path: KeyPath,
    operators: tuple[str, ...] = SELECTOR_OPERATORS,
    values: bool = True,
) -> Iterator[Problem]:
    """ValidateLabelSelectorRequirement, or with NODE_SELECTOR_OPERATORS
    ValidateNodeSelectorRequirement; `values`: whether each value must be a label value."""
    operator, listed = expression.get("operator"), expression.get("values") or []
    if operator in ("In", "NotIn") and not listed:
        yield Problem((*path, "operator"), operator, f"operator {operator} needs values")
    elif operator in ("Exists", "DoesNotExist") and listed:
        yield Problem(
            (*path, "values"), listed, f"values may not be given with operator {operator}"
        )
    elif operator in ("Gt", "Lt") and operator in operators and len(listed) != 1:
        yield Problem(
            (*path, "values") if listed else (*path, "operator"),
            listed or operator,
            f"operator {operator} needs exactly one value",
            "the one integer the node's label is compared with",
        )
    elif operator not in operators:
        yield _not_one_of((*path, "operator"), operator, operators)
    key = expression.get("key")
    found = label_key_problem(key) if isinstance(key, str) else None
    if found is not None:
        yield Problem((*path, "key"), key, *found)
    for j, value in enumerate(listed if values and isinstance(listed, list) else []):
        found = label_value_problem(value) if isinstance(value, str) else None
        if found is not None:
            yield Problem((*path, "values", j), value, *found)


def _tolerations(data: Mapping[str, Any], path: KeyPath) -> Iterator[Problem]:
    for i, toleration in _entries(data, path):
        yield from _toleration(toleration, (*path, i))


def _toleration(toleration: Mapping[str, Any], path: KeyPath) -> Iterator[Problem]:
    key = toleration.get("key") or ""
    operator = toleration.get("operator") or ""
    value = toleration.get("value") or ""
    effect = toleration.get("effect") or ""
    if key:
        found = label_key_problem(key) if isinstance(key, str) else None
        if found is not None:
            yield Problem((*path, "key"), key, *found)
    elif operator != "Exists":
        written = next((k for k in ("operator", "key") if k in toleration), None)
        yield Problem(
            (*path, written) if written else path,
            toleration[written] if written else toleration,
            "a toleration without a key must have operator Exists (it then tolerates every taint)",
            "add key:, or set operator: Exists",
        )
    if toleration.get("tolerationSeconds") is not None and effect != "NoExecute":
        yield Problem(
            (*path, "tolerationSeconds"),
            toleration["tolerationSeconds"],
            "tolerationSeconds applies only to effect NoExecute",
            "set effect: NoExecute or remove tolerationSeconds",
        )
    if operator in ("Equal", ""):
        found = label_value_problem(value) if isinstance(value, str) else None
        if found is not None:
            yield Problem((*path, "value"), value, *found)
    elif operator == "Exists":
        if value:
            yield Problem(
                (*path, "value"),
                value,
                "a toleration with operator Exists takes no value",
                "remove value, or use operator Equal",
            )
    else:
        yield _not_one_of((*path, "operator"), operator, TOLERATION_OPERATORS)
    if effect and effect not in TAINT_EFFECTS:
        yield _not_one_of((*path, "effect"), effect, TAINT_EFFECTS)


def _not_one_of(path: KeyPath, value: Any, allowed: tuple[str, ...]) -> Problem:
    listed = ", ".join(allowed)
    hint = did_you_mean(str(value), list(allowed))
    return Problem(path, value, f"{as_yaml_spells(value)} is not one of {listed}", hint)
