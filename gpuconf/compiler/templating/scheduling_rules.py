"""What kube-apiserver refuses in a pod's affinity and topologySpreadConstraints that the JSON
schema lets through. Read from k8s.io/kubernetes v1.34.4 pkg/apis/core/validation/validation.go:
validateAffinity (validateNodeAffinity, ValidateNodeSelector, ValidateNodeSelectorTerm,
ValidateNodeSelectorRequirement, ValidateNodeFieldSelectorRequirement,
ValidatePreferredSchedulingTerms, validatePodAffinityTerm, validateWeightedPodAffinityTerms,
ValidateMatchLabelKeysAndMismatchLabelKeys) and validateTopologySpreadConstraints
(ValidateTopologyKey, ValidateWhenUnsatisfiable, ValidateSpreadConstraintNotRepeat,
validateMinDomains, validateNodeInclusionPolicy)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from gpuconf.api.shape_errors import as_yaml_spells
from gpuconf.compiler.templating.server_fields import (
    NODE_SELECTOR_OPERATORS,
    Problem,
    at,
    dns_label_problem,
    dns_subdomain_problem,
    entries,
    label_key_problem,
    label_keys,
    not_one_of,
    requirement,
    selector,
    strings,
)
from gpuconf.diagnostics import KeyPath

WEIGHT_MIN, WEIGHT_MAX = 1, 100
"""A preferred term's weight: ValidatePreferredSchedulingTerms, validateWeightedPodAffinityTerms."""
NODE_FIELDS = ("metadata.name",)
"""nodeFieldSelectorValidators: the one field a node selector term's matchFields may name."""
NODE_FIELD_OPERATORS = ("In", "NotIn")
WHEN_UNSATISFIABLE = ("DoNotSchedule", "ScheduleAnyway")
"""supportedScheduleActions."""
NODE_INCLUSION_POLICIES = ("Honor", "Ignore")
"""supportedPodTopologySpreadNodePolicies."""


def affinity(data: Mapping[str, Any], path: KeyPath) -> Iterator[Problem]:
    """validateAffinity."""
    required = (*path, "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution")
    terms = at(data, (*required, "nodeSelectorTerms"))
    if isinstance(terms, list) and not terms:
        yield Problem(
            (*required, "nodeSelectorTerms"),
            terms,
            "nodeSelectorTerms needs at least one term",
            "a node matching any one term is selected; remove "
            "requiredDuringSchedulingIgnoredDuringExecution to select every node",
        )
    for i, _ in entries(data, (*required, "nodeSelectorTerms")):
        yield from _node_selector_term(data, (*required, "nodeSelectorTerms", i), values=True)
    preferred = (*path, "nodeAffinity", "preferredDuringSchedulingIgnoredDuringExecution")
    for i, term in entries(data, preferred):
        yield from _weight(term, (*preferred, i))
        # A preference's values go unchecked: it may match no node at all.
        yield from _node_selector_term(data, (*preferred, i, "preference"), values=False)
    for kind in ("podAffinity", "podAntiAffinity"):
        pod_terms = (*path, kind, "requiredDuringSchedulingIgnoredDuringExecution")
        for i, _ in entries(data, pod_terms):
            yield from _pod_affinity_term(data, (*pod_terms, i))
        weighted = (*path, kind, "preferredDuringSchedulingIgnoredDuringExecution")
        for i, term in entries(data, weighted):
            yield from _weight(term, (*weighted, i))
            yield from _pod_affinity_term(data, (*weighted, i, "podAffinityTerm"))


def _weight(term: Mapping[str, Any], path: KeyPath) -> Iterator[Problem]:
    weight = term.get("weight")
    if isinstance(weight, int) and not WEIGHT_MIN <= weight <= WEIGHT_MAX:
        yield Problem(
            (*path, "weight"),
            weight,
            f"weight {weight} is not in the range {WEIGHT_MIN}-{WEIGHT_MAX}",
            "the scheduler adds a matching term's weight to a node's score",
        )


def _node_selector_term(data: Mapping[str, Any], path: KeyPath, values: bool) -> Iterator[Problem]:
    """ValidateNodeSelectorTerm."""
    for j, expression in entries(data, (*path, "matchExpressions")):
        where = (*path, "matchExpressions", j)
        yield from requirement(expression, where, NODE_SELECTOR_OPERATORS, values=values)
    for j, expression in entries(data, (*path, "matchFields")):
        yield from _node_field_requirement(expression, (*path, "matchFields", j))


def _node_field_requirement(expression: Mapping[str, Any], path: KeyPath) -> Iterator[Problem]:
    """ValidateNodeFieldSelectorRequirement: metadata.name In or NotIn one node name."""
    operator, listed = expression.get("operator"), expression.get("values") or []
    if operator not in NODE_FIELD_OPERATORS:
        yield not_one_of((*path, "operator"), operator, NODE_FIELD_OPERATORS)
    elif len(listed) != 1:
        yield Problem(
            (*path, "values") if listed else (*path, "operator"),
            listed or operator,
            f"operator {operator} of a matchFields requirement needs exactly one value",
            "the one node name it matches; give each node its own term",
        )
    key = expression.get("key")
    if key not in NODE_FIELDS:
        yield not_one_of((*path, "key"), key, NODE_FIELDS)
        return
    for j, name in strings(expression, ("values",)):
        found = dns_subdomain_problem(name)
        if found is not None:
            yield Problem((*path, "values", j), name, *found)


