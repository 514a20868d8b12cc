"""Cluster-file versions: which ones gpuconf reads, and how an older one becomes the current one.

As the Kubernetes API server serves an older version of a kind: a file at an older apiVersion is
still read, converted in memory into the current model, with a warning naming `gpuconf migrate`,
which makes the same change in the file itself (adopt/migrate.py). A file at the current version
that still uses an older form gets an error where that form stands.

Each step names the versions it goes between and finds, in a document, the values written in its
`from_version`'s form; the one kind of change so far is a value that becomes a list of one."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

from gpuconf.api.version import CLUSTER_API_VERSION, CLUSTER_V1ALPHA1
from gpuconf.diagnostics import Diagnostic, KeyPath, Severity
from gpuconf.formats.located_yaml import Located
from gpuconf.hints import did_you_mean

API_VERSION_KEY = "apiVersion"
_SHOWN = 60
"""How much of an unknown version a message quotes."""


class Step(NamedTuple):
    name: str
    from_version: str
    to_version: str
    single_values: Callable[[Any], list[KeyPath]]
    """Where a document (plain or round-trip data) holds a value alone that `to_version` takes
    as a list: each becomes a list of one."""
    refused: str
    """What a file at `to_version` or later is told where it still has that form."""
    current_form: str
    """How to write it now (the hint)."""


def _pool_mig_sharing_alone(document: Any) -> list[KeyPath]:
    spec = document.get("spec") if isinstance(document, dict) else None
    pools = spec.get("nodePools") if isinstance(spec, dict) else None
    return [
        ("spec", "nodePools", index, "sharing")
        for index, pool in enumerate(pools if isinstance(pools, list) else [])
        if isinstance(pool, dict) and isinstance(pool.get("sharing"), dict)
    ]


STEPS: Sequence[Step] = (
    Step(
        "pool-mig-sharing-as-list",
        CLUSTER_V1ALPHA1,
        CLUSTER_API_VERSION,
        _pool_mig_sharing_alone,
        f"a pool's MIG sharing is a list of layouts in {CLUSTER_API_VERSION}, not one mapping",
        "put the layout in a list, `sharing: [{strategy: mig, layout: …}]`; "
        f"only {CLUSTER_V1ALPHA1} took one mapping",
    ),
)
"""In order, oldest first; the last one's to_version is the current version."""
READ = (CLUSTER_API_VERSION, *(step.from_version for step in reversed(STEPS)))
"""Every cluster-file version gpuconf reads, newest first."""


def steps_from(version: object) -> list[Step]:
    """The steps that take a file at `version` to the current version (none for the current or
    an unknown version)."""
    chain: list[Step] = []
    for step in STEPS:
        if step.from_version == version or chain:
            chain.append(step)
    return chain


def as_current(located: Located) -> tuple[Located, list[Diagnostic]]:
    """The document as the current version reads it: converted, with a warning, where it is at an
    older version; with an error at each form older than its version that it still has, and at a
    version gpuconf does not read (the rest is then checked as the current version)."""
    version = located.data.get(API_VERSION_KEY)
    if not isinstance(version, str):
        return located, []  # the shape check says what is wrong with it
    chain = steps_from(version)
    diagnostics: list[Diagnostic] = []
    if chain:
        diagnostics.append(_deprecated(located, version))
    elif version != CLUSTER_API_VERSION:
        diagnostics.append(_unknown(located, version))
    # Forms older than the file's version are errors; the file is still read as meant.
    found = [
        (step, path)
        for step in STEPS[: len(STEPS) - len(chain)]
        for path in step.single_values(located.data)
    ]
    diagnostics += [
        located.diagnostic(path, step.refused, step.current_form) for step, path in found
    ]
    located = located.with_listed(path for _, path in found)
    for step in chain:
        located = located.with_listed(step.single_values(located.data))
    if version != CLUSTER_API_VERSION:
        located = located.with_value((API_VERSION_KEY,), CLUSTER_API_VERSION)
    return located, diagnostics


def _deprecated(located: Located, version: str) -> Diagnostic:
    return located.diagnostic(
        (API_VERSION_KEY,),
        f"{version} is deprecated; read as {CLUSTER_API_VERSION}",
        f"run `gpuconf migrate {located.file}` to rewrite the file at {CLUSTER_API_VERSION}, "
        "comments kept",
        severity=Severity.WARNING,
    )


def _unknown(located: Located, version: str) -> Diagnostic:
    read = ", ".join(v if v == CLUSTER_API_VERSION else f"{v} (deprecated)" for v in READ)
    suggestion = did_you_mean(version, READ)
    shown = repr(version if len(version) <= _SHOWN else version[: _SHOWN - 3] + "...")
    return located.diagnostic(
        (API_VERSION_KEY,),
        f"{shown} is not a cluster-file version gpuconf reads",
        f"{suggestion} gpuconf reads {read}" if suggestion else f"gpuconf reads {read}",
    )
