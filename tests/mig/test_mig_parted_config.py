"""Every generated mig-parted config is one mig-parted v0.15.0 accepts, read as strictly as its
parser (tests/mig/mig_parted_v1.py), and the checker refuses what mig-parted refuses."""

from __future__ import annotations

from typing import Any

import pytest
from builders import (
    CATALOG,
    MIG_MODELS,
    check,
    cluster,
    compile_example,
    configmap_data,
    pool,
    valid,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mig_parted_v1 import profile_errors, validate_mig_parted

from gpuconf.compiler.plan.mig_parted import mig_parted_config
from gpuconf.gpus.mig import named_layouts

MIG_EXAMPLES = ["mig", "mig-nvidia", "dra-lab"]
CONFIG = "mig-manager/configmap-gpuconf-mig-parted-config.yaml"


@pytest.mark.parametrize("name", MIG_EXAMPLES)
def test_every_example_mig_parted_config_passes_the_strict_parser(name: str) -> None:
    tree = compile_example(name).rendered[name]
    assert validate_mig_parted(configmap_data(tree, CONFIG, "config.yaml")) == []


@st.composite
def mig_clusters(draw: st.DrawFn) -> dict[str, Any]:
    pools = []
    for i in range(draw(st.integers(1, 3))):
        model = draw(st.sampled_from(MIG_MODELS))
        count = draw(st.integers(1, 8))
        layout = draw(st.sampled_from(named_layouts(CATALOG.models[model])))
        indices = draw(st.none() | st.lists(st.integers(0, count - 1), min_size=1, unique=True))
        sharing: dict[str, Any] = {"strategy": "mig", "layout": layout}
        if indices is not None:
            sharing["indices"] = sorted(indices)
        pools.append(pool(f"p{i}", model, count, [sharing]))
    return cluster(pools, [])


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mig_clusters())
def test_any_valid_mig_cluster_yields_a_config_mig_parted_accepts(document: dict[str, Any]) -> None:
    outcome = check(document)
    if isinstance(outcome, list):
        return
    config = mig_parted_config(outcome.cluster, outcome.inventory)
    if config is not None:
        assert validate_mig_parted(config) == []
        assert {f"gpuconf-{p.name}" for p in outcome.cluster.spec.node_pools} <= set(
            config["mig-configs"]
        )


def test_a_cluster_without_mig_has_no_config() -> None:
    validated = valid(cluster([pool("t", "Tesla-T4", 1)], []))
    assert mig_parted_config(validated.cluster, validated.inventory) is None


GOOD: dict[str, Any] = {
    "version": "v1",
    "mig-configs": {
        "all-disabled": [{"devices": "all", "mig-enabled": False}],
        "x": [
            {
                "device-filter": ["0x233010DE"],
                "devices": [0, 1],
                "mig-enabled": True,
                "mig-devices": {"1g.10gb": 7},
            }
        ],
    },
}


def _with_entry(**entry: Any) -> dict[str, Any]:
    return {"version": "v1", "mig-configs": {"x": [entry]}}


BROKEN = {
    "no version": {"mig-configs": GOOD["mig-configs"]},
    "version v2": {**GOOD, "version": "v2"},
    "unknown top-level key": {**GOOD, "mig-config": {}},
    "no configs": {"version": "v1", "mig-configs": {}},
    "empty config": {"version": "v1", "mig-configs": {"x": []}},
    "unknown entry key": _with_entry(devices="all", **{"mig-enabled": False, "gpus": "all"}),
    "no devices": _with_entry(**{"mig-enabled": False}),
    "no mig-enabled": _with_entry(devices="all"),
    "devices some": _with_entry(devices="some", **{"mig-enabled": False}),
    "devices as strings": _with_entry(devices=["0"], **{"mig-enabled": False}),
    "enabled without devices": _with_entry(devices="all", **{"mig-enabled": True}),
    "disabled with devices": _with_entry(
        devices="all", **{"mig-enabled": False, "mig-devices": {"1g.10gb": 1}}
    ),
    "all counts zero": _with_entry(
        devices="all", **{"mig-enabled": True, "mig-devices": {"1g.10gb": 0}}
    ),
    "bad profile": _with_entry(
        devices="all", **{"mig-enabled": True, "mig-devices": {"1g10gb": 1}}
    ),
    "string enabled": _with_entry(devices="all", **{"mig-enabled": "true"}),
}


def test_the_checker_accepts_a_good_config() -> None:
    assert validate_mig_parted(GOOD) == []


@pytest.mark.parametrize("config", BROKEN.values(), ids=list(BROKEN))
def test_the_checker_refuses_what_mig_parted_refuses(config: dict[str, Any]) -> None:
    assert validate_mig_parted(config) != []


@pytest.mark.parametrize(
    "profile", ["1g.10gb", "1c.2g.20gb", "1g.10gb+me", "1g.24gb-me", "1g.12gb+me,gfx"]
)
def test_profiles_nvidia_names_parse(profile: str) -> None:
    assert profile_errors(profile) == []


@pytest.mark.parametrize(
    "profile", ["", "1g", "1g.10", "g.10gb", "1g.10gb+me-gfx", "1g.10gb+me,me"]
)
def test_malformed_profiles_do_not_parse(profile: str) -> None:
    assert profile_errors(profile) != []
