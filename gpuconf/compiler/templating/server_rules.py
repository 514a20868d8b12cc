"""What kube-apiserver refuses in an object that its kind's JSON schema lets through: label keys
and values (the object's, a workload's selector, its pod template's labels and nodeSelector),
annotation keys and their total size (the object's and its pod template's), and in a pod
template its priorityClassName and runtimeClassName (DNS subdomains), tolerations, affinity and
topologySpreadConstraints (scheduling_rules.py: selectors, weights, matchFields, namespaces,
matchLabelKeys, maxSkew, whenUnsatisfiable, minDomains, node inclusion policies, repeated
constraints) and its containers' env and resources (container_rules.py: env names, valueFrom's
one source and fieldRef's fieldPath, resource names, negative quantities, requests above limits,
extended resources' whole, equal request and limit). A site's template may write any of these
(its blocks are plain YAML), so its output is held to them before a byte is written.

Read from k8s.io/apimachinery v0.34.4 pkg/apis/meta/v1/validation/validation.go (ValidateLabels,
ValidateLabelName, ValidateLabelSelector, ValidateLabelSelectorRequirement) and
pkg/api/validation/objectmeta.go (ValidateAnnotations), and k8s.io/kubernetes v1.34.4
pkg/apis/core/validation/validation.go (ValidatePodSpec's nodeSelector, priorityClassName and
runtimeClassName (ValidateRuntimeClassName), ValidateTolerations, validateTaintEffect; the
other modules name theirs). Keys and values are held to api/base.py's LABEL_KEY and
LABEL_VALUE, as a cluster file's are (IsQualifiedName, IsValidLabelValue), and worded as
shape_errors words them; tests/control_plane/test_server_label_rules.py pins the reading
against the server."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from gpuconf.compiler.templating.container_rules import containers
from gpuconf.compiler.templating.scheduling_rules import affinity, topology_spread
from gpuconf.compiler.templating.server_fields import (
    Problem,
    annotation_key_problem,
    at,
    dns_subdomain_problem,
    entries,
    label_key_problem,
    label_value_problem,
    labels,
    not_one_of,
    selector,
)
from gpuconf.diagnostics import KeyPath

TOLERATION_OPERATORS = ("Equal", "Exists")
TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
ANNOTATIONS_SIZE_MAX = 256 * 1024
"""TotalAnnotationSizeLimitB: the bytes of every annotation's key and value together."""
POD_TEMPLATE = ("spec", "template")
POD = (*POD_TEMPLATE, "spec")
CLASS_NAMES = ("priorityClassName", "runtimeClassName")
"""ValidatePodSpec: each names its class, a DNS subdomain (an empty priorityClassName is none)."""

WORKLOAD = ("apps/v1", "DaemonSet")
"""The one workload kind gpuconf plans (an output must be its artifact's kind): its
spec.selector is a LabelSelector and spec.template a pod template (another kind's spec.template,
such as an ApplicationSet's, is not a pod's)."""


def problems(data: Mapping[str, Any]) -> Iterator[Problem]:
    """What the API server would refuse in `data`, a manifest, in the order it validates.
    A value of the wrong type is left to the kind's schema."""
    yield from labels(data, ("metadata", "labels"))
    yield from _annotations(data, ("metadata", "annotations"))
    if (data.get("apiVersion"), data.get("kind")) == WORKLOAD:
        yield from selector(data, ("spec", "selector"))
        yield from labels(data, (*POD_TEMPLATE, "metadata", "labels"))
        yield from _annotations(data, (*POD_TEMPLATE, "metadata", "annotations"))
        yield from containers(data, POD)
        yield from labels(data, (*POD, "nodeSelector"))
        yield from affinity(data, (*POD, "affinity"))
        yield from topology_spread(data, (*POD, "topologySpreadConstraints"))
        yield from _tolerations(data, (*POD, "tolerations"))
        yield from _class_names(data, POD)


def _class_names(data: Mapping[str, Any], pod: KeyPath) -> Iterator[Problem]:
    for field in CLASS_NAMES:
        name = at(data, (*pod, field))
        if not isinstance(name, str) or (name == "" and field == "priorityClassName"):
            continue
        found = dns_subdomain_problem(name)
        if found is not None:
            message, hint = found
            yield Problem((*pod, field), name, f"{field} {message}", hint)


def _annotations(data: Mapping[str, Any], path: KeyPath) -> Iterator[Problem]:
    """ValidateAnnotations: each key a qualified name once lower-cased, all of them together
    (keys and values, in bytes) at most ANNOTATIONS_SIZE_MAX."""
    annotations = at(data, path)
    if not isinstance(annotations, dict):
        return
    for key in annotations:
        found = annotation_key_problem(key) if isinstance(key, str) else None
        if found is not None:
            yield Problem((*path, key), key, *found)
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


def _tolerations(data: Mapping[str, Any], path: KeyPath) -> Iterator[Problem]:
    for i, toleration in entries(data, path):
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
        yield not_one_of((*path, "operator"), operator, TOLERATION_OPERATORS)
    if effect and effect not in TAINT_EFFECTS:
        yield not_one_of((*path, "effect"), effect, TAINT_EFFECTS)
