"""What server_rules.py, scheduling_rules.py and container_rules.py share: the Problem they
report, a manifest's fields found by key path, Kubernetes' name rules worded as shape_errors
words them, and label selectors (k8s.io/apimachinery v0.34.4
pkg/apis/meta/v1/validation/validation.go: ValidateLabels, ValidateLabelSelector,
ValidateLabelSelectorRequirement; k8s.io/kubernetes v1.34.4 pkg/apis/core/validation/validation.go:
ValidateNodeSelectorRequirement, whose values go unchecked in preferred terms)."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any, NamedTuple

from gpuconf.api.base import DNS_LABEL, DNS_SUBDOMAIN, LABEL_KEY, LABEL_VALUE
from gpuconf.api.kubernetes_names import QUALIFIED_NAME_MAX, QUALIFIED_PREFIX_MAX, qualified_name
from gpuconf.api.shape_errors import as_yaml_spells, pattern_wording
from gpuconf.diagnostics import KeyPath
from gpuconf.hints import did_you_mean

SELECTOR_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")
NODE_SELECTOR_OPERATORS = (*SELECTOR_OPERATORS, "Gt", "Lt")


class Problem(NamedTuple):
    path: KeyPath
    value: Any
    """What the refused entry holds there (the line that writes it is looked for by it)."""
    message: str
    hint: str = ""


def at(data: Any, path: KeyPath) -> Any:
    """What `data` holds at `path`, or None."""
    for key in path:
        if isinstance(data, dict):
            data = data.get(key)
        elif isinstance(data, list) and isinstance(key, int) and key < len(data):
            data = data[key]
        else:
            return None
    return data


def entries(data: Any, path: KeyPath) -> list[tuple[int, dict[str, Any]]]:
    """The mappings in the list at `path`, with their indexes."""
    found = at(data, path)
    items = found if isinstance(found, list) else []
    return [(i, item) for i, item in enumerate(items) if isinstance(item, dict)]


def strings(data: Any, path: KeyPath) -> list[tuple[int, str]]:
    """The strings in the list at `path`, with their indexes."""
    found = at(data, path)
    items = found if isinstance(found, list) else []
    return [(i, item) for i, item in enumerate(items) if isinstance(item, str)]


def label_key_problem(key: str) -> tuple[str, str] | None:
    """ValidateLabelName (IsQualifiedName), worded; None when the server takes `key`."""
    return None if re.fullmatch(LABEL_KEY, key) else pattern_wording(LABEL_KEY, key)


def annotation_key_problem(key: str) -> tuple[str, str] | None:
    """ValidateAnnotations' key: a qualified name once lower-cased, worded as written; None
    when the server takes `key`."""
    if re.fullmatch(LABEL_KEY, key.lower()):
        return None
    return (
        f"{as_yaml_spells(key)} is not a valid annotation key: {qualified_name(key.lower())}",
        f"an optional DNS-subdomain prefix of at most {QUALIFIED_PREFIX_MAX} characters and "
        f"'/', then a name of at most {QUALIFIED_NAME_MAX} characters (letters of either case)",
    )


def label_value_problem(value: str) -> tuple[str, str] | None:
    """IsValidLabelValue, worded; None when the server takes `value`."""
    return None if re.fullmatch(LABEL_VALUE, value) else pattern_wording(LABEL_VALUE, value)


def label_keys(data: Any, path: KeyPath) -> Iterator[Problem]:
    """Each string in the list at `path` held to ValidateLabelName."""
    for i, key in strings(data, path):
        found = label_key_problem(key)
        if found is not None:
            yield Problem((*path, i), key, *found)


def dns_label_problem(name: str) -> tuple[str, str] | None:
    """NameIsDNSLabel (IsDNS1123Label), worded; None when the server takes `name`."""
    return None if re.fullmatch(DNS_LABEL, name) else pattern_wording(DNS_LABEL, name)


def dns_subdomain_problem(name: str) -> tuple[str, str] | None:
    """NameIsDNSSubdomain (IsDNS1123Subdomain), worded; None when the server takes `name`."""
    if re.fullmatch(DNS_SUBDOMAIN, name) and len(name) <= QUALIFIED_PREFIX_MAX:
        return None
    return pattern_wording(DNS_SUBDOMAIN, name)


def not_one_of(path: KeyPath, value: Any, allowed: tuple[str, ...]) -> Problem:
    listed = f"one of {', '.join(allowed)}" if len(allowed) > 1 else allowed[0]
    hint = did_you_mean(str(value), list(allowed))
    return Problem(path, value, f"{as_yaml_spells(value)} is not {listed}", hint)


def labels(data: Any, path: KeyPath) -> Iterator[Problem]:
    """ValidateLabels: the mapping at `path`'s keys and values."""
    found_labels = at(data, path)
    if not isinstance(found_labels, dict):
        return
    for key, value in found_labels.items():
        found = label_key_problem(key) or (
            label_value_problem(value) if isinstance(value, str) else None
        )
        if found is not None:
            yield Problem((*path, key), value, *found)


def selector(data: Any, path: KeyPath) -> Iterator[Problem]:
    """ValidateLabelSelector: the LabelSelector at `path`."""
    yield from labels(data, (*path, "matchLabels"))
    for i, expression in entries(data, (*path, "matchExpressions")):
        yield from requirement(expression, (*path, "matchExpressions", i))


def requirement(
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
        yield not_one_of((*path, "operator"), operator, operators)
    key = expression.get("key")
    found = label_key_problem(key) if isinstance(key, str) else None
    if found is not None:
        yield Problem((*path, "key"), key, *found)
    for j, value in enumerate(listed if values and isinstance(listed, list) else []):
        found = label_value_problem(value) if isinstance(value, str) else None
        if found is not None:
            yield Problem((*path, "values", j), value, *found)
