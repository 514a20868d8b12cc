"""The pydantic base of the fake NVML file that tests and demos hand the node runtime.

Files gpuconf compiles or reads in production (cluster file, catalog, node config) are
records (`api/record.py`), validated by pydantic-core without pydantic; the fake's
cross-field checks are pydantic validators, and only the node runtime under test loads it."""

from __future__ import annotations

import sys
import types


def _without_plugin_discovery() -> None:
    """gpuconf runs no pydantic plugins. Pydantic looks for them when it builds its first
    validator, importing importlib.metadata (email, zipfile, socket) to scan every installed
    distribution; its own PYDANTIC_DISABLE_PLUGINS skips the scan but not the import. A loader
    that finds none spares both."""
    name = "pydantic.plugin._loader"
    if name not in sys.modules:
        loader = types.ModuleType(name, "gpuconf: no pydantic plugins")
        loader.get_plugins = tuple  # type: ignore[attr-defined]
        sys.modules[name] = loader


_without_plugin_discovery()

from pydantic import BaseModel, ConfigDict  # noqa: E402
from pydantic.alias_generators import to_camel  # noqa: E402


class StrictModel(BaseModel):
    """Frozen, strict, camelCase keys, unknown keys rejected; validators built on first use."""

    model_config = ConfigDict(
        frozen=True,
        extra="forbid",
        strict=True,
        alias_generator=to_camel,
        validate_default=False,
        defer_build=True,
    )
