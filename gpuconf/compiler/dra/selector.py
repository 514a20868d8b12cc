"""A class's selector as a DeviceClass CEL expression for NVIDIA's DRA driver, or why it cannot be one.

DRA selectors see one device's driver, attributes and capacity, never its node: the driver
publishes no node or pool attribute. `pools` and `nodes` are therefore expressed through the
GPUs' declared UUIDs, which is possible only when every selected GPU has one.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from gpuconf.compiler.dra.devices import DRIVER
from gpuconf.compiler.resolve.class_selection import ResolvedClass
from gpuconf.formats.quantity import memory_quantity
from gpuconf.gpus.catalog import Catalog

ATTRIBUTE = f"device.attributes['{DRIVER}']"
MEMORY = f"device.capacity['{DRIVER}'].memory"


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


def _uuid_clause(resolved: ResolvedClass) -> str | list[Unexpressible]:
    selector = resolved.spec.select
    keys = [k for k, v in (("pools", selector.pools), ("nodes", selector.nodes)) if v is not None]
    missing = sorted(
        {
            f"node {m.group.node!r}"
            if m.group.node
            else f"the undeclared nodes of pool {m.group.pool!r}"
            for m in resolved.members
            if m.gpu.uuid is None or m.group.node is None
        }
    )
    if missing:
        shown = ", ".join(missing[:3]) + (
            f" and {len(missing) - 3} more" if len(missing) > 3 else ""
        )
        return [
            Unexpressible(
                key,
                f"DRA cannot express select.{key}: a DRA selector sees only device attributes, "
                f"NVIDIA's driver publishes no node or pool attribute, and GPUs on {shown} have no declared UUID to select them by",
                "declare those nodes with every GPU's uuid, select by model, memoryAtLeast or migProfile instead, or use allocation: device-plugin",
            )
            for key in keys
        ]
    uuids = sorted({m.gpu.uuid for m in resolved.members if m.gpu.uuid is not None})
    attribute = "uuid" if selector.mig_profile is None else "parentUUID"
    return _one_of(attribute, uuids)


def cel_selector(resolved: ResolvedClass, catalog: Catalog) -> str | list[Unexpressible]:
    """The CEL expression, one condition per line, or every select key it cannot express."""
    selector = resolved.spec.select
    profile = selector.mig_profile
    clauses = [f"device.driver == {cel_string(DRIVER)}"]
    clauses.append(f"{ATTRIBUTE}.type == {cel_string('gpu' if profile is None else 'mig')}")
    if profile is not None:
        clauses.append(_one_of("profile", [profile]))
    if selector.model is not None:
        names = [selector.model] if isinstance(selector.model, str) else selector.model
        models = [found for name in names if (found := catalog.get(name)) is not None]
        clauses.append(_one_of("productName", sorted({m.nvml_name for m in models})))
    if selector.memory_at_least is not None:
        quantity = cel_string(memory_quantity(selector.memory_at_least))
        clauses.append(f"{MEMORY}.compareTo(quantity({quantity})) >= 0")
    if selector.indices is not None:
        attribute = "index" if profile is None else "parentIndex"
        clauses.append(_one_of(attribute, sorted(set(selector.indices))))
    if selector.pools is not None or selector.nodes is not None:
        uuids = _uuid_clause(resolved)
        if isinstance(uuids, list):
            return uuids
        clauses.append(uuids)
    return " &&\n".join(clauses)
