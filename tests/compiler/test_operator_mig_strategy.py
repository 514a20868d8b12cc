"""Beside the GPU Operator, whose GPU Feature Discovery labels every node under the one
migStrategy of its ClusterPolicy (gpu-operator api/nvidia/v1/clusterpolicy_types.go MIGSpec;
controllers/object_controls.go applyMIGConfiguration sets MIG_STRATEGY on GFD's container),
every pool that GFD labels is described, not labelled MIG-INVALID, and the MIG resource names
gpuconf gives the pool are the ones that strategy advertises; where no strategy serves every
pool, validation says so."""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
from builders import (
    EXAMPLES,
    REPO,
    cluster,
    cluster_file,
    errors,
    load_yaml,
    pool,
    rendered,
    run_cli,
    valid,
)

from gpuconf.compiler.plan import plan
from gpuconf.compiler.render import render
from gpuconf.compiler.templating.engine import Templates
from gpuconf.compiler.validate import Validated
from gpuconf.gpus.resource_names import unshared

VALUES = "gpu-operator-values.yaml"
PATCH = "gpu-operator-clusterpolicy-patch.yaml"
CHART_DEFAULT = "single"
"""gpu-operator v26.7.0 deployments/gpu-operator/values.yaml `mig.strategy` (the same at v25.3.4,
v25.10.1, v26.3.3): what the Operator's GFD runs where gpuconf writes no strategy."""
INVALID = "INVALID"

Gpus = Sequence[Mapping[str, int] | None]


def gfd_mig_labels(strategy: str, gpus: Gpus) -> str | frozenset[str]:
    """What GFD (k8s-device-plugin v0.20.0 internal/lm/mig-strategy.go) labels one node's MIG
    devices as under `strategy`: INVALID (newInvalidMigStrategyLabeler), or the resource names it
    writes MIG labels for. `gpus`: per GPU None with MIG disabled, else its MIG devices by
    profile ({} for a MIG-enabled GPU without any)."""
    enabled = [g for g in gpus if g is not None]
    if not gpus or strategy == "none":  # NewResourceLabeler: no devices, or full GPUs only
        return frozenset()
    if strategy == "single":  # newMigStrategySingleLabeler
        if not enabled:
            return frozenset()  # "equivalent to the `none` MIG strategy"
        if any(not g for g in enabled) or len(enabled) != len(gpus):
            return INVALID  # an empty MIG-enabled device; MIG enabled and disabled
        if len({p for g in enabled for p in g}) != 1:
            return INVALID  # "more than one MIG device type present on node"
        return frozenset({"nvidia.com/gpu"})
    # newMigStrategyMixedLabeler: one resource per MIG device name, empty GPUs ignored.
    return frozenset(f"nvidia.com/mig-{p}" for g in enabled for p, n in g.items() if n)


@pytest.mark.parametrize(
    ("gpus", "expected"),
    [
        ([], frozenset()),
        ([None], frozenset()),
        ([None, None], frozenset()),
        ([{"1g.100gb": 1}], frozenset({"nvidia.com/gpu"})),
        ([{"1g.100gb": 1}, {"1g.100gb": 1}], frozenset({"nvidia.com/gpu"})),
        ([{}], INVALID),
        ([{"1g.100gb": 1, "3g.100gb": 1}], INVALID),
        ([{"1g.100gb": 1}, None], INVALID),
        ([{"1g.100gb": 1}, None, {}], INVALID),
    ],
    ids=[
        "no devices returns empty labels",
        "single non-mig device returns non-mig (none) labels",
        "multiple non-mig device returns non-mig (none) labels",
        "single mig-enabled device returns mig labels",
        "multiple mig-enabled devices returns mig labels",
        "empty mig devices returns MIG invalid label",
        "mixed mig config returns MIG invalid label",
        "mixed mig enabled and disabled returns invalid config",
        "enabled, disabled, and empty returns invalid config",
    ],
)
def test_the_gfd_model_answers_every_case_of_gfd_s_single_strategy_test(
    gpus: Gpus, expected: str | frozenset[str]
) -> None:
    """k8s-device-plugin v0.20.0 internal/lm/mig-strategy_test.go TestMigStrategySingleLabels,
    its cases by description (NewMigDevice(1, 2, 100) is a 1g.100gb device, (3, 4, 100) a
    3g.100gb one); TestMigStrategyNoneLabels: none writes no MIG labels whatever the devices."""
    assert gfd_mig_labels("single", gpus) == expected
    assert gfd_mig_labels("none", gpus) == frozenset()


def test_under_mixed_gfd_describes_every_layout_single_cannot() -> None:
    layouts: Gpus = [{"3g.40gb": 2}, {"1g.10gb": 7}, None]
    assert gfd_mig_labels("single", layouts) == INVALID
    expected = frozenset({"nvidia.com/mig-3g.40gb", "nvidia.com/mig-1g.10gb"})
    assert gfd_mig_labels("mixed", layouts) == expected


