"""DRA output: DeviceClasses, claim templates and quotas that the target Kubernetes accepts, no plugin DaemonSets."""

from __future__ import annotations

from typing import Any

import kubernetes_validate
import pytest
from builders import cluster_file, errors, heterogeneous, of_a_crd, rendered
from ruamel.yaml import YAML

from gpuconf.diagnostics import format_path

API = {
    "1.32": "resource.k8s.io/v1beta1",
    "1.33": "resource.k8s.io/v1beta2",
    "1.34": "resource.k8s.io/v1",
}


def _manifests(tree: dict[str, bytes]) -> dict[str, Any]:
    yaml = YAML(typ="safe")
    return {
        path: yaml.load(data)
        for path, data in tree.items()
        if path.endswith(".yaml") and not path.startswith("host/")
    }


def _lab_classes() -> list[dict[str, Any]]:
    return [
        {"name": "big-memory", "select": {"memoryAtLeast": "40Gi"}},
        {
            "name": "l4-ts",
            "select": {"model": "L4"},
            "sharing": {"strategy": "time-slicing"},
        },
        {
            "name": "l40s-mps",
            "select": {"model": "L40S", "memoryAtLeast": "80Gi"},
            "sharing": {"strategy": "mps", "memoryLimitMiB": 23034, "activeThreadPercentage": 50},
        },
        {
            "name": "mig",
            "select": {"migProfile": "1g.10gb"},
            "sharing": {"strategy": "time-slicing"},
        },
    ]


def _hetero(version: str) -> dict[str, Any]:
    classes = [c for c in _lab_classes() if c["name"] != "l40s-mps"]
    classes[0] = {
        "name": "big-memory",
        "select": {"memoryAtLeast": "40Gi", "model": "H100-SXM5-80GB"},
    }
    classes.append(
        {
            "name": "l40s-mps",
            "select": {"model": "L40S"},
            "sharing": {"strategy": "mps", "memoryLimitMiB": 23034, "activeThreadPercentage": 50},
        }
    )
    quotas = [
        {"namespace": "team-a", "classes": {"big-memory": 6, "l4-ts": 2, "mig": 14, "l40s-mps": 8}}
    ]
    gates = {"TimeSlicingSettings": True, "MPSSupport": True}
    cluster = heterogeneous(classes, quotas=quotas, dra={"featureGates": gates})
    cluster["spec"]["kubernetes"]["version"] = version
    if version in ("1.32", "1.33"):
        cluster["spec"]["kubernetes"]["featureGates"] = {"DynamicResourceAllocation": True}
    return cluster


@pytest.mark.parametrize("version", sorted(API))
def test_every_manifest_passes_the_target_kubernetes_schema(version: str) -> None:
    for path, obj in _manifests(rendered(_hetero(version))).items():
        # The Prometheus Operator's kinds pass its CRDs' schemas (tests/compiler/test_monitoring.py).
        if obj.get("kind") == "Kustomization" or of_a_crd(obj):
            continue
        try:
            kubernetes_validate.validate(obj, f"{version}.0", strict=True)
        except kubernetes_validate.ValidationError as error:  # pragma: no cover - shown on failure
            pytest.fail(f"{path}: {error}")


@pytest.mark.parametrize("version", sorted(API))
def test_device_classes_and_claim_templates_use_the_versions_api(version: str) -> None:
    objects = _manifests(rendered(_hetero(version)))
    kinds = {(o["kind"], o["apiVersion"]) for o in objects.values()}
    assert ("DeviceClass", API[version]) in kinds
    assert ("ResourceClaimTemplate", API[version]) in kinds
    request = objects["claims/team-a/mig.yaml"]["spec"]["spec"]["devices"]["requests"][0]
    if version == "1.32":
        assert request == {"name": "gpu", "deviceClassName": "mig"}
    else:
        assert request == {"name": "gpu", "exactly": {"deviceClassName": "mig"}}


