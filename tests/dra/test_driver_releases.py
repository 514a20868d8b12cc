"""spec.dra.driverVersion decides which attributes selectors may name: every emitted selector is
checked against the attribute set of each supported release of NVIDIA's DRA driver."""

from __future__ import annotations

import re
from typing import Any

import pytest
from builders import (
    CATALOG,
    EXAMPLES,
    cluster_file,
    errors,
    heterogeneous,
    load_yaml,
    rendered,
    valid,
)

from gpuconf.compiler.dra.cel_proof import CelError, selected_devices
from gpuconf.compiler.dra.devices import cluster_devices
from gpuconf.compiler.dra.selector import cel_selector
from gpuconf.diagnostics import format_path
from gpuconf.gpus.dra_attributes import RELEASES, attribute_set

NAMED = re.compile(r"device\.attributes\['([^']+)'\]\.([A-Za-z]+)")
GATES = {"TimeSlicingSettings": True, "MPSSupport": True}
# Classes every release can express on the heterogeneous inventory (h100-a has UUIDs).
EXPRESSIBLE = [
    {"name": "roomy", "select": {"model": "L40S", "memoryAtLeast": "40Gi"}},
    {
        "name": "l4",
        "select": {"model": "L4"},
        "sharing": {"strategy": "time-slicing"},
    },
    {"name": "pinned", "select": {"nodes": ["h100-a"], "indices": [1, 2]}},
    {"name": "slices", "select": {"migProfile": "1g.10gb", "nodes": ["h100-a"], "indices": [7]}},
]


def _cluster(classes: list[dict[str, Any]], release: str) -> dict[str, Any]:
    return heterogeneous(classes, dra={"driverVersion": release, "featureGates": GATES})


def _named(expression: str) -> set[str]:
    return {
        name if domain == "gpu.nvidia.com" else f"{domain}/{name}"
        for domain, name in NAMED.findall(expression)
    }


def _selectors(tree: dict[str, bytes]) -> dict[str, str]:
    return {
        path: load_yaml(data)["spec"]["selectors"][0]["cel"]["expression"]
        for path, data in tree.items()
        if path.startswith("cluster/deviceclass-")
    }


@pytest.mark.parametrize("release", RELEASES)
def test_no_emitted_selector_names_an_attribute_the_release_does_not_publish(release: str) -> None:
    names = attribute_set(release)
    selectors = _selectors(rendered(_cluster(EXPRESSIBLE, release)))
    assert len(selectors) == len(EXPRESSIBLE)
    for path, expression in selectors.items():
        mig = "type == 'mig'" in expression
        assert _named(expression) <= names.published(mig), (path, expression)


def test_the_dra_example_names_only_attributes_its_driver_publishes() -> None:
    document = cluster_file("dra-lab")
    names = attribute_set(document["spec"]["dra"]["driverVersion"])
    for expression in _selectors(rendered(document)).values():
        assert _named(expression) <= names.published("type == 'mig'" in expression)


@pytest.mark.parametrize(
    ("release", "clause"),
    [
        ("v25.3.2", "device.attributes['gpu.nvidia.com'].index in [1, 2]"),
        ("v25.8.0", "device.attributes['gpu.nvidia.com'].uuid in ["),
        ("v25.12.0", "device.attributes['gpu.nvidia.com'].uuid in ["),
        ("v0.4.0", "device.attributes['gpu.nvidia.com'].uuid in ["),
    ],
)
def test_indices_become_uuids_on_releases_without_an_index(release: str, clause: str) -> None:
    validated = valid(_cluster(EXPRESSIBLE, release))
    pinned = validated.classes[2]
    expression = cel_selector(pinned, CATALOG, attribute_set(release)).expression
    assert clause in expression
    devices = cluster_devices(validated.cluster, validated.inventory).devices
    assert selected_devices(expression, devices) == {
        ("h100", "h100-a", "gpu-1"),
        ("h100", "h100-a", "gpu-2"),
    }


def test_mig_indices_become_parent_uuids_without_parent_index() -> None:
    validated = valid(_cluster(EXPRESSIBLE, "v25.12.0"))
    expression = cel_selector(validated.classes[3], CATALOG, attribute_set("v25.12.0")).expression
    assert "parentUUID == 'GPU-00000000-0000-4000-8000-000000000007'" in expression
    assert "parentIndex" not in expression


@pytest.mark.parametrize("release", [r for r in RELEASES if not r.startswith("v25.3")])
def test_indices_on_gpus_without_uuids_are_refused_with_the_alternatives(release: str) -> None:
    found = errors(
        _cluster([{"name": "two", "select": {"model": "L40S", "indices": [0, 1]}}], release)
    )
    assert [format_path(d.path) for d in found] == ["spec.resourceClasses[0].select.indices"]
    assert "publishes no GPU index" in found[0].message
    assert "pool 'l40s'" in found[0].message
    for alternative in ("uuid", "node selector on the pods", "v25.3"):
        assert alternative in found[0].hint


def test_the_same_indices_compile_on_v25_3() -> None:
    valid(_cluster([{"name": "two", "select": {"model": "L40S", "indices": [0, 1]}}], "v25.3.2"))


@pytest.mark.parametrize("release", RELEASES)
def test_a_selector_naming_index_fails_the_proof_where_index_is_gone(release: str) -> None:
    validated = valid(_cluster(EXPRESSIBLE, release))
    devices = cluster_devices(validated.cluster, validated.inventory).devices
    outcome = selected_devices("device.attributes['gpu.nvidia.com'].index == 0", devices)
    if attribute_set(release).has_indices:
        assert isinstance(outcome, frozenset)
    else:
        assert isinstance(outcome, CelError)
        assert "fails on" in outcome.message


