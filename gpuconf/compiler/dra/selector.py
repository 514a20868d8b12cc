"""A class's selector as a DeviceClass CEL expression for NVIDIA's DRA driver, or why it cannot be one.

DRA selectors see one device's driver, attributes and capacity, never its node: the driver
publishes no node or pool attribute, and from v25.8.0 no GPU index either. `pools` and `nodes`
(and `indices`, on those releases) are therefore expressed through the GPUs' declared UUIDs.
Where some selected GPU has none, the selector narrows by the selected GPUs' models instead, and
leaves it to the compile-time proof to show that this selects exactly the class's GPUs (it does
when no other GPU of those models matches the rest of the selector).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from gpuconf.compiler.dra.semver import SemVer
from gpuconf.compiler.resolve.class_selection import ResolvedClass
from gpuconf.formats.quantity import memory_quantity
from gpuconf.gpus.catalog import Catalog
from gpuconf.gpus.dra_attributes import DRIVER, AttributeSet

ATTRIBUTE = f"device.attributes['{DRIVER}']"
MEMORY = f"device.capacity['{DRIVER}'].memory"

_ELSEWHERE = (
    "or select by model, memoryAtLeast or migProfile and keep pods on the right nodes with a "
    "node selector on the pods that use the claim"
)


@dataclass(frozen=True)
class CelSelector:
    expression: str
    """One condition per line, joined with &&."""
    unproven: tuple[Unexpressible, ...] = ()
    """Select keys stood in for by the GPUs' models: the proof must show the expression exact,
    else these are reported."""


@dataclass(frozen=True)
class Unexpressible:
    key: str
    """The select key DRA cannot express (camelCase, as the user wrote it)."""
    message: str
    hint: str


def cel_string(text: str) -> str:
    """A CEL string literal; JSON's escapes are CEL's, quoted with ' as Kubernetes examples are."""
    body = json.dumps(text, ensure_ascii=False)[1:-1].replace('\\"', '"').replace("'", "\\'")
    return f"'{body}'"


def _one_of(attribute: str, values: list[str] | list[int]) -> str:
    literals = [cel_string(v) if isinstance(v, str) else str(v) for v in values]
    if len(literals) == 1:
        return f"{ATTRIBUTE}.{attribute} == {literals[0]}"
    return f"{ATTRIBUTE}.{attribute} in [{', '.join(literals)}]"


def _without_uuids(resolved: ResolvedClass) -> str | None:
    """Where selected GPUs have no declared UUID, shortly; None when all have one."""
    missing = sorted(
        {
            f"node {m.group.node!r}"
            if m.group.node
            else f"the undeclared nodes of pool {m.group.pool!r}"
            for m in resolved.members
            if m.gpu.uuid is None or m.group.node is None
        }
    )
    if not missing:
        return None
    return ", ".join(missing[:3]) + (f" and {len(missing) - 3} more" if len(missing) > 3 else "")


def _unexpressible(key: str, missing: str, names: AttributeSet) -> Unexpressible:
    if key == "indices":
        why = (
            f"NVIDIA's DRA driver {names.line}.x publishes no GPU index (index and parentIndex "
            "were removed in v25.8.0)"
        )
        hint = (
            f"declare those nodes with every GPU's uuid, {_ELSEWHERE}, "
            "or set spec.dra.driverVersion to a v25.3 release, which still publishes index"
        )
    else:
        why = (
            "a DRA selector sees only device attributes, and NVIDIA's driver publishes no node "
            "or pool attribute"
        )
        hint = f"declare those nodes with every GPU's uuid, {_ELSEWHERE}, or use allocation: device-plugin"
    return Unexpressible(
        key,
        f"DRA cannot express select.{key}: {why}, and GPUs on {missing} have no declared UUID "
        "to select them by",
        hint,
    )


def _where_clause(
    resolved: ResolvedClass, keys: list[str], names: AttributeSet
) -> tuple[str | None, tuple[Unexpressible, ...]]:
    """How DRA expresses `keys`, which no published attribute can: the class's GPUs by UUID, or,
    where some have none, their models, with the keys left for the proof to vouch for."""
    missing = _without_uuids(resolved)
    if missing is not None:
        products = sorted({m.gpu.model.nvml_name for m in resolved.members})
        clause = _one_of("productName", products) if products else None
        return clause, tuple(_unexpressible(key, missing, names) for key in keys)
    uuids = sorted({m.gpu.uuid for m in resolved.members if m.gpu.uuid is not None})
    mig = resolved.spec.select.mig_profile is not None
    attribute = "parentUUID" if mig else "uuid"
    assert attribute in names.published(mig)
    return _one_of(attribute, uuids), ()


def cel_selector(resolved: ResolvedClass, catalog: Catalog, names: AttributeSet) -> CelSelector:
    """The DeviceClass CEL expression for the class, naming only attributes in `names` (what the
    chosen driver release publishes)."""
    selector = resolved.spec.select
    profile = selector.mig_profile
    clauses = [f"device.driver == {cel_string(DRIVER)}"]
    clauses.append(f"{ATTRIBUTE}.type == {cel_string('gpu' if profile is None else 'mig')}")
    if profile is not None:
        clauses.append(_one_of("profile", [profile]))
    if selector.model is not None:
        wanted = [selector.model] if isinstance(selector.model, str) else selector.model
        models = [found for name in wanted if (found := catalog.get(name)) is not None]
        clauses.append(_one_of("productName", sorted({m.nvml_name for m in models})))
    if selector.memory_at_least is not None:
        quantity = cel_string(memory_quantity(selector.memory_at_least))
        clauses.append(f"{MEMORY}.compareTo(quantity({quantity})) >= 0")
    if selector.architecture is not None:
        chosen = selector.architecture
        architectures: list[str] = [chosen] if isinstance(chosen, str) else list(chosen)
        clauses.append(_one_of("architecture", sorted(architectures)))
    for minimum, attribute in (
        (selector.compute_capability_at_least, "cudaComputeCapability"),
        (selector.driver_version_at_least, "driverVersion"),
    ):
        if minimum is not None:
            version = cel_string(str(SemVer.published(minimum)))
            clauses.append(f"{ATTRIBUTE}.{attribute}.compareTo(semver({version})) >= 0")
    by_uuid = [
        k for k, v in (("pools", selector.pools), ("nodes", selector.nodes)) if v is not None
    ]
    if selector.indices is not None:
        if names.has_indices:
            attribute = "index" if profile is None else "parentIndex"
            clauses.append(_one_of(attribute, sorted(set(selector.indices))))
        else:
            by_uuid.append("indices")
    unproven: tuple[Unexpressible, ...] = ()
    if by_uuid:
        clause, unproven = _where_clause(resolved, by_uuid, names)
        if clause is not None and clause not in clauses:
            clauses.append(clause)
    return CelSelector(" &&\n".join(clauses), unproven)
