"""Which of Kubernetes' naming rules a value breaks, said as Kubernetes says it.

The patterns in api/base.py decide; these say why a value failed one, for the diagnostic. They
follow k8s.io/apimachinery v0.34.4 pkg/util/validation/validation.go (IsQualifiedName,
IsDNS1123Subdomain, IsDNS1123Label) and k8s.io/kubernetes v1.34.4 pkg/apis/core/helper/helpers.go
(IsExtendedResourceName, IsNativeResource), checked in the order Kubernetes checks them."""

from __future__ import annotations

import re
from collections.abc import Callable

QUALIFIED_PREFIX_MAX = 253
"""IsQualifiedName: the prefix is a DNS subdomain (DNS1123SubdomainMaxLength)."""
QUALIFIED_NAME_MAX = 63
"""IsQualifiedName: qualifiedNameMaxLength."""
LABEL_VALUE_MAX = 63
"""IsValidLabelValue: LabelValueMaxLength."""
QUOTA_PREFIX = "requests."
"""core.DefaultResourceRequestsPrefix: an extended resource's quota name is requests.<name>."""
EXTENDED_RESOURCE_PREFIX_MAX = QUALIFIED_PREFIX_MAX - len(QUOTA_PREFIX)
NATIVE_DOMAIN = "kubernetes.io"
"""IsNativeResource: a name whose prefix ends in kubernetes.io is Kubernetes' own."""

# Patterns, compiled (by `re`'s cache) only when a value is explained: validating a file that is
# right never pays for them.
SUBDOMAIN = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*"
"""IsDNS1123Subdomain's dns1123SubdomainFmt, its length aside."""
_NAME = r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?"
_LOWERCASE_NAME = r"[a-z0-9]([-a-z0-9_.]*[a-z0-9])?"
_SUBDOMAIN_CHARACTERS = (
    "lowercase letters, digits, '-' and '.', each dot-separated part starting and ending with "
    "a letter or digit"
)


def _subdomain(value: str, what: str, longest: int) -> str | None:
    if len(value) > longest:
        return f"{what} must be a DNS subdomain of at most {longest} characters, not {len(value)}"
    if not re.fullmatch(SUBDOMAIN, value):
        return f"{what} must be a DNS subdomain: {_SUBDOMAIN_CHARACTERS}"
    return None


def _qualified(
    value: str, what: str, prefix: str, prefix_longest: int, name: str, characters: str
) -> str:
    parts = value.split("/")
    if len(parts) > 2:
        return f"{what} is [{prefix}/]name, with at most one '/'"
    if len(parts) == 2:
        if not parts[0]:
            return f"{what}'s {prefix} before '/' must not be empty"
        problem = _subdomain(parts[0], f"{what}'s {prefix}", prefix_longest)
        if problem:
            return problem
    part = parts[-1]
    if not part:
        return f"{what}'s name part must not be empty"
    if len(part) > QUALIFIED_NAME_MAX:
        return (
            f"{what}'s name part must be at most {QUALIFIED_NAME_MAX} characters, not {len(part)}"
        )
    if not re.fullmatch(name, part):
        return f"{what}'s name part must be {characters}"
    return f"it is not {what}"


def qualified_name(value: str) -> str:
    """Why `value` is not a qualified name (IsQualifiedName): a label key, taint key."""
    return _qualified(
        value,
        "a qualified name",
        "prefix",
        QUALIFIED_PREFIX_MAX,
        _NAME,
        "letters, digits, '-', '_' or '.', starting and ending with a letter or digit",
    )


def _not_native(domain: str) -> str | None:
    if domain.startswith(QUOTA_PREFIX):
        return f"an extended resource name must not start with {QUOTA_PREFIX!r}"
    if domain.endswith(NATIVE_DOMAIN):
        return f"the {NATIVE_DOMAIN} domain is Kubernetes' own, not an extended resource's"
    return None


def extended_resource_name(value: str) -> str:
    """Why `value` is not an extended resource name (IsExtendedResourceName): <domain>/<name>,
    outside kubernetes.io, whose quota name requests.<name> is itself a qualified name."""
    domain, slash, _ = value.rpartition("/")
    if not slash:
        return "an extended resource name is <domain>/<name>"
    native = _not_native(domain)
    if native:
        return native
    problem = _qualified(
        value,
        "an extended resource name",
        "domain",
        EXTENDED_RESOURCE_PREFIX_MAX,
        _LOWERCASE_NAME,
        "lowercase letters, digits, '-', '_' or '.', starting and ending with a letter or digit",
    )
    if len(domain) > EXTENDED_RESOURCE_PREFIX_MAX:
        return f"{problem}: its quota name {QUOTA_PREFIX}<name> is a qualified name too"
    return problem


def resource_domain(value: str) -> str:
    """Why `value` cannot be the domain of extended resource names <domain>/<class>."""
    native = _not_native(value)
    if native:
        return native
    problem = _subdomain(value, "the domain", EXTENDED_RESOURCE_PREFIX_MAX)
    if problem and len(value) > EXTENDED_RESOURCE_PREFIX_MAX:
        return f"{problem}: the quota name {QUOTA_PREFIX}<domain>/<class> is a qualified name"
    return problem or "it breaks Kubernetes' extended-resource rule"


def too_long(longest: int) -> Callable[[str], str | None]:
    """For a rule whose hint says the characters: the length, where that is what breaks it."""

    def why(value: str) -> str | None:
        return f"{len(value)} characters, at most {longest}" if len(value) > longest else None

    return why