def _strategy(tree: dict[str, bytes]) -> str:
    values, patch = load_yaml(tree[VALUES]), load_yaml(tree[PATCH])
    assert values.get("mig") == patch["spec"].get("mig")
    return str(values.get("mig", {}).get("strategy", CHART_DEFAULT))


def _gfd_runs(tree: dict[str, bytes]) -> bool:
    return bool(load_yaml(tree[VALUES])["gfd"]["enabled"])


def _nvidia_plugin_strategy(tree: dict[str, bytes], pool_name: str) -> str | None:
    path = f"pools/{pool_name}/configmap-nvidia-device-plugin.yaml"
    if path not in tree:
        return None
    config = load_yaml(load_yaml(tree[path])["data"]["config.yaml"])
    return str(config["flags"]["migStrategy"])


def _check_pools_as_gfd_labels_them(validated: Validated, tree: dict[str, bytes]) -> list[str]:
    """Where the Operator's GFD runs: every MIG node it labels under the ClusterPolicy's strategy
    is described, and the names of the pool's MIG classes are those GFD labels."""
    strategy = _strategy(tree)
    problems = []
    for group in validated.inventory.groups:
        gpus = [g.mig for g in group.gpus]
        labelled = gfd_mig_labels(strategy, gpus)
        where = f"pool {group.pool} under {strategy}"
        if labelled == INVALID:
            problems.append(f"{where}: GFD labels its nodes MIG-INVALID")
            continue
        plugin = _nvidia_plugin_strategy(tree, group.pool)
        if plugin is not None and any(g is not None for g in gpus) and plugin != strategy:
            problems.append(f"{where}: its NVIDIA plugin runs {plugin}")
        for resolved in validated.classes:
            named = unshared(resolved.resource_name)
            mig = resolved.spec.select.mig_profile is not None
            on_pool = plugin is not None and mig and resolved.members_in(group.pool)
            if on_pool and named not in labelled:
                problems.append(f"{where}: class {resolved.name} is {named}, GFD: {labelled}")
    return problems


def _uniform_nvidia() -> dict[str, Any]:
    h100 = [{"strategy": "mig", "layout": "all-1g.10gb"}]
    a30 = [{"strategy": "mig", "layout": "all-2g.12gb"}]
    return cluster(
        [pool("h100", "H100-SXM5-80GB", 8, h100), pool("a30", "A30", 4, a30)],
        [
            {"name": "h100-1g", "select": {"pools": ["h100"], "migProfile": "1g.10gb"}},
            {"name": "a30-2g", "select": {"pools": ["a30"], "migProfile": "2g.12gb"}},
        ],
        plugin="nvidia",
        gpuOperator={"version": "v26.7.0"},
    )


def _mixed_layouts(plugin: str, **spec: Any) -> dict[str, Any]:
    a100 = [
        {"strategy": "mig", "layout": {"3g.40gb": 2}, "indices": [0]},
        {"strategy": "mig", "layout": "all-1g.10gb", "indices": [1]},
    ]
    h100 = [{"strategy": "mig", "layout": "all-1g.10gb"}]
    classes = [
        {"name": "h100-1g", "select": {"pools": ["h100"], "migProfile": "1g.10gb"}},
        {"name": "a100-3g", "select": {"pools": ["a100"], "migProfile": "3g.40gb"}},
    ]
    return cluster(
        [pool("h100", "H100-SXM5-80GB", 8, h100), pool("a100", "A100-SXM4-80GB", 2, a100)],
        classes,
        plugin=plugin,
        gpuOperator={"version": "v26.7.0"},
        **spec,
    )


def _dra(document: dict[str, Any]) -> dict[str, Any]:
    document["spec"]["allocation"] = "dra"
    del document["spec"]["plugin"]
    return document


OPERATOR_CLUSTERS = {
    **{
        f"clusters/{name}": cluster_file(name)
        for name in EXAMPLES
        if "gpuOperator" in cluster_file(name)["spec"]
    },
    "plugin nvidia, one profile per pool": _uniform_nvidia(),
    "plugin nvidia, a pool of mixed layouts": _mixed_layouts("nvidia"),
    "dra, a pool of mixed layouts": _dra(_mixed_layouts("nvidia")),
    "plugin gpuconf, GFD's labels the Operator's": _mixed_layouts(
        "gpuconf", node={"labels": {"owner": "gfd"}}
    ),
}


