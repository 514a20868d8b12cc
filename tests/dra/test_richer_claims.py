"""Claims beyond one device: a count, every device of the node, fallbacks in order
(firstAvailable), a shared attribute (matchAttribute), and the class as an extended resource,
each refused where the Kubernetes version, the driver or Kueue cannot honour it."""

from __future__ import annotations

import re
from typing import Any

import kubernetes_validate
import pytest
from builders import errors, heterogeneous, load_yaml, rendered

WHOLE_H100 = {"name": "h100", "select": {"model": "H100-SXM5-80GB"}}
L40S = {"name": "l40s", "select": {"model": "L40S"}}


def _cluster(claim: dict[str, Any], version: str = "1.34", **spec: Any) -> dict[str, Any]:
    document = heterogeneous(
        [{**WHOLE_H100, "claim": claim}, L40S],
        quotas=[{"namespace": "team-a", "classes": {"h100": 12, "l40s": 8}}],
        **spec,
    )
    document["spec"]["kubernetes"]["version"] = version
    return document


def _objects(document: dict[str, Any]) -> dict[str, Any]:
    tree = rendered(document)
    version = document["spec"]["kubernetes"]["version"]
    objects = {}
    for path in ("claims/team-a/h100.yaml", "cluster/deviceclass-h100.yaml"):
        obj = load_yaml(tree[path])
        kubernetes_validate.validate(obj, f"{version}.0", strict=True)
        objects[path] = obj
    return objects


def _devices(document: dict[str, Any]) -> dict[str, Any]:
    return _objects(document)["claims/team-a/h100.yaml"]["spec"]["spec"]["devices"]  # type: ignore[no-any-return]


def _messages(document: dict[str, Any]) -> list[str]:
    return [re.sub(r"^cluster\.yaml:\d+:\d+: ", "", d.as_text()) for d in errors(document)]


def test_a_count_of_devices_on_one_node() -> None:
    assert _devices(_cluster({"count": 4})) == {
        "requests": [{"name": "gpu", "exactly": {"deviceClassName": "h100", "count": 4}}]
    }


def test_a_count_no_node_holds_is_refused() -> None:
    # The H100 nodes have 8 GPUs, two of them in MIG mode: six whole GPUs per node.
    assert _messages(_cluster({"count": 8})) == [
        "spec.resourceClasses[0].claim.count: no node has 8 devices of class 'h100' (at most 6 on "
        "one node): a claim's devices are all on the node its pod runs on (hint: ask for 6 or fewer)"
    ]


def test_every_device_of_the_node() -> None:
    assert _devices(_cluster({"allocationMode": "All"}))["requests"] == [
        {"name": "gpu", "exactly": {"deviceClassName": "h100", "allocationMode": "All"}}
    ]


def test_fallback_classes_in_order_become_a_prioritized_list() -> None:
    assert _devices(_cluster({"count": 2, "firstAvailable": ["l40s"]}))["requests"] == [
        {
            "name": "gpu",
            "firstAvailable": [
                {"name": "h100", "deviceClassName": "h100", "count": 2},
                {"name": "l40s", "deviceClassName": "l40s", "count": 2},
            ],
        }
    ]


def test_a_prioritized_list_needs_its_gate_on_1_33_and_does_not_exist_on_1_32() -> None:
    gates = {"DynamicResourceAllocation": True}
    on_1_33 = _cluster({"firstAvailable": ["l40s"]}, "1.33")
    on_1_33["spec"]["kubernetes"]["featureGates"] = dict(gates)
    assert _messages(on_1_33) == [
        "spec.resourceClasses[0].claim.firstAvailable: firstAvailable needs the feature gate "
        "DRAPrioritizedList (alpha, off by default in 1.33) (hint: run the API server, scheduler, "
        "controller manager and kubelets with --feature-gates=DRAPrioritizedList=true, and declare "
        "it: spec.kubernetes.featureGates: {DRAPrioritizedList: true})"
    ]
    on_1_33["spec"]["kubernetes"]["featureGates"]["DRAPrioritizedList"] = True
    assert _devices(on_1_33)["requests"][0]["firstAvailable"][1]["deviceClassName"] == "l40s"
    on_1_32 = _cluster({"firstAvailable": ["l40s"]}, "1.32")
    on_1_32["spec"]["kubernetes"]["featureGates"] = dict(gates)
    assert _messages(on_1_32) == [
        "spec.resourceClasses[0].claim.firstAvailable: firstAvailable needs Kubernetes 1.33 or "
        "newer (feature gate DRAPrioritizedList), not 1.32 (hint: target 1.34 or later, or leave "
        "firstAvailable out)"
    ]


