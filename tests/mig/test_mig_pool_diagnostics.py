"""Pool MIG layouts and migProfile selectors through validation: located, exact diagnostics."""

from __future__ import annotations

from builders import cluster, errors, pool, valid

from gpuconf.diagnostics import Diagnostic

H100 = "H100-SXM5-80GB"


def _one(found: list[Diagnostic]) -> Diagnostic:
    assert len(found) == 1, [d.as_text() for d in found]
    return found[0]


def _mig(layout: object, indices: list[int] | None = None) -> dict[str, object]:
    sharing: dict[str, object] = {"strategy": "mig", "layout": layout}
    if indices is not None:
        sharing["indices"] = indices
    return sharing


def test_an_unknown_profile_is_located_at_its_key_and_names_the_gpus() -> None:
    doc = cluster([pool("h", H100, 8, [_mig({"1g.5gb": 7})])], [])
    found = _one(errors(doc))
    assert found.path == ("spec", "nodePools", 0, "sharing", 0, "layout", "1g.5gb")
    assert found.message == "GPUs 0–7 of pool 'h': H100-SXM5-80GB has no MIG profile '1g.5gb'"
    assert "its profiles: 1g.10gb (at most 7), 1g.20gb (at most 4)" in found.hint


def test_a_slice_overflow_is_located_at_the_layout() -> None:
    doc = cluster([pool("h", H100, 2, [_mig({"3g.40gb": 2, "2g.20gb": 1})])], [])
    found = _one(errors(doc))
    assert found.path == ("spec", "nodePools", 0, "sharing", 0, "layout")
    assert found.message == (
        "GPUs 0, 1 of pool 'h': 1×2g.20gb + 2×3g.40gb does not fit one H100-SXM5-80GB: "
        "it needs 8 of 7 compute and 10 of 8 memory slices"
    )
    assert found.hint.startswith("2×3g.40gb leaves 1 compute and 0 memory slices")


def test_a_layout_list_locates_each_entry() -> None:
    doc = cluster(
        [pool("h", H100, 8, [_mig("all-1g.10gb", [0, 1]), _mig({"7g.80gb": 2}, [2])])], []
    )
    found = _one(errors(doc))
    assert found.path == ("spec", "nodePools", 0, "sharing", 1, "layout", "7g.80gb")
    assert found.message == "GPU 2 of pool 'h': H100-SXM5-80GB fits at most 1×7g.80gb, not 2"


def test_a_gpu_in_two_layouts_is_an_error() -> None:
    doc = cluster(
        [pool("h", H100, 8, [_mig("all-1g.10gb", [0, 1]), _mig("all-balanced", [1])])], []
    )
    found = _one(errors(doc))
    assert found.path == ("spec", "nodePools", 0, "sharing", 1, "indices", 0)
    assert found.message == "GPU index 1 already has a MIG layout in sharing[0]"


def test_a_layout_without_indices_next_to_others_is_an_error() -> None:
    doc = cluster([pool("h", H100, 8, [_mig("all-1g.10gb"), _mig("all-balanced", [1])])], [])
    found = _one(errors(doc))
    assert found.path == ("spec", "nodePools", 0, "sharing", 0)
    assert found.message == "pool 'h' lists 2 MIG layouts but this one has no indices"


def test_an_index_beyond_the_pools_gpus_is_an_error() -> None:
    doc = cluster([pool("h", H100, 4, [_mig("all-1g.10gb", [4])])], [])
    found = _one(errors(doc))
    assert found.path == ("spec", "nodePools", 0, "sharing", 0, "indices", 0)
    assert found.message == "GPU index 4 does not exist in pool 'h'"


def test_a_mig_layout_on_a_model_without_mig_is_an_error() -> None:
    doc = cluster([pool("t", "Tesla-T4", 2, [_mig("all-balanced")])], [])
    found = _one(errors(doc))
    assert found.path == ("spec", "nodePools", 0, "sharing", 0, "layout")
    assert found.message == "GPUs 0, 1 of pool 't': Tesla-T4 does not support MIG"


def test_all_disabled_on_a_model_without_mig_is_valid() -> None:
    doc = cluster(
        [pool("t", "Tesla-T4", 2, [_mig("all-disabled")])],
        [{"name": "t4", "select": {"model": "Tesla-T4"}}],
    )
    validated = valid(doc)
    assert all(g.mig is None for grp in validated.inventory.groups for g in grp.gpus)


def test_a_class_selecting_an_undeclared_profile_lists_the_declared_ones() -> None:
    doc = cluster(
        [
            pool(
                "h",
                H100,
                8,
                [_mig("all-1g.10gb", [0, 1, 2, 3]), _mig({"3g.40gb": 2}, [4, 5, 6, 7])],
            )
        ],
        [
            {"name": "small", "select": {"migProfile": "1g.10gb"}},
            {"name": "half", "select": {"migProfile": "3g.40gb"}},
            {"name": "oops", "select": {"migProfile": "2g.20gb"}},
        ],
    )
    found = _one(errors(doc))
    assert found.path == ("spec", "resourceClasses", 2, "select", "migProfile")
    assert found.message == "no GPU has MIG profile '2g.20gb' in its layout"
    assert found.hint == "declared profiles: 1g.10gb (in h), 3g.40gb (in h)"


def test_a_class_selecting_a_profile_without_any_mig_pool_says_how_to_declare_one() -> None:
    doc = cluster([pool("h", H100, 8, None)], [{"name": "s", "select": {"migProfile": "1g.10gb"}}])
    found = _one(errors(doc))
    assert found.message == "no GPU has MIG profile '1g.10gb' in its layout"
    assert found.hint.startswith("no pool declares a MIG layout")


def test_mig_classes_count_mig_devices() -> None:
    doc = cluster(
        [
            pool(
                "h",
                H100,
                8,
                [_mig("all-1g.10gb", [0, 1, 2, 3]), _mig({"3g.40gb": 2}, [4, 5, 6, 7])],
            )
        ],
        [
            {"name": "small", "select": {"migProfile": "1g.10gb"}},
            {"name": "half", "select": {"migProfile": "3g.40gb"}},
        ],
    )
    validated = valid(doc)
    assert [c.devices for c in validated.classes] == [28, 8]
    assert [c.resource_name for c in validated.classes] == ["gpuconf.dev/small", "gpuconf.dev/half"]