def _pod_affinity_term(data: Mapping[str, Any], path: KeyPath) -> Iterator[Problem]:
    """validatePodAffinityTerm."""
    yield from selector(data, (*path, "labelSelector"))
    yield from selector(data, (*path, "namespaceSelector"))
    for i, name in strings(data, (*path, "namespaces")):
        found = dns_label_problem(name)
        if found is not None:
            yield Problem((*path, "namespaces", i), name, *found)
    yield from _match_label_keys(data, path, ("matchLabelKeys", "mismatchLabelKeys"))
    topology_key = at(data, (*path, "topologyKey"))
    found = label_key_problem(topology_key) if isinstance(topology_key, str) else None
    if found is not None:
        yield Problem((*path, "topologyKey"), topology_key, *found)


def _match_label_keys(
    data: Mapping[str, Any], path: KeyPath, fields: tuple[str, ...]
) -> Iterator[Problem]:
    """ValidateMatchLabelKeysAndMismatchLabelKeys: label keys, only beside a labelSelector, and
    a key in matchLabelKeys not also in mismatchLabelKeys. Its check of a key in both
    matchLabelKeys and the labelSelector runs after a Pod's labelSelector has taken the keys
    (as matchExpressions); a pod template's has not, so it refuses only a key the selector
    already holds twice: in matchLabels and matchExpressions, or in two matchExpressions."""
    label_selector = at(data, (*path, "labelSelector"))
    for field in fields:
        listed = at(data, (*path, field))
        if not listed:
            continue
        if label_selector is None:
            yield Problem(
                (*path, field),
                listed,
                f"{field} may not be given without a labelSelector",
                "add a labelSelector; its pods are narrowed to those with the same label values",
            )
            continue
        yield from label_keys(data, (*path, field))
    match_keys = {key: i for i, key in strings(data, (*path, "matchLabelKeys"))}
    if isinstance(label_selector, dict):
        held = set(label_selector.get("matchLabels") or {})
        for _, expression in entries(label_selector, ("matchExpressions",)):
            key = expression.get("key")
            if key in match_keys and key in held:
                i = match_keys[key]
                yield Problem(
                    (*path, "matchLabelKeys", i),
                    key,
                    f"{as_yaml_spells(key)} is in both matchLabelKeys and the labelSelector",
                    "remove it from the labelSelector: matchLabelKeys selects by it",
                )
            held.add(key)
    mismatched = {key for _, key in strings(data, (*path, "mismatchLabelKeys"))}
    for i, key in strings(data, (*path, "matchLabelKeys")):
        if key in mismatched:
            yield Problem(
                (*path, "matchLabelKeys", i),
                key,
                f"{as_yaml_spells(key)} is in both matchLabelKeys and mismatchLabelKeys",
                "a label key can select pods with the same value or a different one, not both",
            )


def topology_spread(data: Mapping[str, Any], path: KeyPath) -> Iterator[Problem]:
    """validateTopologySpreadConstraints."""
    constraints = entries(data, path)
    for i, constraint in constraints:
        where = (*path, i)
        max_skew = constraint.get("maxSkew")
        if isinstance(max_skew, int) and max_skew <= 0:
            yield Problem(
                (*where, "maxSkew"),
                max_skew,
                f"maxSkew {max_skew} is not positive",
                "the most the matching pods' count may differ between two domains, at least 1",
            )
        topology_key = constraint.get("topologyKey")
        if topology_key == "":
            yield Problem(
                (*where, "topologyKey"),
                topology_key,
                "topologyKey must not be empty",
                "the node label whose values are the domains, e.g. topology.kubernetes.io/zone",
            )
        action = constraint.get("whenUnsatisfiable")
        if isinstance(action, str) and action not in WHEN_UNSATISFIABLE:
            yield not_one_of((*where, "whenUnsatisfiable"), action, WHEN_UNSATISFIABLE)
        repeated = next(
            (
                j
                for j, other in constraints
                if j > i
                and other.get("topologyKey") == topology_key
                and other.get("whenUnsatisfiable") == action
            ),
            None,
        )
        if repeated is not None:
            yield Problem(
                (*where, "topologyKey"),
                topology_key,
                f"constraint [{repeated}] has the same topologyKey and whenUnsatisfiable "
                f"({topology_key}, {action})",
                "merge the two, or give one whenUnsatisfiable the other value",
            )
        yield from _min_domains(constraint, where, action)
        for field in ("nodeAffinityPolicy", "nodeTaintsPolicy"):
            policy = constraint.get(field)
            if policy is not None and policy not in NODE_INCLUSION_POLICIES:
                yield not_one_of((*where, field), policy, NODE_INCLUSION_POLICIES)
        yield from _match_label_keys(data, where, ("matchLabelKeys",))
        yield from selector(data, (*where, "labelSelector"))


def _min_domains(constraint: Mapping[str, Any], path: KeyPath, action: Any) -> Iterator[Problem]:
    min_domains = constraint.get("minDomains")
    if not isinstance(min_domains, int):
        return
    if min_domains <= 0:
        yield Problem(
            (*path, "minDomains"),
            min_domains,
            f"minDomains {min_domains} is not positive",
            "the fewest eligible domains the scheduler counts, at least 1; remove it for 1",
        )
    if action != "DoNotSchedule":
        yield Problem(
            (*path, "minDomains"),
            min_domains,
            f"minDomains applies only to whenUnsatisfiable DoNotSchedule, not {action}",
            "set whenUnsatisfiable: DoNotSchedule or remove minDomains",
        )
