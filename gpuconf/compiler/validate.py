"""Validate one located document: its shape (pydantic), then the rules over its meaning."""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import ValidationError

from gpuconf.api.cluster import Cluster
from gpuconf.api.shape_errors import diagnostics_from
from gpuconf.compiler.resolve.class_selection import ResolvedClass, resolve_classes
from gpuconf.compiler.resolve.declared_inventory import DeclaredInventory, build_inventory
from gpuconf.compiler.rules import DOCUMENT_RULES, INVENTORY_RULES, RuleContext
from gpuconf.diagnostics import Diagnostic, has_errors
from gpuconf.formats.located_yaml import Located
from gpuconf.gpus.catalog import Catalog


@dataclass(frozen=True)
class Validated:
    """A cluster that passed validation, with what the later stages need."""

    located: Located
    cluster: Cluster
    inventory: DeclaredInventory
    classes: tuple[ResolvedClass, ...]
    warnings: tuple[Diagnostic, ...]
    catalog: Catalog
    """The catalog it was checked against, with the models the cluster declares (DRA selectors
    name models by their NVML name)."""


def validate(located: Located, catalog: Catalog) -> Validated | list[Diagnostic]:
    """The validated cluster, or every diagnostic found (warnings included)."""
    try:
        cluster = Cluster.model_validate(located.data)
    except ValidationError as error:
        return diagnostics_from(error, located, Cluster)
    catalog = catalog.extended(cluster.spec.gpu_models)
    inventory = build_inventory(cluster, catalog)
    classes = resolve_classes(cluster.spec, inventory)
    context = RuleContext(cluster, located, catalog, inventory, classes)
    diagnostics = [d for rule in DOCUMENT_RULES for d in rule(context)]
    if not has_errors(diagnostics):
        diagnostics += [d for rule in INVENTORY_RULES for d in rule(context)]
    if has_errors(diagnostics):
        return diagnostics
    return Validated(located, cluster, inventory, classes, tuple(diagnostics), catalog)
