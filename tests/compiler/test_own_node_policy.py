"""The node runtime may patch only its own Node, and only gpuconf's annotations (Kubernetes ≥ 1.30)."""

from __future__ import annotations

from typing import Any

import celpy
import pytest
from builders import cluster_file, load_yaml, rendered

POLICY = "cluster/validatingadmissionpolicy-gpuconf-node.yaml"
ROLE = "cluster/clusterrole-gpuconf-node.yaml"
USER = "system:serviceaccount:gpuconf-system:gpuconf-node"


def _lab(version: str) -> dict[str, bytes]:
    data = cluster_file("lab")
    data["spec"]["kubernetes"]["version"] = version
    return rendered(data)


def _verdicts(
    policy: dict[str, Any], old: dict[str, Any], new: dict[str, Any], node: str
) -> list[bool]:
    env = celpy.Environment()
    activation = {
        "object": celpy.json_to_cel(new),
        "oldObject": celpy.json_to_cel(old),
        "request": celpy.json_to_cel(
            {
                "userInfo": {
                    "username": USER,
                    "extra": {"authentication.kubernetes.io/node-name": [node]},
                }
            }
        ),
    }
    return [
        bool(env.program(env.compile(rule["expression"])).evaluate(activation))
        for rule in policy["spec"]["validations"]
    ]


NODE = {"metadata": {"name": "gpu-1", "labels": {"a": "b"}, "annotations": {"x": "1"}}, "spec": {}}


@pytest.mark.parametrize(
    ("change", "node", "allowed"),
    [
        ({"annotations": {"x": "1", "gpuconf.dev/inventory-drift": "true"}}, "gpu-1", True),
        ({"annotations": {"x": "1", "gpuconf.dev/inventory-drift": "true"}}, "gpu-2", False),
        ({"annotations": {"x": "2"}}, "gpu-1", False),
        ({"annotations": {}}, "gpu-1", False),
        ({"labels": {"a": "c"}}, "gpu-1", False),
    ],
    ids=[
        "own gpuconf annotation",
        "another node",
        "other annotation",
        "removed annotation",
        "label",
    ],
)
def test_the_policy_admits_only_gpuconf_annotations_on_the_pod_s_own_node(
    change: dict[str, Any], node: str, allowed: bool
) -> None:
    policy = load_yaml(_lab("1.34")[POLICY])
    new = {"metadata": {**NODE["metadata"], **change}, "spec": {}}
    assert all(_verdicts(policy, NODE, new, node)) is allowed
    assert (
        policy["spec"]["matchConditions"][0]["expression"]
        == f"request.userInfo.username == '{USER}'"
    )


def test_before_1_30_the_role_only_reads_nodes_and_no_policy_is_rendered() -> None:
    tree = _lab("1.29")
    assert POLICY not in tree
    assert load_yaml(tree[ROLE])["rules"] == [
        {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get"]}
    ]
    assert load_yaml(_lab("1.30")[ROLE])["rules"][0]["verbs"] == ["get", "patch"]


def test_only_gpuconf_s_namespace_is_labelled_privileged() -> None:
    tree = _lab("1.34")
    labels = {
        path: load_yaml(data)["metadata"]["labels"].get("pod-security.kubernetes.io/enforce")
        for path, data in tree.items()
        if path.startswith("namespaces/")
    }
    assert labels.pop("namespaces/gpuconf-system.yaml") == "privileged"
    assert set(labels.values()) == {None}