@pytest.mark.parametrize("name", sorted(OPERATOR_CLUSTERS))
def test_the_operator_s_gfd_describes_every_pool_it_labels_by_the_names_gpuconf_gives(
    name: str,
) -> None:
    document = OPERATOR_CLUSTERS[name]
    tree = rendered(document)
    if not _gfd_runs(tree):
        assert "mig" not in load_yaml(tree[VALUES]), "gpuconf's pools keep their own strategies"
        return
    assert _check_pools_as_gfd_labels_them(valid(document), tree) == []


def test_before_this_the_chart_s_single_labelled_mig_nvidia_s_a100_nodes_invalid() -> None:
    validated = valid(cluster_file("mig-nvidia"))
    a100 = [[g.mig for g in group.gpus] for group in validated.inventory.by_pool("a100")]
    assert all(gfd_mig_labels(CHART_DEFAULT, gpus) == INVALID for gpus in a100)
    assert _strategy(rendered(cluster_file("mig-nvidia"))) == "mixed"


def test_pools_that_all_have_one_profile_per_gpu_keep_single_and_nvidia_gpu() -> None:
    tree = rendered(_uniform_nvidia())
    assert _strategy(tree) == "single"
    assert load_yaml(tree[VALUES])["mig"] == {"strategy": "single"}
    assert _nvidia_plugin_strategy(tree, "h100") == "single"
    assert {c.resource_name for c in valid(_uniform_nvidia()).classes} == {"nvidia.com/gpu"}


def test_a_uniform_pool_beside_a_mixed_one_runs_mixed_with_mig_names() -> None:
    validated = valid(_mixed_layouts("nvidia"))
    names = {c.name: c.resource_name for c in validated.classes}
    assert names == {"h100-1g": "nvidia.com/mig-1g.10gb", "a100-3g": "nvidia.com/mig-3g.40gb"}
    assert _nvidia_plugin_strategy(rendered(_mixed_layouts("nvidia")), "h100") == "mixed"


@pytest.mark.parametrize(
    "name", [n for n in EXAMPLES if cluster_file(n)["spec"].get("plugin") == "nvidia"]
)
def test_without_the_operator_each_pool_runs_the_strategy_its_own_gpus_call_for(name: str) -> None:
    document = cluster_file(name)
    document["spec"].pop("gpuOperator", None)
    for resource_class in document["spec"]["resourceClasses"]:
        # A MIG name said for the Operator's strategy (mig-nvidia's) is the pool's own no more.
        if resource_class.get("resourceName", "").startswith("nvidia.com/mig-"):
            del resource_class["resourceName"]
    validated, tree = valid(document), rendered(document)
    assert VALUES not in tree
    for pool_spec in validated.cluster.spec.node_pools:
        nodes = [
            [g.mig for g in group.gpus] for group in validated.inventory.by_pool(pool_spec.name)
        ]
        # Told by the GFD model, not by gpuconf: none without MIG; single where GFD's single
        # strategy describes every node of the pool; else mixed.
        if all(layout is None for gpus in nodes for layout in gpus):
            expected = "none"
        elif all(gfd_mig_labels("single", gpus) != INVALID for gpus in nodes):
            expected = "single"
        else:
            expected = "mixed"
        strategy = _nvidia_plugin_strategy(tree, pool_spec.name)
        assert strategy in (expected, None), pool_spec.name
        if strategy is not None:
            assert all(gfd_mig_labels(strategy, gpus) != INVALID for gpus in nodes)


def test_where_gpuconf_writes_gfd_s_labels_no_strategy_is_written() -> None:
    tree = rendered(_mixed_layouts("gpuconf"))
    assert not _gfd_runs(tree)
    assert "mig" not in load_yaml(tree[VALUES])


def test_without_mig_pools_the_operator_s_strategy_is_left_alone() -> None:
    document = cluster(
        [pool("t4", "Tesla-T4", 2)], [], plugin="nvidia", gpuOperator={"version": "v26.7.0"}
    )
    assert "mig" not in load_yaml(rendered(document)[VALUES])


def _pinned_to_single(resource_class: dict[str, Any]) -> dict[str, Any]:
    document = _mixed_layouts("nvidia")
    document["spec"]["resourceClasses"][0].update(resource_class)
    return document


@pytest.mark.parametrize("name", ["nvidia.com/gpu", "nvidia.com/gpu.shared"])
def test_a_pool_held_to_single_beside_one_that_needs_mixed_is_refused_naming_both(
    name: str,
) -> None:
    pin: dict[str, Any] = {"resourceName": name}
    if name.endswith(".shared"):
        pin["sharing"] = {"strategy": "time-slicing", "replicas": 2}
    (found,) = errors(_pinned_to_single(pin))
    assert found.path == ("spec", "gpuOperator")
    assert (
        "pool 'h100' needs single (every GPU holds one MIG profile, class 'h100-1g' is "
        f"requested as {name}); pool 'a100' needs mixed (its GPUs are not all MIG with one "
        "profile: GFD's single labels such a node <model>-MIG-INVALID)"
    ) in found.message


