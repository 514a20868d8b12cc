"""What kube-apiserver refuses in a pod's containers' env and resources that the JSON schema
lets through. Read from k8s.io/kubernetes v1.34.4 pkg/apis/core/validation/validation.go:
ValidateEnv (IsRelaxedEnvVarName: RelaxedEnvironmentVariableValidation is locked on in 1.34),
validateEnvVarValueFrom and validateObjectFieldSelector (with pkg/apis/core/pods/helpers.go's
ConvertDownwardAPIFieldLabel), and ValidateContainerResourceRequirements
(validateContainerResourceName, ValidateResourceQuantityValue; pkg/apis/core/helper/helpers.go's
IsStandardContainerResourceName, IsNativeResource, IsExtendedResourceName,
IsOvercommitAllowed, IsIntegerResourceName; quantities as k8s.io/apimachinery v0.34.4
pkg/api/resource/quantity.go parses them: rounded up to nano, MilliValue rounding up), with
validateContainerResourceFieldSelector and validateConfigMapKeySelector/validateSecretKeySelector
(IsConfigMapKey), pkg/apis/core/helper/helpers.go's IsHugePageResourceValueDivisible, and
validateContainerResourceDivisor (the divisor's Quantity.String(), formats/quantity_spelling.py,
among the validContainerResourceDivisorFor* sets)."""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Mapping
from fractions import Fraction
from typing import Any

from gpuconf.api.base import LABEL_KEY
from gpuconf.api.kubernetes_names import (
    NATIVE_DOMAIN,
    QUOTA_PREFIX,
    extended_resource_name,
    qualified_name,
)
from gpuconf.api.shape_errors import as_yaml_spells
from gpuconf.compiler.templating.server_fields import (
    Problem,
    annotation_key_problem,
    dns_subdomain_problem,
    entries,
    label_key_problem,
    not_one_of,
)
from gpuconf.diagnostics import KeyPath
from gpuconf.formats.quantity import Quantity
from gpuconf.formats.quantity_spelling import canonical_spelling, sent_text, server_spelling

CONTAINER_GROUPS = ("containers", "initContainers")
ENV_SOURCES = ("fieldRef", "resourceFieldRef", "configMapKeyRef", "secretKeyRef")
"""The sources of an env entry's valueFrom (fileKeyRef is behind the EnvFiles gate, off in
1.34: the server drops it)."""
ENV_FIELD_PATHS = (
    "metadata.name",
    "metadata.namespace",
    "metadata.uid",
    "spec.nodeName",
    "spec.serviceAccountName",
    "status.hostIP",
    "status.hostIPs",
    "status.podIP",
    "status.podIPs",
)
"""validEnvDownwardAPIFieldPathExpressions; or metadata.labels['<key>'] or
metadata.annotations['<key>']."""
FIELD_PATH_ALIASES = {"spec.host": "spec.nodeName"}
"""ConvertDownwardAPIFieldLabel's spelling for old clients."""
SUBSCRIPTED = ("metadata.labels", "metadata.annotations")
CONTAINER_RESOURCES = ("cpu", "memory", "ephemeral-storage")
"""standardContainerResources; hugepages-<size> besides."""
HUGEPAGES_PREFIX = "hugepages-"
NATIVE_PREFIX = f"{NATIVE_DOMAIN}/"
"""ResourceDefaultNamespacePrefix: a name holding it is Kubernetes' own (IsNativeResource)."""
QOS_RESOURCES = ("cpu", "memory")
"""supportedQoSComputeResources: hugepages need one of them beside."""
FIELD_RESOURCES = tuple(
    f"{field}.{name}" for field in ("limits", "requests") for name in CONTAINER_RESOURCES
)
"""validContainerResourceFieldPathExpressions; or limits.hugepages-… and requests.hugepages-…"""
FIELD_RESOURCE_PREFIXES = (f"limits.{HUGEPAGES_PREFIX}", f"requests.{HUGEPAGES_PREFIX}")
BYTE_DIVISORS = ("1", *(f"1{unit}" for unit in "kMGTPE"), *(f"1{unit}i" for unit in "KMGTPE"))
DIVISORS = {
    "cpu": ("cpu", ("1m", "1"), "1m"),
    "memory": ("memory", BYTE_DIVISORS, "1Mi"),
    "ephemeral-storage": ("local ephemeral storage", BYTE_DIVISORS, "1Gi"),
    HUGEPAGES_PREFIX: ("hugepages", BYTE_DIVISORS, "1Mi"),
}
"""validContainerResourceDivisorFor*: by the resource (limits. or requests. taken off, any
hugepages size as hugepages-), what the server calls it, the divisors it takes as
Quantity.String() spells them, and one for a hint."""
KEY_SOURCES = ("configMapKeyRef", "secretKeyRef")
CONFIG_KEY = re.compile(r"[-._a-zA-Z0-9]+")
"""IsConfigMapKey's characters; at most 253 of them, and not ".", "..", nor starting ".."."""
CONFIG_KEY_MAX = 253
NANO = 10**9


