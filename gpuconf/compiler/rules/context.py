"""What every rule may look at."""

from __future__ import annotations

from typing import NamedTuple

from gpuconf.api.cluster import Cluster
from gpuconf.compiler.resolve.class_selection import ResolvedClass
from gpuconf.compiler.resolve.declared_inventory import DeclaredInventory
from gpuconf.compiler.resolve.mig_strategies import MigStrategies
from gpuconf.compiler.set_aside import NOTHING, SetAside
from gpuconf.diagnostics import Diagnostic, KeyPath, Severity
from gpuconf.formats.located_yaml import Located
from gpuconf.gpus.catalog import Catalog

SPEC = ("spec",)


def pool_path(index: int, *rest: str | int) -> KeyPath:
    return ("spec", "nodePools", index, *rest)


def class_path(index: int, *rest: str | int) -> KeyPath:
    return ("spec", "resourceClasses", index, *rest)


def quota_path(index: int, *rest: str | int) -> KeyPath:
    return ("spec", "quotas", index, *rest)


class RuleContext(NamedTuple):
    cluster: Cluster
    located: Located
    catalog: Catalog
    inventory: DeclaredInventory
    classes: tuple[ResolvedClass, ...]
    mig_strategies: MigStrategies
    """Each pool's migStrategy and the GPU Operator's (resolve/mig_strategies.py)."""
    set_aside: SetAside = NOTHING
    """Items a failed shape check set aside: a rule says nothing that only their absence causes."""

    def error(self, path: KeyPath, message: str, hint: str = "") -> Diagnostic:
        return self.located.diagnostic(path, message, hint)

    def warning(self, path: KeyPath, message: str, hint: str = "") -> Diagnostic:
        return self.located.diagnostic(path, message, hint, severity=Severity.WARNING)
