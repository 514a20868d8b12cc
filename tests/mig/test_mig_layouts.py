"""MIG layouts against the catalog: every named layout fits, bad ones say exactly why."""

from __future__ import annotations

import pytest
from builders import CATALOG, MIG_MODELS, WHOLE_MODELS

from gpuconf.gpus.mig import (
    BALANCED,
    DISABLED,
    describe,
    layout_problems,
    mig_strategy,
    named_layouts,
    resolve_layout,
    room_for,
)

# DESIGN.md §3: the most instances of one profile each model takes.
DESIGN_MAX = {
    "A100-40GB": {
        "1g.5gb": 7,
        "1g.10gb": 4,
        "2g.10gb": 3,
        "3g.20gb": 2,
        "4g.20gb": 1,
        "7g.40gb": 1,
    },
    "80GB": {"1g.10gb": 7, "1g.20gb": 4, "2g.20gb": 3, "3g.40gb": 2, "4g.40gb": 1, "7g.80gb": 1},
    "H200": {"1g.18gb": 7, "1g.35gb": 4, "2g.35gb": 3, "3g.71gb": 2, "4g.71gb": 1, "7g.141gb": 1},
    "A30": {"1g.6gb": 4, "2g.12gb": 2, "4g.24gb": 1},
}
FAMILY = {
    "A100-PCIE-40GB": "A100-40GB",
    "A100-SXM4-40GB": "A100-40GB",
    "A100-PCIE-80GB": "80GB",
    "A100-SXM4-80GB": "80GB",
    "H100-SXM5-80GB": "80GB",
    "H100-PCIE-80GB": "80GB",
    "H200-141GB": "H200",
    "A30": "A30",
}


def test_the_catalog_has_a_mig_model_for_every_family_of_the_design() -> None:
    assert set(MIG_MODELS) == set(FAMILY)


@pytest.mark.parametrize("name", MIG_MODELS)
def test_catalog_profiles_match_the_design_table(name: str) -> None:
    mig = CATALOG.models[name].mig
    assert mig is not None
    assert {p: d.max for p, d in mig.profiles.items()} == DESIGN_MAX[FAMILY[name]]


@pytest.mark.parametrize("name", MIG_MODELS)
def test_a_profile_used_max_times_fits_the_slices(name: str) -> None:
    mig = CATALOG.models[name].mig
    assert mig is not None
    for profile, spec in mig.profiles.items():
        assert spec.compute * spec.max <= mig.compute_slices, profile
        assert spec.memory * spec.max <= mig.memory_slices, profile
        assert spec.memory_mib * spec.max <= CATALOG.models[name].memory_mib, profile


@pytest.mark.parametrize("name", MIG_MODELS)
def test_every_named_layout_resolves_and_fits(name: str) -> None:
    model = CATALOG.models[name]
    for layout in named_layouts(model):
        assert layout_problems(layout, model) == [], layout
        resolved = resolve_layout(layout, model)
        assert (resolved is None) == (layout == DISABLED), layout
        if resolved is not None:
            assert layout_problems(resolved, model) == [], layout


@pytest.mark.parametrize("name", MIG_MODELS)
def test_all_profile_layouts_take_the_profile_max_times(name: str) -> None:
    mig = CATALOG.models[name].mig
    assert mig is not None
    for profile, spec in mig.profiles.items():
        assert resolve_layout(f"all-{profile}", CATALOG.models[name]) == {profile: spec.max}


@pytest.mark.parametrize("name", MIG_MODELS)
def test_all_balanced_uses_three_profiles_and_fits(name: str) -> None:
    model = CATALOG.models[name]
    balanced = resolve_layout(BALANCED, model)
    assert balanced is not None
    assert 2 <= len(balanced) <= 3
    assert layout_problems(balanced, model) == []


@pytest.mark.parametrize("name", MIG_MODELS)
def test_more_than_max_instances_is_an_error_naming_the_limit(name: str) -> None:
    model = CATALOG.models[name]
    assert model.mig is not None
    profile, spec = next(iter(model.mig.profiles.items()))
    [problem] = layout_problems({profile: spec.max + 1}, model)
    assert problem.message == f"{name} fits at most {spec.max}×{profile}, not {spec.max + 1}"
    assert problem.profile == profile
    assert f"{profile} (at most {spec.max})" in problem.hint


@pytest.mark.parametrize("name", MIG_MODELS)
def test_an_unknown_profile_is_an_error_listing_the_models_profiles(name: str) -> None:
    model = CATALOG.models[name]
    assert model.mig is not None
    [problem] = layout_problems({"9g.999gb": 1}, model)
    assert problem.message == f"{name} has no MIG profile '9g.999gb'"
    assert problem.profile == "9g.999gb"
    for profile, spec in model.mig.profiles.items():
        assert f"{profile} (at most {spec.max})" in problem.hint


