"""What several ResourceQuotas of one namespace hold its pods to, for one quota line.

The quota admission checks a pod against every quota of its namespace whose scopes match it,
each on its own (k8s.io/apiserver v0.34.4 pkg/admission/plugin/resourcequota/controller.go
checkQuotas), so a pod gets the smallest of those. An unscoped quota matches every pod; a scoped
one only the pods of its scopes (k8s.io/kubernetes v1.34.4 pkg/quota/v1/evaluator/core/pods.go
podMatchesScopeFunc). Only Terminating with NotTerminating, and BestEffort with NotBestEffort,
part every pod between them (a GPU pod that requests no cpu or memory is BestEffort: QoS reads
only those, pkg/apis/core/helper/qos/qos.go); any other scopes leave some pods unlimited.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

PARTING_PAIRS = (("Terminating", "NotTerminating"), ("BestEffort", "NotBestEffort"))


class Held(NamedTuple):
    hard: int
    used: int
    scopes: frozenset[str]
    """Each scope as a reader would name it: `NotBestEffort`, `PriorityClass In [high]`."""


def scopes(spec: Mapping[str, Any]) -> frozenset[str]:
    """A quota's scopes, from `scopes` and `scopeSelector` alike."""
    found = {str(scope) for scope in spec.get("scopes") or () if scope}
    selector = spec.get("scopeSelector")
    expressions = selector.get("matchExpressions") if isinstance(selector, Mapping) else None
    for expression in expressions if isinstance(expressions, list) else ():
        if not isinstance(expression, Mapping):
            continue
        name, operator = expression.get("scopeName"), expression.get("operator")
        values = expression.get("values")
        if operator in (None, "Exists"):
            found.add(str(name))
        else:
            found.add(f"{name} {operator} [{', '.join(map(str, values or ()))}]")
    return frozenset(found)


def namespace_limit(quotas: Sequence[Held]) -> Held | None:
    """What the quotas hold the namespace to as a whole (its limit, and what they count in use):
    the smallest unscoped quota; without one, a parting pair's two sides added (the smallest of
    each); else None, as some of its pods are held by no quota."""
    unscoped = [quota for quota in quotas if not quota.scopes]
    if unscoped:
        return Held(
            min(quota.hard for quota in unscoped),
            max(quota.used for quota in unscoped),
            frozenset(),
        )
    for pair in PARTING_PAIRS:
        sides = [[quota for quota in quotas if quota.scopes == {scope}] for scope in pair]
        if all(sides):
            return Held(
                sum(min(quota.hard for quota in side) for side in sides),
                sum(max(quota.used for quota in side) for side in sides),
                frozenset(),
            )
    return None


def described(held: frozenset[str]) -> str:
    return ", ".join(sorted(held))
