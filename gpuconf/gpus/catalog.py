"""The catalog of known GPU models: NVML name, memory, PCI id, NVLinks and MIG profiles."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from pydantic import Field

from gpuconf.api.base import Model
from gpuconf.formats.located_yaml import load_file
from gpuconf.hints import closest, suggestion

_CATALOG_FILE = Path(__file__).with_name("catalog.yaml")


class MigProfile(Model):
    compute: int = Field(ge=1)
    memory: int = Field(ge=1)
    max: int = Field(ge=1)
    memory_mib: int = Field(alias="memoryMiB", ge=1)


class MigCapability(Model):
    compute_slices: int = Field(alias="computeSlices", ge=1)
    memory_slices: int = Field(alias="memorySlices", ge=1)
    profiles: dict[str, MigProfile]
    balanced: dict[str, int]


class GpuModel(Model):
    name: str = ""
    nvml_name: str = Field(alias="nvmlName")
    memory_mib: int = Field(alias="memoryMiB", ge=1)
    pci_device_id: str = Field(alias="pciDeviceId", pattern=r"^0x[0-9A-F]{4}$")
    architecture: str
    compute_capability: str = Field(alias="computeCapability")
    nvlinks: int = Field(ge=0)
    mig: MigCapability | None = None


class _CatalogFile(Model):
    models: dict[str, GpuModel]


def _fold(name: str) -> str:
    return "".join(ch for ch in name.lower() if ch.isalnum())


@dataclass(frozen=True)
class Catalog:
    models: Mapping[str, GpuModel]

    @classmethod
    def load(cls) -> Catalog:
        located = load_file(_CATALOG_FILE, "gpuconf/gpus/catalog.yaml")
        parsed = _CatalogFile.model_validate(located.data)
        return cls({name: m.model_copy(update={"name": name}) for name, m in parsed.models.items()})

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