@pytest.mark.parametrize("version", ["1.32", "1.33"])
def test_dra_before_1_34_is_refused_without_its_feature_gate_and_renders_with_it(
    version: str,
) -> None:
    cluster = _hetero(version)
    del cluster["spec"]["kubernetes"]["featureGates"]
    [found] = errors(cluster)
    assert format_path(found.path) == "spec.allocation"
    assert found.message == (
        f"allocation: dra needs the feature gate DynamicResourceAllocation (beta, off by default "
        f"in {version}) and the API {API[version]}, both off by default"
    )
    assert f"--runtime-config={API[version]}=true" in found.hint
    cluster["spec"]["kubernetes"]["featureGates"] = {"DynamicResourceAllocation": False}
    [found] = errors(cluster)
    assert format_path(found.path) == "spec.kubernetes.featureGates.DynamicResourceAllocation"
    assert "declared off" in found.message
    cluster["spec"]["kubernetes"]["featureGates"] = {"DynamicResourceAllocation": True}
    assert "cluster/deviceclass-mig.yaml" in rendered(cluster)


def test_sharing_becomes_the_drivers_opaque_config() -> None:
    objects = _manifests(rendered(_hetero("1.34")))

    def parameters(name: str) -> Any:
        [config] = objects[f"cluster/deviceclass-{name}.yaml"]["spec"]["config"]
        assert config["opaque"]["driver"] == "gpu.nvidia.com"
        return config["opaque"]["parameters"]

    assert parameters("l4-ts") == {
        "apiVersion": "resource.nvidia.com/v1beta1",
        "kind": "GpuConfig",
        "sharing": {"strategy": "TimeSlicing", "timeSlicingConfig": {"interval": "Default"}},
    }
    assert parameters("l40s-mps")["sharing"] == {
        "strategy": "MPS",
        "mpsConfig": {
            "defaultActiveThreadPercentage": 50,
            "defaultPinnedDeviceMemoryLimit": "23034Mi",
        },
    }
    assert parameters("mig") == {
        "apiVersion": "resource.nvidia.com/v1beta1",
        "kind": "MigDeviceConfig",
        "sharing": {"strategy": "TimeSlicing"},
    }
    assert "config" not in objects["cluster/deviceclass-big-memory.yaml"]["spec"]


def test_quota_counts_devices_of_each_device_class() -> None:
    objects = _manifests(rendered(_hetero("1.34")))
    assert objects["quotas/team-a.yaml"]["spec"]["hard"] == {
        "big-memory.deviceclass.resource.k8s.io/devices": "6",
        "l4-ts.deviceclass.resource.k8s.io/devices": "2",
        "l40s-mps.deviceclass.resource.k8s.io/devices": "8",
        "mig.deviceclass.resource.k8s.io/devices": "14",
    }


def test_no_device_plugin_daemonsets_but_setup_and_driver_stay() -> None:
    cluster = _hetero("1.34")
    cluster["spec"]["nodePools"][0]["driver"] = {"version": "560.35.03", "install": True}
    tree = rendered(cluster)
    objects = _manifests(tree)
    daemonsets = [o["metadata"]["name"] for o in objects.values() if o.get("kind") == "DaemonSet"]
    pools = [pool["name"] for pool in cluster["spec"]["nodePools"]]
    # NVIDIA's DRA driver serves the GPUs; dcgm-exporter only watches them.
    assert sorted(daemonsets) == sorted(
        [
            "nvidia-driver-h100",
            *(f"gpuconf-setup-{pool}" for pool in pools),
            *(f"dcgm-exporter-{pool}" for pool in pools),
        ]
    )
    assert "cluster/runtimeclass-nvidia.yaml" in tree


def test_quota_beyond_devices_is_an_error_because_claims_take_whole_devices() -> None:
    cluster = _hetero("1.34")
    cluster["spec"]["quotas"][0]["classes"]["l4-ts"] = 16
    [found] = errors(cluster)
    assert format_path(found.path) == "spec.resourceClasses[1].name"
    assert "capacity of 4 (4 devices; under DRA each claim takes whole devices" in found.message


def test_dra_lab_example_renders_valid_manifests_for_kubernetes_1_34() -> None:
    for path, obj in _manifests(rendered(cluster_file("dra-lab"))).items():
        # Kueue's objects are checked against its CRDs (tests/compiler/test_kueue.py; its
        # Configuration, not an object, only against the expected keys there), the Prometheus
        # Operator's against theirs (tests/compiler/test_kubernetes_schemas.py).
        if obj.get("kind") == "Kustomization" or of_a_crd(obj):
            continue
        try:
            kubernetes_validate.validate(obj, "1.34.0", strict=True)
        except kubernetes_validate.ValidationError as error:  # pragma: no cover - shown on failure
            pytest.fail(f"{path}: {error}")
