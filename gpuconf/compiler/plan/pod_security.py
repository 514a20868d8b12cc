"""The Pod Security labels of gpuconf's own namespace, what reads them, and which values a site
may give them there and on any other object gpuconf writes (resolve/metadata_guard.py holds the
rule): Pod Security admission refuses to create a Namespace whose labels it cannot parse.

Source read: k8s.io/pod-security-admission v0.34.4 (the release of the kubernetes modules
gpuconf's tests build against): api/helpers.go (ParseLevel, ParseVersion, PolicyToEvaluate),
admission/admission.go (ValidateNamespace, ValidatePod, EvaluatePod), policy/registry.go."""

from __future__ import annotations

import re
from typing import Any

from gpuconf.api.base import INT64_MAX
from gpuconf.compiler.resolve.metadata_guard import EVERY_OBJECT, Guard

_PREFIX = "pod-security.kubernetes.io/"
ENFORCE = _PREFIX + "enforce"
AUDIT = _PREFIX + "audit"
WARN = _PREFIX + "warn"
PRIVILEGED = "privileged"

# gpuconf's own namespace runs node installers: setup (privileged, host / mounted, hostPID)
# and the driver installer. Pod Security must admit them there, and only there; tenant
# namespaces keep whatever the cluster enforces.
POD_SECURITY_PRIVILEGED = {ENFORCE: PRIVILEGED, WARN: PRIVILEGED, AUDIT: PRIVILEGED}

_LEVELS = ("privileged", "baseline", "restricted")
# ParseVersion: "latest" or v1.<minor>, the minor without leading zeros and, read by Go's
# strconv.Atoi, within a 64-bit int.
_VERSION = re.compile(r"v1\.(0|[1-9][0-9]*)")
_NOT_TEXT = "Kubernetes takes only strings as label values"
_NAMESPACE_REFUSED = (
    "Pod Security admission refuses to create or update a Namespace whose labels it cannot "
    "parse (admission.go, ValidateNamespace)"
)


def _enforce_breaks(written: str, value: Any) -> str | None:
    """Where gpuconf writes privileged, only privileged; elsewhere any level that parses."""
    if not isinstance(value, str):
        return _NOT_TEXT
    if value not in _LEVELS:
        return (
            "Pod Security admission reads a level other than privileged, baseline or restricted "
            f"as restricted (helpers.go, ParseLevel), and {_NAMESPACE_REFUSED}"
        )
    if written and value != written:
        return (
            f"Pod Security admission would admit there only pods that meet {value}, and gpuconf's "
            "runtime setup and driver installer run privileged, with hostPID and host paths"
        )
    return None


def _advisory_breaks(written: str, value: Any) -> str | None:
    """audit and warn only annotate the audit event or warn the client (EvaluatePod): any
    level is a site's to choose, an unparsable one refuses the Namespace."""
    if not isinstance(value, str):
        return _NOT_TEXT
    if value in _LEVELS:
        return None
    return f"it is not privileged, baseline or restricted: {_NAMESPACE_REFUSED}"


def _version_breaks(written: str, value: Any) -> str | None:
    """The privileged level admits every pod at every version (registry.go: a privileged
    LevelVersion checks nothing), so a version matters only where it does not parse."""
    if not isinstance(value, str):
        return _NOT_TEXT
    minor = _VERSION.fullmatch(value)
    if value == "latest" or (minor and int(minor[1]) <= INT64_MAX):
        return None
    return f'it is not "latest" nor v1.<minor> (a 64-bit int): {_NAMESPACE_REFUSED}'


POD_SECURITY_READERS = {
    ENFORCE: Guard(
        "Pod Security admission admits a pod only where the namespace's enforce level allows "
        "it (admission.go, ValidatePod); gpuconf's namespace runs privileged node installers",
        _enforce_breaks,
        "privileged, baseline or restricted, and privileged alone on gpuconf's own namespace: "
        "enforce a stricter level on the namespaces your workloads run in; audit and warn may "
        "be stricter on gpuconf's",
        read_with=EVERY_OBJECT,
    ),
    AUDIT: Guard(
        "Pod Security admission only records in the audit log a pod the audit level would "
        "refuse; it refuses none (admission.go, EvaluatePod)",
        _advisory_breaks,
        "privileged, baseline or restricted (a stricter level audits gpuconf's privileged pods)",
        read_with=EVERY_OBJECT,
        may_drop=True,
    ),
    WARN: Guard(
        "Pod Security admission only warns the client of a pod or pod template the warn level "
        "would refuse; it refuses none (admission.go, EvaluatePod, ValidatePodController)",
        _advisory_breaks,
        "privileged, baseline or restricted (a stricter level warns of gpuconf's privileged pods)",
        read_with=EVERY_OBJECT,
        may_drop=True,
    ),
    **{
        f"{mode}-version": Guard(
            "Pod Security admission reads the version of a level's checks from it "
            "(helpers.go, ParseVersion); a privileged level checks nothing at any version",
            _version_breaks,
            'give it "latest" or v1.<minor>, e.g. v1.34',
            read_with=EVERY_OBJECT,
        )
        for mode in (ENFORCE, AUDIT, WARN)
    },
}
"""By label key, on every object: a level or version Pod Security admission cannot parse keeps a
Namespace from being created (admission.go, ValidateNamespace), and on gpuconf's own namespace,
where gpuconf writes privileged, enforce stays privileged. audit and warn a whole template may
leave out: the cluster's default level then only records or warns."""
