"""Set aside what a failed shape check touches, so the rules can still look at the rest.

Without this, a file with one malformed class shows its rule errors only once that class is
fixed. Here an item of spec.nodePools, spec.gpuModels, spec.resourceClasses or spec.quotas
holding any shape error is set aside whole, an unknown key included (dropping only the typo
in `overcomit: true` would leave overcommit false, and the quota check would report what the
user meant to allow). The rules then run on the items left, which keep the indices and
positions they have in the file (`Located.without`). An error anywhere else, a pool, model or
class whose name cannot be read, or a rest that still fails (a list left empty) sets nothing
aside: the file gets its shape errors alone.

The rules never report what only the setting aside caused; they consult `SetAside`. Without
some pools or GPU models, every check over the inventory (capacity, selection, sharing) would
judge part of it, so those rules do not run, and the document's rules take a set-aside model's
name as known. Without some classes, a quota naming one is not "unknown", and GPUs no kept
class selects are not "in no class". Without some quotas, a Kueue queue is not told that no
quota joins it or holds a class it limits, nor that a lendingLimit is above what it holds.
"""

from __future__ import annotations

from typing import NamedTuple

from gpuconf.api.core_validator import ValidationError
from gpuconf.formats.located_yaml import Located

_ITEMS = ("nodePools", "gpuModels", "resourceClasses", "quotas")
_NAMED = ("nodePools", "gpuModels", "resourceClasses")


class SetAside(NamedTuple):
    """The names of the items set aside, for the rules whose findings their absence would change."""

    node_pools: frozenset[str] = frozenset()
    gpu_models: frozenset[str] = frozenset()
    resource_classes: frozenset[str] = frozenset()
    quotas: bool = False
    """Some quota was set aside: what a queue or class holds may be more than the rest says."""

    @property
    def whole_inventory(self) -> bool:
        """Every pool and every declared model is there, so inventory rules judge all of it."""
        return not (self.node_pools or self.gpu_models)


NOTHING = SetAside()


def set_aside(error: ValidationError, located: Located) -> tuple[Located, SetAside] | None:
    """The document without the items `error` touches, and their names; None where an error
    lies outside such items or an item has no name to recognise references to it by."""
    touched: dict[str, set[int]] = {}
    for detail in error.errors(include_url=False):
        loc = detail["loc"]
        if len(loc) < 3 or loc[0] != "spec" or loc[1] not in _ITEMS or not isinstance(loc[2], int):
            return None
        touched.setdefault(str(loc[1]), set()).add(loc[2])
    names: dict[str, frozenset[str]] = {}
    for key in _NAMED:
        items = [located.value_at(("spec", key, i)) for i in touched.get(key, ())]
        if not all(isinstance(item, dict) and isinstance(item.get("name"), str) for item in items):
            return None
        names[key] = frozenset(item["name"] for item in items)
    rest = located.without(("spec", key, i) for key, indices in touched.items() for i in indices)
    return rest, SetAside(
        names["nodePools"], names["gpuModels"], names["resourceClasses"], "quotas" in touched
    )
