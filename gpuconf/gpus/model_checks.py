"""What makes a GPU model's description coherent, for the catalog and for models users declare."""

from __future__ import annotations

from typing import NamedTuple

from gpuconf.api.gpu_model import GpuModel, MigCapability
from gpuconf.diagnostics import KeyPath


class ModelProblem(NamedTuple):
    path: KeyPath
    """Below the model's own key path."""
    message: str
    hint: str = ""


def model_problems(model: GpuModel) -> list[ModelProblem]:
    problems: list[ModelProblem] = []
    if model.integrated:
        if model.pci_device_id is not None:
            problems.append(
                ModelProblem(
                    ("pciDeviceId",),
                    "an integrated GPU is part of its SoC and has no PCI device id",
                    "remove pciDeviceId, or set integrated: false for a PCIe/SXM GPU",
                )
            )
        if model.mig is not None:
            problems.append(
                ModelProblem(
                    ("mig",),
                    "integrated GPUs (Jetson/Tegra) have no MIG",
                    "remove mig; share the GPU with time-slicing instead",
                )
            )
    elif model.mig is not None and model.pci_device_id is None:
        problems.append(
            ModelProblem(
                ("pciDeviceId",),
                f"{model.name} has MIG profiles but no PCI device id",
                'mig-parted selects MIG layouts by it: add pciDeviceId, e.g. "0x2330" '
                "(lspci -nn shows 10de:2330)",
            )
        )
    if model.mig is not None:
        problems += _mig_problems(model, model.mig)
    return problems


def _mig_problems(model: GpuModel, mig: MigCapability) -> list[ModelProblem]:
    problems: list[ModelProblem] = []
    for name, profile in sorted(mig.profiles.items()):
        path = ("mig", "profiles", name)
        named_compute = int(name.split("g.", 1)[0])
        if profile.compute != named_compute:
            problems.append(
                ModelProblem(
                    (*path, "compute"),
                    f"profile {name} takes {named_compute} compute slices by its name, not "
                    f"{profile.compute}",
                    f"set compute: {named_compute}",
                )
            )
        fits = min(mig.compute_slices // profile.compute, mig.memory_slices // profile.memory)
        if profile.max > fits:
            problems.append(
                ModelProblem(
                    (*path, "max"),
                    f"{profile.max}×{name} needs {profile.max * profile.compute} compute and "
                    f"{profile.max * profile.memory} memory slices; the GPU has "
                    f"{mig.compute_slices} and {mig.memory_slices}",
                    f"at most {fits} fit" if fits else f"{name} does not fit the GPU at all",
                )
            )
        if profile.memory_mib > model.memory_mib:
            problems.append(
                ModelProblem(
                    (*path, "memoryMiB"),
                    f"profile {name} has {profile.memory_mib} MiB, more than the GPU's "
                    f"{model.memory_mib} MiB",
                    "copy the figure from `nvidia-smi mig -lgip` (GiB × 1024)",
                )
            )
    compute = memory = 0
    for name, count in sorted(mig.balanced.items()):
        found = mig.profiles.get(name)
        if found is None:
            problems.append(
                ModelProblem(
                    ("mig", "balanced", name),
                    f"the balanced layout names {name}, which is not among the profiles",
                    "profiles: " + ", ".join(sorted(mig.profiles)),
                )
            )
            continue
        compute += found.compute * count
        memory += found.memory * count
    if compute > mig.compute_slices or memory > mig.memory_slices:
        problems.append(
            ModelProblem(
                ("mig", "balanced"),
                f"the balanced layout needs {compute} compute and {memory} memory slices; the GPU "
                f"has {mig.compute_slices} and {mig.memory_slices}",
                "take the layout from mig-parted's all-balanced entry for this GPU",
            )
        )
    return problems