def containers(data: Mapping[str, Any], pod: KeyPath) -> Iterator[Problem]:
    """Each container's env and resources, then each init container's (as ValidatePodSpec)."""
    for group in CONTAINER_GROUPS:
        for i, container in entries(data, (*pod, group)):
            where = (*pod, group, i)
            for j, variable in entries(container, ("env",)):
                yield from _env_var(variable, (*where, "env", j))
            resources = container.get("resources")
            if isinstance(resources, dict):
                yield from _resources(resources, (*where, "resources"))


def _env_var(variable: Mapping[str, Any], path: KeyPath) -> Iterator[Problem]:
    """ValidateEnv's entry: a name of printable ASCII without '=', a value or one source."""
    name = variable.get("name")
    if name == "":
        yield Problem((*path, "name"), name, "an env entry's name must not be empty")
    elif isinstance(name, str) and not all(" " <= c <= "~" and c != "=" for c in name):
        yield Problem(
            (*path, "name"),
            name,
            f"{as_yaml_spells(name)} is not a valid environment variable name",
            "printable ASCII characters other than '='",
        )
    source = variable.get("valueFrom")
    if not isinstance(source, dict):
        return
    given = [key for key in ENV_SOURCES if source.get(key) is not None]
    where = (*path, "valueFrom")
    if not given:
        yield Problem(
            where,
            source,
            f"valueFrom must name one of {', '.join(ENV_SOURCES)}",
            "or write the value itself as value:",
        )
    elif variable.get("value"):
        yield Problem(
            (*path, "value"),
            variable["value"],
            "an env entry with valueFrom may not also have a value",
            "remove value, or valueFrom",
        )
    elif len(given) > 1:
        yield Problem(
            (*where, given[1]),
            source[given[1]],
            f"valueFrom may name one source, not {' and '.join(given)}",
        )
    field_ref = source.get("fieldRef")
    if isinstance(field_ref, dict):
        yield from _field_ref(field_ref, (*where, "fieldRef"))
    resource_ref = source.get("resourceFieldRef")
    if isinstance(resource_ref, dict):
        yield from _resource_field_ref(resource_ref, (*where, "resourceFieldRef"))
    for kind in KEY_SOURCES:
        selector = source.get(kind)
        if isinstance(selector, dict):
            yield from _key_selector(selector, (*where, kind))


def _resource_field_ref(reference: Mapping[str, Any], path: KeyPath) -> Iterator[Problem]:
    """validateContainerResourceFieldSelector, for an env entry: a container's own cpu, memory,
    ephemeral-storage or hugepages; not an extended resource such as a GPU."""
    resource = reference.get("resource")
    if not isinstance(resource, str):
        return
    if resource == "":
        yield Problem((*path, "resource"), resource, "resource must not be empty")
    elif resource not in FIELD_RESOURCES and not resource.startswith(FIELD_RESOURCE_PREFIXES):
        allowed = (*FIELD_RESOURCES, *(f"{prefix}<size>" for prefix in FIELD_RESOURCE_PREFIXES))
        yield not_one_of((*path, "resource"), resource, allowed)
    yield from _divisor(resource, reference.get("divisor"), (*path, "divisor"))


def _divisor(resource: str, divisor: Any, path: KeyPath) -> Iterator[Problem]:
    """validateContainerResourceDivisor: a divisor (unless zero, as an unset one is) that the
    server spells as one of those the resource takes."""
    field, _, name = resource.partition(".")
    if field not in ("limits", "requests"):
        return
    called, allowed, unit = DIVISORS.get(
        HUGEPAGES_PREFIX if name.startswith(HUGEPAGES_PREFIX) else name, ("", (), "")
    )
    text = sent_text(divisor)
    spelled = None if text is None else server_spelling(text)
    if not allowed or text is None or spelled is None or spelled == "0" or spelled in allowed:
        return  # no divisor, or none the kind's schema takes: it refuses what is no quantity
    read = "" if spelled == text else f" (kube-apiserver reads it as {spelled})"
    listed = " and ".join(allowed) if len(allowed) == 2 else ", ".join(allowed)
    canonical = canonical_spelling(text)
    hint = (
        f"write {canonical}: kube-apiserver compares {as_yaml_spells(divisor)} as it is written"
        if canonical in allowed
        else f"the unit to count {resource} in, such as {unit}"
    )
    yield Problem(
        path,
        divisor,
        f"divisor {as_yaml_spells(divisor)}{read} is not supported with the {called} resource: "
        f"only {listed}",
        hint,
    )


