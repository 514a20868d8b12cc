"""What every rule may look at."""

from __future__ import annotations

from dataclasses import dataclass

from gpuconf.catalog import Catalog
from gpuconf.classes import ResolvedClass
from gpuconf.diagnostics import Diagnostic, KeyPath, Severity
from gpuconf.inventory import Inventory
from gpuconf.load import Located
from gpuconf.model import Cluster

SPEC = ("spec",)


def pool_path(index: int, *rest: str | int) -> KeyPath:
    return ("spec", "nodePools", index, *rest)


def class_path(index: int, *rest: str | int) -> KeyPath:
    return ("spec", "resourceClasses", index, *rest)


def quota_path(index: int, *rest: str | int) -> KeyPath:
    return ("spec", "quotas", index, *rest)


@dataclass(frozen=True)
class RuleContext:
    cluster: Cluster
    located: Located
    catalog: Catalog
    inventory: Inventory
    classes: tuple[ResolvedClass, ...]

    def error(self, path: KeyPath, message: str, hint: str = "") -> Diagnostic:
        return self.located.diagnostic(path, message, hint)

    def warning(self, path: KeyPath, message: str, hint: str = "") -> Diagnostic:
        return self.located.diagnostic(path, message, hint, severity=Severity.WARNING)
