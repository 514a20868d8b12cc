"""Validate one located document: its shape (pydantic), then the rules over its meaning.

A shape error does not stop the rules: they still look at what the error leaves intact
(compiler/set_aside.py), and the file gets both kinds of diagnostic in one run."""

from __future__ import annotations

from typing import NamedTuple

from gpuconf.api.cluster import Cluster
from gpuconf.api.cluster.conversion import as_current
from gpuconf.api.core_validator import ValidationError
from gpuconf.api.shape_errors import diagnostics_from
from gpuconf.api.validators import validate_cluster
from gpuconf.compiler.resolve.class_selection import ResolvedClass, resolve_classes
from gpuconf.compiler.resolve.declared_inventory import DeclaredInventory, build_inventory
from gpuconf.compiler.resolve.mig_strategies import MigStrategies
from gpuconf.compiler.rules import DOCUMENT_RULES, INVENTORY_RULES, QUEUE_RULES, RuleContext
from gpuconf.compiler.set_aside import NOTHING, SetAside, set_aside
from gpuconf.diagnostics import Diagnostic, has_errors
from gpuconf.formats.located_yaml import Located
from gpuconf.gpus.catalog import Catalog


class Validated(NamedTuple):
    """A cluster that passed validation, with what the later stages need."""

    located: Located
    cluster: Cluster
    inventory: DeclaredInventory
    classes: tuple[ResolvedClass, ...]
    mig_strategies: MigStrategies
    """Each pool's migStrategy and the GPU Operator's (resolve/mig_strategies.py)."""
    warnings: tuple[Diagnostic, ...]
    catalog: Catalog
    """The catalog it was checked against, with the models the cluster declares (DRA selectors
    name models by their NVML name)."""


def validate(located: Located, catalog: Catalog) -> Validated | list[Diagnostic]:
    """The validated cluster, or every diagnostic found (warnings included). A file at an older
    apiVersion is read as the current one (api/cluster/conversion.py)."""
    located, diagnostics = as_current(located)
    try:
        cluster = validate_cluster(located.data)
    except ValidationError as error:
        return (
            diagnostics
            + diagnostics_from(error, located, Cluster)
            + _rules_on_the_rest(error, located, catalog)
        )
    context = _context(cluster, located, catalog, NOTHING)
    diagnostics += _rule_diagnostics(context)
    if has_errors(diagnostics):
        return diagnostics
    return Validated(
        located,
        cluster,
        context.inventory,
        context.classes,
        context.mig_strategies,
        tuple(diagnostics),
        context.catalog,
    )


def _rules_on_the_rest(
    error: ValidationError, located: Located, catalog: Catalog
) -> list[Diagnostic]:
    """What the rules find in the items the shape errors leave; nothing where none can be kept."""
    repaired = set_aside(error, located)
    if repaired is None:
        return []
    rest, aside = repaired
    try:
        cluster = validate_cluster(rest.data)
    except ValidationError:
        return []
    return _rule_diagnostics(_context(cluster, rest, catalog, aside))


def _context(cluster: Cluster, located: Located, catalog: Catalog, aside: SetAside) -> RuleContext:
    catalog = catalog.extended(cluster.spec.gpu_models)
    inventory = build_inventory(cluster, catalog)
    classes, strategies = resolve_classes(cluster.spec, inventory)
    return RuleContext(cluster, located, catalog, inventory, classes, strategies, aside)


def _rule_diagnostics(context: RuleContext) -> list[Diagnostic]:
    diagnostics = [d for rule in DOCUMENT_RULES for d in rule(context)]
    if not has_errors(diagnostics) and context.set_aside.whole_inventory:
        diagnostics += [d for rule in INVENTORY_RULES for d in rule(context)]
        if not has_errors(diagnostics):
            diagnostics += [d for rule in QUEUE_RULES for d in rule(context)]
    return diagnostics