def _key_selector(selector: Mapping[str, Any], path: KeyPath) -> Iterator[Problem]:
    """validateConfigMapKeySelector and validateSecretKeySelector: the object's name (a DNS
    subdomain) and the key (IsConfigMapKey)."""
    name = selector.get("name", "")  # the server reads a missing name as ""
    if name == "":
        yield Problem(
            (*path, "name") if "name" in selector else path,
            name if "name" in selector else selector,
            "name must name the object",
        )
    elif isinstance(name, str):
        found = dns_subdomain_problem(name)
        if found is not None:
            message, hint = found
            yield Problem((*path, "name"), name, f"name {message}", hint)
    key = selector.get("key")
    if not isinstance(key, str):
        return
    if key == "":
        yield Problem((*path, "key"), key, "key must not be empty")
    elif (
        len(key) > CONFIG_KEY_MAX
        or not CONFIG_KEY.fullmatch(key)
        or key in (".", "..")
        or key.startswith("..")
    ):
        yield Problem(
            (*path, "key"),
            key,
            f"{as_yaml_spells(key)} is not a valid config key",
            f"letters, digits, '-', '_' and '.', at most {CONFIG_KEY_MAX}; not '.' or '..', "
            "nor starting '..'",
        )


def _field_ref(field_ref: Mapping[str, Any], path: KeyPath) -> Iterator[Problem]:
    """validateObjectFieldSelector with ConvertDownwardAPIFieldLabel (apiVersion defaults to
    v1, the one it takes)."""
    api_version = field_ref.get("apiVersion") or "v1"
    field_path = field_ref.get("fieldPath")
    if api_version != "v1":
        yield not_one_of((*path, "apiVersion"), api_version, ("v1",))
        return
    if not isinstance(field_path, str):
        return
    if field_path == "":
        yield Problem((*path, "fieldPath"), field_path, "fieldPath must not be empty")
        return
    subscripted = re.fullmatch(r"(.+?)\['(.*)'\]", field_path, flags=re.DOTALL)
    if subscripted is None:
        if FIELD_PATH_ALIASES.get(field_path, field_path) not in ENV_FIELD_PATHS:
            allowed = (*ENV_FIELD_PATHS, *(f"{field}['<key>']" for field in SUBSCRIPTED))
            yield not_one_of((*path, "fieldPath"), field_path, allowed)
        return
    field, key = subscripted[1], subscripted[2]
    if field not in SUBSCRIPTED:
        yield Problem(
            (*path, "fieldPath"),
            field_path,
            f"{field} takes no ['<key>']: only {' and '.join(SUBSCRIPTED)} do",
        )
        return
    found = (annotation_key_problem if field == "metadata.annotations" else label_key_problem)(key)
    if found is not None:
        yield Problem((*path, "fieldPath"), field_path, *found)


def _resources(resources: Mapping[str, Any], path: KeyPath) -> Iterator[Problem]:
    """validateResourceRequirements with validateContainerResourceName."""
    limits, requests = (_mapping(resources.get(field)) for field in ("limits", "requests"))
    for field, listed in (("limits", limits), ("requests", requests)):
        for name, value in listed.items():
            where = (*path, field, name)
            found = _resource_name_problem(name)
            if found is not None:
                yield Problem(where, value, *found)
            yield from _quantity(name, value, where)
    for name, value in requests.items():
        yield from _request_within_limit(name, value, limits.get(name), path)
    asked = [("limits", name, value) for name, value in limits.items()]
    asked += [("requests", name, value) for name, value in requests.items()]
    hugepages = [entry for entry in asked if entry[1].startswith(HUGEPAGES_PREFIX)]
    if hugepages and not any(name in QOS_RESOURCES for _, name, _ in asked):
        field, name, value = hugepages[0]
        yield Problem(
            (*path, field, name),
            value,
            "hugepages need a cpu or memory request or limit beside them",
            "add a memory limit (hugepages are memory too)",
        )


