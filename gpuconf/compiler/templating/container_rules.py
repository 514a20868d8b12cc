"""What kube-apiserver refuses in a pod's containers' env and resources that the JSON schema
lets through. Read from k8s.io/kubernetes v1.34.4 pkg/apis/core/validation/validation.go:
ValidateEnv (IsRelaxedEnvVarName: RelaxedEnvironmentVariableValidation is locked on in 1.34),
validateEnvVarValueFrom and validateObjectFieldSelector (with pkg/apis/core/pods/helpers.go's
ConvertDownwardAPIFieldLabel), and ValidateContainerResourceRequirements
(validateContainerResourceName, ValidateResourceQuantityValue; pkg/apis/core/helper/helpers.go's
IsStandardContainerResourceName, IsNativeResource, IsExtendedResourceName,
IsOvercommitAllowed, IsIntegerResourceName). Hugepages' page-size rules are not held here."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

from gpuconf.api.base import LABEL_KEY
from gpuconf.api.kubernetes_names import NATIVE_DOMAIN, QUOTA_PREFIX, extended_resource_name
from gpuconf.api.shape_errors import as_yaml_spells, pattern_wording
from gpuconf.compiler.templating.server_fields import (
    Problem,
    entries,
    label_key_problem,
    not_one_of,
)
from gpuconf.diagnostics import KeyPath
from gpuconf.formats.quantity import Quantity

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
    found = label_key_problem(key.lower() if field == "metadata.annotations" else key)
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


def _mapping(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _resource_name_problem(name: str) -> tuple[str, str] | None:
    if not re.fullmatch(LABEL_KEY, name):
        message, _ = pattern_wording(LABEL_KEY, name)
        return message.replace("label key", "resource name"), _NAME_HINT
    if "/" not in name:
        if name in CONTAINER_RESOURCES or name.startswith(HUGEPAGES_PREFIX):
            return None
        return f"{as_yaml_spells(name)} is not a resource a container can ask for", _NAME_HINT
    if NATIVE_PREFIX in name or _extended(name):
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


def _extended(name: str) -> bool:
    """IsExtendedResourceName: outside kubernetes.io/, and its quota name requests.<name> a
    qualified name (which, unlike a cluster file's, may hold capitals)."""
    return (
        "/" in name
        and NATIVE_PREFIX not in name
        and not name.startswith(QUOTA_PREFIX)
        and bool(re.fullmatch(LABEL_KEY, f"{QUOTA_PREFIX}{name}"))
    )


def _overcommittable(name: str) -> bool:
    """IsOvercommitAllowed: Kubernetes' own resources, hugepages aside."""
    return ("/" not in name or NATIVE_PREFIX in name) and not name.startswith(HUGEPAGES_PREFIX)


def _parsed(value: Any) -> Quantity | None:
    try:
        return Quantity.parse(str(value))
    except ValueError:
        return None  # the kind's schema refuses it


def _quantity(name: str, value: Any, path: KeyPath) -> Iterator[Problem]:
    """ValidateResourceQuantityValue: not negative; a whole number for an extended resource."""
    quantity = _parsed(value)
    if quantity is None:
        return
    if quantity.value < 0:
        yield Problem(path, value, f"{as_yaml_spells(value)} is negative")
    elif _extended(name) and quantity.value.denominator != 1:
        yield Problem(
            path,
            value,
            f"{as_yaml_spells(value)} is not a whole number",
            f"{name} is an extended resource: devices are counted whole",
        )


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
    if not _overcommittable(name) and request.compare(ceiling) != 0:
        yield Problem(
            where,
            value,
            f"the {name} request {as_yaml_spells(value)} must equal its limit "
            f"{as_yaml_spells(limit)}",
            f"{name} cannot be overcommitted",
        )
    elif request.compare(ceiling) > 0:
        yield Problem(
            where,
            value,
            f"the {name} request {as_yaml_spells(value)} is more than its limit "
            f"{as_yaml_spells(limit)}",
        )