@pytest.mark.parametrize(
    ("release", "gated"),
    [("v25.3.2", False), ("v25.8.1", True), ("v25.12.0", True), ("v0.4.0", True)],
)
def test_sharing_with_its_gate_declared_off_is_refused_from_v25_8(
    release: str, gated: bool
) -> None:
    document = _cluster(EXPRESSIBLE[:2], release)
    document["spec"]["dra"]["featureGates"] = {"MPSSupport": True, "TimeSlicingSettings": False}
    if not gated:
        valid(document)
        return
    found = errors(document)
    assert [format_path(d.path) for d in found] == ["spec.resourceClasses[1].sharing.strategy"]
    assert "TimeSlicingSettings" in found[0].message
    assert "featureGates.TimeSlicingSettings=true" in found[0].hint


@pytest.mark.parametrize(("release", "warned"), [("v25.3.2", False), ("v25.12.0", True)])
def test_sharing_with_its_gate_not_declared_is_a_warning(release: str, warned: bool) -> None:
    document = _cluster(EXPRESSIBLE[:2], release)
    del document["spec"]["dra"]["featureGates"]
    warnings = [w for w in valid(document).warnings if "feature gate" in w.message]
    assert [format_path(w.path) for w in warnings] == (
        ["spec.resourceClasses[1].sharing.strategy"] if warned else []
    )


def test_the_default_release_is_v25_12_0() -> None:
    validated = valid(heterogeneous([{"name": "l4", "select": {"model": "L4"}}]))
    assert validated.cluster.spec.dra.driver_version == "v25.12.0"


@pytest.mark.parametrize(
    "example", [e for e in EXAMPLES if cluster_file(e)["spec"].get("allocation") == "dra"]
)
def test_every_dra_example_pins_a_driver_release(example: str) -> None:
    assert cluster_file(example)["spec"]["dra"]["driverVersion"] in RELEASES


# --- selectors on the newer attributes: architecture, compute capability, driver version ----


def _with_drivers(classes: list[dict[str, Any]], release: str) -> dict[str, Any]:
    document = _cluster(classes, release)
    versions = {"h100": "570.124.06", "l40s": "550.54.15", "l4": "535.183.01"}
    for found in document["spec"]["nodePools"]:
        found["driver"] = {"version": versions[found["name"]]}
    return document


NEWER = {
    "architecture": (
        {"architecture": "Ada Lovelace"},
        "device.attributes['gpu.nvidia.com'].architecture == 'Ada Lovelace'",
        {"l40s", "l4"},
    ),
    "compute capability": (
        {"computeCapabilityAtLeast": "9.0"},
        "device.attributes['gpu.nvidia.com'].cudaComputeCapability.compareTo(semver('9.0.0')) >= 0",
        {"h100"},
    ),
    "driver version": (
        {"driverVersionAtLeast": "550.54"},
        "device.attributes['gpu.nvidia.com'].driverVersion.compareTo(semver('550.54.0')) >= 0",
        {"h100", "l40s"},
    ),
}


@pytest.mark.parametrize("release", RELEASES)
@pytest.mark.parametrize("case", NEWER.values(), ids=list(NEWER))
def test_newer_attributes_select_the_same_gpus_in_both_modes(
    release: str, case: tuple[dict[str, Any], str, set[str]]
) -> None:
    select, clause, pools = case
    validated = valid(_with_drivers([{"name": "chosen", "select": select}], release))
    resolved = validated.classes[0]
    assert {m.group.pool for m in resolved.members} == pools
    expression = cel_selector(resolved, CATALOG, attribute_set(release)).expression
    assert clause in expression
    assert _named(expression) <= attribute_set(release).gpu
    devices = cluster_devices(validated.cluster, validated.inventory).devices
    chosen = selected_devices(expression, devices)
    assert isinstance(chosen, frozenset)
    assert {pool for pool, _, _ in chosen} == pools


def test_driver_version_needs_the_pools_to_declare_their_driver() -> None:
    document = _cluster([{"name": "new", "select": {"driverVersionAtLeast": "550.54"}}], "v25.12.0")
    found = errors(document)
    [unknown] = [d for d in found if format_path(d.path).endswith("driverVersionAtLeast")]
    assert "h100, l40s, l4 declare no driver.version" in unknown.message
    assert "declare driver.version" in unknown.hint


def test_only_driverless_pools_the_selector_reaches_leave_the_driver_unknown() -> None:
    document = _cluster(
        [{"name": "new", "select": {"model": "L40S", "driverVersionAtLeast": "550.54"}}],
        "v25.12.0",
    )
    [l40s] = [p for p in document["spec"]["nodePools"] if p["name"] == "l40s"]
    l40s["driver"] = {"version": "550.54.15"}
    # h100 and l4 declare no driver, but hold no L40S: the class is decided.
    valid(document)
    del l40s["driver"]
    found = errors(document)
    [unknown] = [d for d in found if format_path(d.path).endswith("driverVersionAtLeast")]
    assert "pools l40s declare no driver.version" in unknown.message


def test_a_compute_capability_is_written_as_major_dot_minor() -> None:
    found = errors(
        _cluster([{"name": "cc", "select": {"computeCapabilityAtLeast": "9"}}], "v25.12.0")
    )
    assert "is not a compute capability" in found[0].message


@pytest.mark.parametrize(("release", "gate"), [("v25.3.2", False), ("v25.12.0", True)])
def test_the_cluster_readme_says_which_driver_to_install_and_how(release: str, gate: bool) -> None:
    readme = rendered(_cluster(EXPRESSIBLE, release))["README.md"].decode()
    assert f"NVIDIA's DRA driver (`gpu.nvidia.com`) {release}" in readme
    assert "CDI enabled" in readme
    assert ("`featureGates.TimeSlicingSettings=true`" in readme) is gate