def _mapping(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _resource_name_problem(name: str) -> tuple[str, str] | None:
    if not re.fullmatch(LABEL_KEY, name):
        return (
            f"{as_yaml_spells(name)} is not a valid resource name: {qualified_name(name)}",
            _NAME_HINT,
        )
    if "/" not in name:
        if name in CONTAINER_RESOURCES or name.startswith(HUGEPAGES_PREFIX):
            return None
        return f"{as_yaml_spells(name)} is not a resource a container can ask for", _NAME_HINT
    if _native(name) or _extended(name):
        return None
    return (
        f"{as_yaml_spells(name)} is not a valid extended resource name: "
        f"{extended_resource_name(name)}",
        _NAME_HINT,
    )


_NAME_HINT = (
    f"{', '.join(CONTAINER_RESOURCES)}, {HUGEPAGES_PREFIX}<size>, or an extended resource "
    "<domain>/<name> such as nvidia.com/gpu"
)


def _native(name: str) -> bool:
    """IsNativeResource: no domain, or Kubernetes' own."""
    return "/" not in name or NATIVE_PREFIX in name


def _extended(name: str) -> bool:
    """IsExtendedResourceName: not native, and its quota name requests.<name> a qualified name
    (which, unlike a cluster file's, may hold capitals)."""
    return (
        not _native(name)
        and not name.startswith(QUOTA_PREFIX)
        and bool(re.fullmatch(LABEL_KEY, f"{QUOTA_PREFIX}{name}"))
    )


def _overcommittable(name: str) -> bool:
    """IsOvercommitAllowed: Kubernetes' own resources, hugepages aside."""
    return _native(name) and not name.startswith(HUGEPAGES_PREFIX)


def _parsed(value: Any) -> Fraction | None:
    """The quantity's value as the server holds it: ParseQuantity rounds a finer one up to a
    nano (quantity.go: "rounds non-zero values up to the minimum representable value")."""
    try:
        exact = Quantity.parse(str(value)).value
    except ValueError:
        return None  # the kind's schema refuses it
    return Fraction(math.ceil(exact * NANO), NANO)


def _quantity(name: str, value: Any, path: KeyPath) -> Iterator[Problem]:
    """ValidateResourceQuantityValue: not negative; a whole number for an extended resource;
    and validateResourceQuantityHugePageValue: hugepages in whole pages."""
    quantity = _parsed(value)
    if quantity is None:
        return
    if quantity < 0:
        yield Problem(path, value, f"{as_yaml_spells(value)} is negative")
    elif _extended(name) and not _whole(quantity):
        yield Problem(
            path,
            value,
            f"{as_yaml_spells(value)} is not a whole number",
            f"{name} is an extended resource: devices are counted whole",
        )
    elif name.startswith(HUGEPAGES_PREFIX) and not _in_pages(quantity, name):
        page = name.removeprefix(HUGEPAGES_PREFIX)
        yield Problem(
            path,
            value,
            f"{as_yaml_spells(value)} is not a whole number of {page} pages",
            f"{name} is counted in pages of {page}, a size such as 2Mi or 1Gi",
        )


def _whole(quantity: Fraction) -> bool:
    """MilliValue() % 1000 == 0, MilliValue rounding up."""
    return math.ceil(quantity * 1000) % 1000 == 0


def _in_pages(quantity: Fraction, name: str) -> bool:
    """IsHugePageResourceValueDivisible: the page size (the name's suffix) a positive whole
    quantity, and Value() (rounded up) a multiple of it."""
    page = _parsed(name.removeprefix(HUGEPAGES_PREFIX))
    if page is None or page <= 0 or not _whole(page):
        return False
    return math.ceil(quantity) % int(page) == 0


def _request_within_limit(name: str, value: Any, limit: Any, path: KeyPath) -> Iterator[Problem]:
    where = (*path, "requests", name)
    request = _parsed(value)
    if request is None:
        return
    if limit is None:
        if not _overcommittable(name):
            yield Problem(
                where,
                value,
                f"{name} is requested without a limit",
                f"set limits.{name} to the same value: {name} cannot be overcommitted",
            )
        return
    ceiling = _parsed(limit)
    if ceiling is None:
        return
    if not _overcommittable(name) and request != ceiling:
        yield Problem(
            where,
            value,
            f"the {name} request {as_yaml_spells(value)} must equal its limit "
            f"{as_yaml_spells(limit)}",
            f"{name} cannot be overcommitted",
        )
    elif request > ceiling:
        yield Problem(
            where,
            value,
            f"the {name} request {as_yaml_spells(value)} is more than its limit "
            f"{as_yaml_spells(limit)}",
        )