@pytest.mark.parametrize("name", MIG_MODELS)
def test_an_unknown_named_layout_is_an_error_listing_named_layouts(name: str) -> None:
    model = CATALOG.models[name]
    [problem] = layout_problems("all-9g.999gb", model)
    assert problem.message == f"{name} has no MIG layout 'all-9g.999gb'"
    assert "named layouts: " + ", ".join(named_layouts(model)) in problem.hint


@pytest.mark.parametrize("name", MIG_MODELS)
def test_a_slice_overflow_is_an_error_with_what_is_left(name: str) -> None:
    model = CATALOG.models[name]
    mig = model.mig
    assert mig is not None
    largest = max(mig.profiles, key=lambda p: mig.profiles[p].compute)
    smallest = min(mig.profiles, key=lambda p: mig.profiles[p].compute)
    layout = {largest: 1, smallest: 1}
    compute = mig.profiles[largest].compute + mig.profiles[smallest].compute
    memory = mig.profiles[largest].memory + mig.profiles[smallest].memory
    [problem] = layout_problems(layout, model)
    assert problem.message == (
        f"{describe(layout)} does not fit one {name}: it needs {compute} of "
        f"{mig.compute_slices} compute and {memory} of {mig.memory_slices} memory slices"
    )
    assert problem.profile is None
    assert problem.hint.startswith(f"1×{largest} leaves 0 compute and 0 memory slices")
    assert f"drop 1×{smallest}" in problem.hint


def test_an_overflow_hint_says_which_profiles_still_fit() -> None:
    model = CATALOG.models["H100-SXM5-80GB"]
    [problem] = layout_problems({"4g.40gb": 1, "3g.40gb": 1, "1g.10gb": 1}, model)
    assert problem.message == (
        "1×1g.10gb + 1×3g.40gb + 1×4g.40gb does not fit one H100-SXM5-80GB: "
        "it needs 8 of 7 compute and 9 of 8 memory slices"
    )
    assert problem.hint == (
        "1×3g.40gb + 1×4g.40gb leaves 0 compute and 0 memory slices, room for no other "
        "profile; drop 1×1g.10gb, or use all-balanced (2×1g.10gb + 1×2g.20gb + 1×3g.40gb)"
    )
    [problem] = layout_problems({"4g.20gb": 1, "2g.10gb": 2}, CATALOG.models["A100-SXM4-40GB"])
    assert problem.hint.startswith(
        "1×2g.10gb + 1×4g.20gb leaves 1 compute and 2 memory slices, room for 1×1g.5gb, 1×1g.10gb; "
        "drop 1×2g.10gb"
    )


def test_room_for_lists_the_profiles_that_still_fit() -> None:
    mig = CATALOG.models["H100-SXM5-80GB"].mig
    assert mig is not None
    assert room_for({"3g.40gb": 1}, mig) == {
        "1g.10gb": 4,
        "1g.20gb": 2,
        "2g.20gb": 2,
        "3g.40gb": 1,
        "4g.40gb": 1,
    }
    assert room_for({"7g.80gb": 1}, mig) == {}


@pytest.mark.parametrize("name", MIG_MODELS)
def test_an_empty_layout_map_is_an_error(name: str) -> None:
    [problem] = layout_problems({}, CATALOG.models[name])
    assert problem.message == "an empty MIG layout"


@pytest.mark.parametrize("name", WHOLE_MODELS)
def test_all_disabled_works_on_models_without_mig(name: str) -> None:
    model = CATALOG.models[name]
    assert named_layouts(model) == [DISABLED]
    assert layout_problems(DISABLED, model) == []
    assert resolve_layout(DISABLED, model) is None


@pytest.mark.parametrize("name", WHOLE_MODELS)
@pytest.mark.parametrize("layout", [BALANCED, "all-1g.10gb", {"1g.10gb": 1}])
def test_mig_layouts_on_models_without_mig_are_errors(name: str, layout: object) -> None:
    [problem] = layout_problems(layout, CATALOG.models[name])  # type: ignore[arg-type]
    assert problem.message == f"{name} does not support MIG"
    assert (
        problem.hint == "use layout all-disabled or remove sharing; MIG GPUs: A30, A100, H100, H200"
    )


@pytest.mark.parametrize(
    ("layouts", "strategy"),
    [
        pytest.param([None, None], "none", id="no-mig"),
        pytest.param([{"1g.10gb": 7}, {"1g.10gb": 7}], "single", id="one-profile-everywhere"),
        pytest.param([{"1g.10gb": 7}, {"1g.10gb": 3}], "single", id="one-profile-other-counts"),
        pytest.param([{"1g.10gb": 7}, None], "mixed", id="mig-and-whole-gpus"),
        pytest.param([{"1g.10gb": 7}, {"3g.40gb": 2}], "mixed", id="two-profiles-on-two-gpus"),
        pytest.param([{"1g.10gb": 2, "3g.40gb": 1}], "mixed", id="two-profiles-on-one-gpu"),
    ],
)
def test_nvidia_mig_strategy(layouts: list[dict[str, int] | None], strategy: str) -> None:
    assert mig_strategy(layouts) == strategy
