"""MIG layouts: named layouts resolved per model, and whether a layout fits a GPU."""

from __future__ import annotations

from collections.abc import Mapping

from gpuconf.catalog import GpuModel

DISABLED = "all-disabled"
BALANCED = "all-balanced"


def resolve_layout(layout: str | Mapping[str, int], model: GpuModel) -> Mapping[str, int] | None:
    """{profile: count} for a layout on a model; None means MIG disabled.

    An unknown name or a model without MIG resolves to None; `layout_problems` reports why."""
    if not isinstance(layout, str):
        return dict(sorted(layout.items()))
    if layout == DISABLED or model.mig is None:
        return None
    if layout == BALANCED:
        return dict(sorted(model.mig.balanced.items()))
    profile = layout.removeprefix("all-")
    found = model.mig.profiles.get(profile)
    if not layout.startswith("all-") or found is None:
        return None
    return {profile: found.max}


def named_layouts(model: GpuModel) -> list[str]:
    if model.mig is None:
        return [DISABLED]
    return [DISABLED, BALANCED, *(f"all-{p}" for p in model.mig.profiles)]


def layout_problems(layout: str | Mapping[str, int], model: GpuModel) -> list[tuple[str, str]]:
    """(message, hint) for each reason the layout cannot be applied to the model."""
    if model.mig is None:
        if layout == DISABLED:
            return []
        return [(f"{model.name} does not support MIG", "MIG GPUs: A30, A100, H100, H200")]
    capability = model.mig
    if isinstance(layout, str):
        if layout in named_layouts(model):
            return []
        return [
            (
                f"{model.name} has no MIG layout {layout!r}",
                "named layouts: " + ", ".join(named_layouts(model)),
            )
        ]
    problems: list[tuple[str, str]] = []
    profiles = ", ".join(f"{p} (at most {d.max})" for p, d in capability.profiles.items())
    for profile, count in sorted(layout.items()):
        known = capability.profiles.get(profile)
        if known is None:
            problems.append(
                (f"{model.name} has no MIG profile {profile!r}", f"its profiles: {profiles}")
            )
        elif count > known.max:
            problems.append(
                (
                    f"{model.name} fits at most {known.max} × {profile}, not {count}",
                    f"its profiles: {profiles}",
                )
            )
    if problems:
        return problems
    compute = sum(capability.profiles[p].compute * n for p, n in layout.items())
    memory = sum(capability.profiles[p].memory * n for p, n in layout.items())
    if compute > capability.compute_slices or memory > capability.memory_slices:
        used = " + ".join(f"{n}×{p}" for p, n in sorted(layout.items()))
        problems.append(
            (
                f"{used} does not fit one {model.name}: it needs {compute} of "
                f"{capability.compute_slices} compute and {memory} of {capability.memory_slices} memory slices",
                f"layouts that fit: {_fitting_examples(model)}",
            )
        )
    return problems


def describe(layout: Mapping[str, int]) -> str:
    return " + ".join(f"{n}×{p}" for p, n in sorted(layout.items())) or "no MIG devices"


def _fitting_examples(model: GpuModel) -> str:
    assert model.mig is not None
    balanced = describe(model.mig.balanced)
    singles = ", ".join(f"{d.max}×{p}" for p, d in model.mig.profiles.items())
    return f"all-balanced ({balanced}), or one profile: {singles}"
