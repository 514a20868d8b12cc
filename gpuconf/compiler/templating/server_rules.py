"""What kube-apiserver refuses in an object that its kind's JSON schema lets through: label keys
and values (the object's, a workload's selector, its pod template's labels and nodeSelector) and
a pod template's tolerations. A site's template may write any of these (its blocks are plain
YAML), so its output is held to them before a byte is written.

Read from k8s.io/apimachinery v0.34.4 pkg/apis/meta/v1/validation/validation.go (ValidateLabels,
ValidateLabelName, ValidateLabelSelector, ValidateLabelSelectorRequirement) and k8s.io/kubernetes
v1.34.4 pkg/apis/core/validation/validation.go (ValidatePodSpec's nodeSelector,
ValidateTolerations, validateTaintEffect). Keys and values are held to api/base.py's LABEL_KEY
and LABEL_VALUE, as a cluster file's are (IsQualifiedName, IsValidLabelValue), and worded as
shape_errors words them; tests/control_plane/test_server_label_rules.py pins the reading
against the server."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any, NamedTuple

from gpuconf.api.base import LABEL_KEY, LABEL_VALUE
from gpuconf.api.shape_errors import as_yaml_spells, pattern_wording
from gpuconf.diagnostics import KeyPath
from gpuconf.hints import did_you_mean

TOLERATION_OPERATORS = ("Equal", "Exists")
TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
SELECTOR_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")


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
    if (data.get("apiVersion"), data.get("kind")) == WORKLOAD:
        yield from _selector(data, ("spec", "selector"))
        yield from _labels(data, ("spec", "template", "metadata", "labels"))
        yield from _labels(data, ("spec", "template", "spec", "nodeSelector"))
        yield from _tolerations(data, ("spec", "template", "spec", "tolerations"))


def _at(data: Any, path: KeyPath) -> Any:
    for key in path:
        data = data.get(key) if isinstance(data, dict) else None
    return data


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


def _selector(data: Mapping[str, Any], path: KeyPath) -> Iterator[Problem]:
    yield from _labels(data, (*path, "matchLabels"))
    expressions = _at(data, (*path, "matchExpressions"))
    for i, expression in enumerate(expressions if isinstance(expressions, list) else []):
        if isinstance(expression, dict):
            yield from _requirement(expression, (*path, "matchExpressions", i))


def _requirement(expression: Mapping[str, Any], path: KeyPath) -> Iterator[Problem]:
    operator, values = expression.get("operator"), expression.get("values") or []
    if operator in ("In", "NotIn") and not values:
        yield Problem((*path, "operator"), operator, f"operator {operator} needs values")
    elif operator in ("Exists", "DoesNotExist") and values:
        yield Problem(
            (*path, "values"), values, f"values may not be given with operator {operator}"
        )
    elif operator not in SELECTOR_OPERATORS:
        yield _not_one_of((*path, "operator"), operator, SELECTOR_OPERATORS)
    key = expression.get("key")
    found = label_key_problem(key) if isinstance(key, str) else None
    if found is not None:
        yield Problem((*path, "key"), key, *found)
    for j, value in enumerate(values if isinstance(values, list) else []):
        found = label_value_problem(value) if isinstance(value, str) else None
        if found is not None:
            yield Problem((*path, "values", j), value, *found)


def _tolerations(data: Mapping[str, Any], path: KeyPath) -> Iterator[Problem]:
    tolerations = _at(data, path)
    for i, toleration in enumerate(tolerations if isinstance(tolerations, list) else []):
        if isinstance(toleration, dict):
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