def test_a_class_named_as_mixed_names_it_holds_its_pool_to_mixed() -> None:
    document = _uniform_nvidia()
    document["spec"]["resourceClasses"][0]["resourceName"] = "nvidia.com/mig-1g.10gb"
    validated = valid(document)
    names = {c.name: c.resource_name for c in validated.classes}
    assert names == {"h100-1g": "nvidia.com/mig-1g.10gb", "a30-2g": "nvidia.com/mig-2g.12gb"}
    assert _strategy(rendered(document)) == "mixed"


def test_the_refusal_is_a_located_error_and_nothing_is_written(tmp_path: Path) -> None:
    case = REPO / "tests/cases/negative/operator-gfd-one-mig-strategy-serves-no-pool-set"
    result = run_cli("render", str(case / "cluster.yaml"), "-o", str(tmp_path / "out"))
    assert result.code == 1
    assert "cluster.yaml:9:3: spec.gpuOperator: " in result.err
    assert not (tmp_path / "out").exists()


def test_the_operator_s_own_device_plugin_gets_a_warning_when_gpuconf_sets_its_strategy() -> None:
    document = _mixed_layouts("nvidia")
    document["spec"]["gpuOperator"]["devicePlugin"] = True
    (warning,) = [d for d in valid(document).warnings if d.path[-1] == "devicePlugin"]
    assert "mig.strategy to mixed" in warning.message
    # k8s-device-plugin v0.20.0 cmd/nvidia-device-plugin/main.go validateFlags
    assert "using --mig-strategy=mixed is not supported with MPS" in warning.message
    assert "shares no GPU with MPS" in warning.hint


def test_a_class_the_operator_s_strategy_renames_gets_a_warning_until_the_file_names_it() -> None:
    document = _mixed_layouts("nvidia")
    (warning,) = valid(document).warnings
    assert warning.path == ("spec", "resourceClasses", 0, "select")
    assert warning.message == (
        "class 'h100-1g' is advertised as nvidia.com/mig-1g.10gb under migStrategy mixed, where "
        "its pool 'h100' alone would run single and name it nvidia.com/gpu: the GPU Operator's "
        "GFD labels every pool it runs on under one strategy, and pool 'a100' needs mixed: its "
        "GPUs are not all MIG with one profile: GFD's single labels such a node "
        "<model>-MIG-INVALID"
    )
    document["spec"]["resourceClasses"][0]["resourceName"] = "nvidia.com/mig-1g.10gb"
    assert valid(document).warnings == ()


def _mig_name_hint(document: dict[str, Any], class_index: int) -> str:
    document["spec"]["resourceClasses"][class_index]["resourceName"] = "example.com/mig"
    (found,) = [
        e
        for e in errors(document)
        if e.path == ("spec", "resourceClasses", class_index, "resourceName")
        and "does not advertise" in e.message
    ]
    return found.hint


def test_a_misnamed_class_is_told_the_operator_s_gfd_holds_its_pool_to_mixed() -> None:
    """h100's GPUs are all 1g.10gb (single alone): mixed only because the Operator's GFD labels
    a100 under the same strategy."""
    assert _mig_name_hint(_mixed_layouts("nvidia"), 0).endswith(
        "(mixed: the GPU Operator's GFD labels every pool it runs on under one strategy, and "
        "pool 'a100' needs mixed: its GPUs are not all MIG with one profile: GFD's single labels "
        "such a node <model>-MIG-INVALID)"
    )


def test_a_misnamed_class_is_told_its_pool_runs_mixed_for_its_own_layouts() -> None:
    """a100 has several profiles, with the Operator or without it."""
    document = _mixed_layouts("nvidia")
    hint = "(mixed: the pool has whole GPUs or several profiles)"
    assert _mig_name_hint(copy.deepcopy(document), 1).endswith(hint)
    del document["spec"]["gpuOperator"]
    assert _mig_name_hint(document, 1).endswith(hint)


def test_the_plan_writes_the_strategies_validation_resolved() -> None:
    """resolve/class_selection.py resolves the strategies once, with the classes they name; the
    rules and the plan read that one answer (Validated.mig_strategies), never their own."""
    validated = valid(_mixed_layouts("nvidia"))
    assert validated.mig_strategies.operator == "mixed"
    assert _strategy(_render(validated)) == "mixed"
    forced = validated.mig_strategies._replace(operator="single")
    assert _strategy(_render(validated._replace(mig_strategies=forced))) == "single"


def _render(validated: Validated) -> dict[str, bytes]:
    return dict(render(plan(validated, "cluster.yaml"), Templates()))
