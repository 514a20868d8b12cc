"""The fleet example in both modes: what DRA cannot express is reported; made expressible, it renders."""

from __future__ import annotations

from typing import Any

import kubernetes_validate
import pytest
from builders import as_dra, check, cluster_file, errors, rendered
from ruamel.yaml import YAML

from gpuconf.compiler.validate import Validated
from gpuconf.diagnostics import format_path


def _fleet_as_dra(release: str = "v25.3.2") -> dict[str, Any]:
    """The fleet on a DRA driver release with both sharing gates on."""
    fleet = as_dra(cluster_file("fleet"))
    gates = {"TimeSlicingSettings": True, "MPSSupport": True}
    fleet["spec"]["dra"] = {"driverVersion": release, "featureGates": gates}
    return fleet


def _expressible_fleet() -> dict[str, Any]:
    """The fleet with UUIDs on every A100 node, big-memory by model, overcommitted shared classes."""
    fleet = _fleet_as_dra()
    spec = fleet["spec"]
    [a100] = [p for p in spec["nodePools"] if p["name"] == "a100"]
    for n, node in enumerate(a100["nodes"]):
        for gpu in node["gpus"]:
            gpu["uuid"] = f"GPU-0a1b2c3d-0000-4000-8000-000000000{n + 1}{gpu['index']:02d}"
    for resource_class in spec["resourceClasses"]:
        if resource_class["name"] == "big-memory":
            resource_class["select"] = {"model": "H100-SXM5-80GB", "indices": [0, 1, 2, 3, 4, 5]}
        if resource_class.get("sharing", {}).get("strategy") in ("time-slicing", "mps"):
            resource_class["overcommit"] = True
    return fleet


def test_fleet_renders_in_device_plugin_mode() -> None:
    assert isinstance(check(cluster_file("fleet")), Validated)


def test_fleet_in_dra_mode_names_what_dra_cannot_express() -> None:
    found = errors(_fleet_as_dra())
    unexpressible = sorted(format_path(d.path) for d in found if "DRA cannot express" in d.message)
    assert unexpressible == [
        "spec.resourceClasses[3].select.nodes",  # a100-train: nodes 03 and 04 have no UUIDs
        "spec.resourceClasses[3].select.pools",
    ]  # big-memory's pools: [h100] is expressed by model: no other pool has H100s
    overcommitted = sorted(d.message.split("'")[1] for d in found if "under DRA" in d.message)
    assert overcommitted == ["a100-mps", "h100-dev", "l4-infer", "t4-shared"]
    assert len(found) == 6


def test_on_a_driver_without_gpu_indices_the_fleets_index_selectors_are_refused() -> None:
    found = errors(_fleet_as_dra("v25.12.0"))
    by_index = sorted(format_path(d.path) for d in found if "publishes no GPU index" in d.message)
    # t4-shared and t4-whole split the T4s by index, big-memory and h100-dev the H100s.
    assert by_index == [
        "spec.resourceClasses[0].select.indices",
        "spec.resourceClasses[1].select.indices",
        "spec.resourceClasses[4].select.indices",
        "spec.resourceClasses[5].select.indices",
    ]
    assert all("v25.3" in d.hint and "uuid" in d.hint for d in found if "GPU index" in d.message)


def test_expressible_fleet_renders_dra_manifests_kubernetes_1_33_accepts() -> None:
    tree = rendered(_expressible_fleet())
    yaml = YAML(typ="safe")
    kinds = set()
    for path, data in tree.items():
        if not path.endswith(".yaml") or path.startswith("host/") or path == "kustomization.yaml":
            continue
        obj = yaml.load(data)
        kinds.add(obj["kind"])
        if obj["apiVersion"].startswith("monitoring.coreos.com/"):
            continue  # Prometheus Operator kinds: checked against their CRDs in tests/compiler

        try:
            kubernetes_validate.validate(obj, "1.33.0", strict=True)
        except kubernetes_validate.ValidationError as error:  # pragma: no cover - shown on failure
            pytest.fail(f"{path}: {error}")
    assert {"DeviceClass", "ResourceClaimTemplate", "ResourceQuota", "RuntimeClass"} <= kinds
    daemonsets = sorted(p for p in tree if "daemonset" in p)
    assert all("driver" in p or "gpuconf-setup" in p or "dcgm-exporter" in p for p in daemonsets), (
        daemonsets
    )
    a100_mps = yaml.load(tree["cluster/deviceclass-a100-mps.yaml"])
    assert a100_mps["apiVersion"] == "resource.k8s.io/v1beta2"
    assert "parentUUID" not in a100_mps["spec"]["selectors"][0]["cel"]["expression"]
    assert "uuid in [" in a100_mps["spec"]["selectors"][0]["cel"]["expression"]
