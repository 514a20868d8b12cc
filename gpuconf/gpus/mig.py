"""MIG layouts: named layouts resolved per model, whether a layout fits a GPU, and the strategy
NVIDIA's plugin needs for a set of GPUs."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import NamedTuple

from gpuconf.api.gpu_model import GpuModel, MigCapability
from gpuconf.hints import did_you_mean

DISABLED = "all-disabled"
BALANCED = "all-balanced"
MIG_MODELS_HINT = "MIG GPUs: A30, A100, H100, H200"

Layout = str | Mapping[str, int]


class LayoutProblem(NamedTuple):
    message: str
    hint: str
    profile: str | None = None
    """The profile key the problem is about; None when it is about the whole layout."""


def resolve_layout(layout: Layout, model: GpuModel) -> Mapping[str, int] | None:
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


def describe(layout: Mapping[str, int]) -> str:
    return " + ".join(f"{n}×{p}" for p, n in sorted(layout.items())) or "no MIG devices"


def layout_problems(layout: Layout, model: GpuModel) -> list[LayoutProblem]:
    """Each reason the layout cannot be applied to one GPU of the model."""
    if model.mig is None:
        if layout == DISABLED:
            return []
        return [
            LayoutProblem(
                f"{model.name} does not support MIG",
                f"use layout {DISABLED} or remove sharing; {MIG_MODELS_HINT}",
            )
        ]
    if isinstance(layout, str):
        if layout in named_layouts(model):
            return []
        return [
            LayoutProblem(
                f"{model.name} has no MIG layout {layout!r}",
                (did_you_mean(layout, named_layouts(model)) + " named layouts: ").lstrip()
                + ", ".join(named_layouts(model))
                + ", or a {profile: count} map",
            )
        ]
    return _map_problems(layout, model.name, model.mig)


def _map_problems(layout: Mapping[str, int], name: str, mig: MigCapability) -> list[LayoutProblem]:
    if not layout:
        return [LayoutProblem("an empty MIG layout", f"use {DISABLED} to turn MIG off")]
    problems: list[LayoutProblem] = []
    profiles = ", ".join(f"{p} (at most {d.max})" for p, d in mig.profiles.items())
    for profile, count in sorted(layout.items()):
        known = mig.profiles.get(profile)
        if known is None:
            problems.append(
                LayoutProblem(
                    f"{name} has no MIG profile {profile!r}",
                    (did_you_mean(profile, mig.profiles) + f" its profiles: {profiles}").lstrip(),
                    profile,
                )
            )
        elif count > known.max:
            problems.append(
                LayoutProblem(
                    f"{name} fits at most {known.max}×{profile}, not {count}",
                    f"its profiles: {profiles}",
                    profile,
                )
            )
    if problems:
        return problems
    compute, memory = _slices(layout, mig)
    if compute <= mig.compute_slices and memory <= mig.memory_slices:
        return []
    return [
        LayoutProblem(
            f"{describe(layout)} does not fit one {name}: it needs {compute} of "
            f"{mig.compute_slices} compute and {memory} of {mig.memory_slices} memory slices",
            _overflow_hint(layout, mig),
        )
    ]


def _slices(layout: Mapping[str, int], mig: MigCapability) -> tuple[int, int]:
    compute = sum(mig.profiles[p].compute * n for p, n in layout.items())
    memory = sum(mig.profiles[p].memory * n for p, n in layout.items())
    return compute, memory


def room_for(layout: Mapping[str, int], mig: MigCapability) -> dict[str, int]:
    """For each profile, how many more instances fit next to the layout (profiles with room only)."""
    compute, memory = _slices(layout, mig)
    left_compute, left_memory = mig.compute_slices - compute, mig.memory_slices - memory
    room: dict[str, int] = {}
    for profile, spec in mig.profiles.items():
        more = min(
            spec.max - layout.get(profile, 0),
            left_compute // spec.compute,
            left_memory // spec.memory,
        )
        if more > 0:
            room[profile] = more
    return room


def _overflow_hint(layout: Mapping[str, int], mig: MigCapability) -> str:
    """Keep the largest profiles that fit, then say what is left and what it still has room for."""
    kept: dict[str, int] = {}
    dropped: dict[str, int] = {}
    largest_first = sorted(
        layout, key=lambda p: (-mig.profiles[p].compute, -mig.profiles[p].memory, p)
    )
    for profile in largest_first:
        for _ in range(layout[profile]):
            trial = {**kept, profile: kept.get(profile, 0) + 1}
            compute, memory = _slices(trial, mig)
            if compute <= mig.compute_slices and memory <= mig.memory_slices:
                kept = trial
            else:
                dropped[profile] = dropped.get(profile, 0) + 1
    compute, memory = _slices(kept, mig)
    room = room_for(kept, mig)
    fits = ", ".join(f"{n}×{p}" for p, n in room.items()) if room else "no other profile"
    balanced = describe(mig.balanced)
    return (
        f"{describe(kept)} leaves {mig.compute_slices - compute} compute and "
        f"{mig.memory_slices - memory} memory slices, room for {fits}; drop {describe(dropped)}, "
        f"or use all-balanced ({balanced})"
    )


def mig_strategy(layouts: Iterable[Mapping[str, int] | None]) -> str:
    """NVIDIA's migStrategy for the GPUs of one node pool, given each GPU's layout.

    `single` only when every GPU is MIG-enabled with the same one profile (the plugin then
    advertises those MIG devices as nvidia.com/gpu); `mixed` when any GPU differs or is whole;
    `none` without MIG."""
    seen = list(layouts)
    partitioned = [tuple(sorted(layout)) for layout in seen if layout]
    if not partitioned:
        return "none"
    shapes = set(partitioned)
    if len(partitioned) == len(seen) and len(shapes) == 1 and len(next(iter(shapes))) == 1:
        return "single"
    return "mixed"


def strategies_labelling(layouts: Iterable[Mapping[str, int] | None]) -> frozenset[str]:
    """The migStrategies under which NVIDIA's GFD describes these GPUs' MIG devices
    (k8s-device-plugin v0.20.0 internal/lm/mig-strategy.go). `mixed` always: one
    nvidia.com/mig-<profile>.* set per profile present (newMigStrategyMixedLabeler). `single`
    only where every GPU is MIG with the same one profile: MIG beside whole GPUs, or more than one
    profile, gets <model>-MIG-INVALID and count 0 (newMigStrategySingleLabeler). Not `none`,
    which labels MIG GPUs as whole ones. Asked only of GPUs with MIG (resolve/mig_strategies.py
    asks of no pool without)."""
    strategy = mig_strategy(layouts)
    return frozenset({"single", "mixed"}) if strategy == "single" else frozenset({"mixed"})