def test_an_unknown_fallback_class_gets_did_you_mean() -> None:
    assert _messages(_cluster({"firstAvailable": ["l40"]})) == [
        "spec.resourceClasses[0].claim.firstAvailable[0]: no class is named 'l40' "
        "(hint: did you mean 'l40s'?)"
    ]


def test_devices_sharing_a_pcie_root() -> None:
    devices = _devices(_cluster({"count": 2, "matchAttribute": "resource.kubernetes.io/pcieRoot"}))
    assert devices["constraints"] == [
        {"requests": ["gpu"], "matchAttribute": "resource.kubernetes.io/pcieRoot"}
    ]
    short = _devices(_cluster({"count": 2, "matchAttribute": "productName"}))
    assert short["constraints"][0]["matchAttribute"] == "gpu.nvidia.com/productName"


def test_an_attribute_the_driver_does_not_publish_is_refused_with_what_it_publishes() -> None:
    [message] = _messages(_cluster({"count": 2, "matchAttribute": "nvlinkClique"}))
    assert message.startswith(
        "spec.resourceClasses[0].claim.matchAttribute: NVIDIA's DRA driver v25.12.0 publishes no "
        "attribute 'nvlinkClique' on these devices (and none for NVLink) (hint: it publishes "
    )
    assert "resource.kubernetes.io/pcieRoot" in message


def test_the_class_as_an_extended_resource_needs_the_alpha_gate_on_1_34() -> None:
    assert _messages(_cluster({"extendedResource": True})) == [
        "spec.resourceClasses[0].claim.extendedResource: extendedResource needs the feature gate "
        "DRAExtendedResource (alpha, off by default in 1.34) (hint: run the API server, scheduler, "
        "controller manager and kubelets with --feature-gates=DRAExtendedResource=true, and "
        "declare it: spec.kubernetes.featureGates: {DRAExtendedResource: true})"
    ]
    document = _cluster({"extendedResource": True})
    document["spec"]["kubernetes"]["featureGates"] = {"DRAExtendedResource": True}
    device_class = _objects(document)["cluster/deviceclass-h100.yaml"]
    # The name pods already ask for in device-plugin mode: they move to DRA unchanged.
    assert device_class["spec"]["extendedResourceName"] == "gpuconf.dev/h100"


def test_kueue_cannot_count_a_prioritized_list() -> None:
    document = _cluster({"firstAvailable": ["l40s"]}, kueue={"version": "v0.19.2"})
    assert _messages(document) == [
        "spec.resourceClasses[0].claim.firstAvailable: Kueue v0.19.2 refuses claims with "
        "firstAvailable: it counts only an exact number of devices per request (its "
        "pkg/dra/claims.go) (hint: ask for a count, or leave this class out of spec.kueue's quotas)"
    ]


def test_a_quota_smaller_than_a_claim_is_refused() -> None:
    document = _cluster({"count": 4})
    document["spec"]["quotas"][0]["classes"]["h100"] = 2
    assert _messages(document) == [
        "spec.quotas[0].classes.h100: a quota of 2 devices admits no claim of class 'h100', which "
        "takes 4 (hint: give the namespace 4 or more, or 0)"
    ]


def test_a_claim_in_device_plugin_mode_is_refused() -> None:
    document = _cluster({"count": 2})
    document["spec"]["allocation"] = "device-plugin"
    assert _messages(document) == [
        "spec.resourceClasses[0].claim: claim shapes a DRA ResourceClaim; with allocation: "
        "device-plugin a pod asks for a count of the class's resource itself (hint: remove claim, "
        "or use allocation: dra)"
    ]


@pytest.mark.parametrize("version", ["1.33", "1.34"])
def test_plain_classes_keep_the_one_device_form(version: str) -> None:
    document = _cluster({}, version)
    document["spec"]["kubernetes"]["featureGates"] = {"DynamicResourceAllocation": True}
    assert _devices(document) == {
        "requests": [{"name": "gpu", "exactly": {"deviceClassName": "h100"}}]
    }


def test_explain_says_what_one_claim_takes() -> None:
    from builders import valid

    from gpuconf.compiler.explain import explain_text

    claim = {
        "count": 2,
        "firstAvailable": ["l40s"],
        "matchAttribute": "resource.kubernetes.io/pcieRoot",
    }
    text = explain_text(valid(_cluster(claim)))
    assert "DeviceClass h100 (2 per claim; else l40s; same resource.kubernetes.io/pcieRoot)" in text
