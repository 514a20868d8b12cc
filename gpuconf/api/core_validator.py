"""pydantic-core's compiled validator, loaded without the Python package around it.

`import pydantic_core` runs the package's `__init__`, which imports its 4,000-line
`core_schema` module and typing_extensions: about 100 M instructions, more than a third of
what `gpuconf validate` spends beyond Python's own start. gpuconf needs only the compiled
`SchemaValidator` and `ValidationError` (its schemas are frozen dicts, `api/frozen/`), so
this loads the extension module alone, under its own name. A later `import pydantic_core`
(pydantic, the node's fake NVML file) finds it in `sys.modules` and reuses it: the classes
are the same objects either way, and the package gets the `_pydantic_core` attribute an
ordinary import would have given it.
"""

from __future__ import annotations

import sys
from importlib.machinery import (
    EXTENSION_SUFFIXES,
    ExtensionFileLoader,
    FileFinder,
    ModuleSpec,
    PathFinder,
)
from importlib.util import module_from_spec
from types import ModuleType
from typing import TYPE_CHECKING, Any

PACKAGE = "pydantic_core"
EXTENSION = f"{PACKAGE}._pydantic_core"


def _extension_spec() -> ModuleSpec | None:
    package = PathFinder.find_spec(PACKAGE)
    if package is None or not package.submodule_search_locations:
        return None
    for folder in package.submodule_search_locations:
        spec = FileFinder(folder, (ExtensionFileLoader, EXTENSION_SUFFIXES)).find_spec(EXTENSION)
        if spec is not None:
            return spec
    return None


def _extension() -> ModuleType:
    loaded = sys.modules.get(EXTENSION)
    if loaded is not None:
        return loaded
    spec = _extension_spec()
    if spec is None or spec.loader is None:
        # Packaged some other way (a zip, a frozen build): take the ordinary road.
        import pydantic_core._pydantic_core as extension

        return extension
    module = module_from_spec(spec)
    sys.modules[EXTENSION] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[EXTENSION]
        raise
    if PACKAGE not in sys.modules:
        sys.meta_path.insert(0, _PackageFinder())
    return module


class _PackageFinder:
    """Finds the package as the rest of `sys.meta_path` would and hands it the extension module
    before its `__init__` runs; it leaves `sys.meta_path` once the package is imported (a mere
    `importlib.util.find_spec` probe imports nothing). A meta path finder needs only
    `find_spec`: subclassing importlib.abc's would import importlib.resources."""

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> ModuleSpec | None:
        if name != PACKAGE:
            return None
        spec = PathFinder.find_spec(name, path, target)
        if spec is None or spec.loader is None:
            return spec
        run_init = spec.loader.exec_module

        def exec_module(package: ModuleType) -> None:
            if self in sys.meta_path:
                sys.meta_path.remove(self)
            package._pydantic_core = sys.modules[EXTENSION]  # type: ignore[attr-defined]
            run_init(package)

        spec.loader.exec_module = exec_module  # type: ignore[method-assign,assignment]
        return spec


if TYPE_CHECKING:
    from pydantic_core import SchemaValidator, ValidationError
else:
    _loaded = _extension()
    SchemaValidator = _loaded.SchemaValidator
    ValidationError = _loaded.ValidationError

__all__ = ["SchemaValidator", "ValidationError"]
