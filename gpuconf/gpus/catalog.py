"""The catalog of known GPU models, and a cluster's view of it with the models it declares."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import NamedTuple

from gpuconf.api.gpu_model import GpuModel
from gpuconf.api.validators import validate_catalog
from gpuconf.formats.located_yaml import load_file
from gpuconf.hints import closest, suggestion

_CATALOG_FILE = Path(__file__).with_name("catalog.yaml")


def _fold(name: str) -> str:
    return "".join(ch for ch in name.lower() if ch.isalnum())


class Catalog(NamedTuple):
    models: Mapping[str, GpuModel]
    declared: frozenset[str] = frozenset()
    """Names a cluster file added (spec.gpuModels); the rest are gpuconf's own."""

    @classmethod
    def load(cls) -> Catalog:
        located = load_file(_CATALOG_FILE, "gpuconf/gpus/catalog.yaml")
        parsed = validate_catalog(located.data)
        models = {m.name: m for m in parsed.models}
        if len(models) != len(parsed.models):
            raise ValueError("gpuconf/gpus/catalog.yaml names a model twice")
        return cls(models)

    def extended(self, declared: Iterable[GpuModel]) -> Catalog:
        """This catalog plus models a cluster declares; a declared name never replaces a known one
        (the gpu_models rule reports the clash)."""
        added: dict[str, GpuModel] = {}
        for model in declared:
            if model.name not in self.models:
                added.setdefault(model.name, model)
        if not added:
            return self
        return Catalog({**self.models, **added}, self.declared | added.keys())

    def is_declared(self, model: GpuModel) -> bool:
        return model.name in self.declared

    def builtin(self) -> list[GpuModel]:
        """gpuconf's own models, without those a cluster declared."""
        return [m for name, m in sorted(self.models.items()) if name not in self.declared]

    def names(self) -> list[str]:
        return sorted(self.models)

    def get(self, name: str) -> GpuModel | None:
        return self.models.get(name)

    def by_nvml_name(self, nvml_name: str) -> GpuModel | None:
        for model in self.models.values():
            if model.nvml_name == nvml_name:
                return model
        return None

    def suggest(self, name: str) -> str:
        """A "did you mean" hint for an unknown model name."""
        folded = {_fold(key): key for key in self.models}
        folded.update({_fold(m.nvml_name): key for key, m in self.models.items()})
        wanted = _fold(name)
        containing = [f for f in folded if wanted and wanted in f]
        names = sorted({folded[c] for c in [*closest(wanted, folded, n=3), *containing]})
        return suggestion(names, otherwise="known models: " + ", ".join(sorted(self.models)))
