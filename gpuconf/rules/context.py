"""What every rule may look at."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

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

    def written(self, path: KeyPath) -> Any:
        """The raw value at path in the document (None when absent): tells defaults from choices."""
        node: Any = self.located.data
        for part in path:
            if isinstance(node, dict) and isinstance(part, str):
                node = node.get(part)
            elif isinstance(node, list) and isinstance(part, int) and part < len(node):
                node = node[part]
            else:
                return None
        return node
