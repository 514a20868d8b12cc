"""The node runtime may patch only its own Node, and only gpuconf's annotations (Kubernetes ≥ 1.30)."""

from __future__ import annotations

import functools
from collections.abc import Iterable
from typing import Any

import celpy
import pytest
import yaml
from builders import (
    CATALOG,
    GFD_MIG_SHARED,
    REPO,
    cluster_file,
    configmap_data,
    errors,
    load_yaml,
    rendered,
    valid,
)
from many_pools import many_pools

from gpuconf.api.node_config import ExpectedGpu
from gpuconf.api.validators import validate_node_config
from gpuconf.node.labels import NodeFacts, node_labels
from gpuconf.node.nvml.api import GpuInfo, MigAttributes, MigDevice

POLICY = "cluster/validatingadmissionpolicy-gpuconf-node.yaml"
ROLE = "cluster/clusterrole-gpuconf-node.yaml"
USER = "system:serviceaccount:gpuconf-system:gpuconf-node"


def _lab(version: str) -> dict[str, bytes]:
    data = cluster_file("lab")
    data["spec"]["kubernetes"]["version"] = version
    return rendered(data)


@functools.cache
def _program(expression: str) -> Any:
    env = celpy.Environment()
    return env.program(env.compile(expression))


def _verdicts(
    policy: dict[str, Any], old: dict[str, Any], new: dict[str, Any], node: str
) -> list[bool]:
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
    variables = celpy.celtypes.MapType()
    activation["variables"] = variables  # a variable may read the ones before it
    for variable in policy["spec"].get("variables", []):
        program = _program(variable["expression"])
        variables[celpy.celtypes.StringType(variable["name"])] = program.evaluate(activation)
    return [
        bool(_program(rule["expression"]).evaluate(activation))
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


def _policy_for(owner: str) -> dict[str, Any]:
    data = cluster_file("lab")
    data["spec"]["node"] = {"labels": {"owner": owner}}
    return load_yaml(rendered(data)[POLICY])


LABELLED = {
    "metadata": {
        "name": "gpu-1",
        "labels": {"a": "b", "nvidia.com/gpu.product": "Tesla-T4", "gpuconf.dev/pool": "t4"},
        "annotations": {"x": "1"},
    },
    "spec": {},
}


def _with_labels(labels: dict[str, str]) -> dict[str, Any]:
    return {"metadata": {**LABELLED["metadata"], "labels": labels}, "spec": {}}


@pytest.mark.parametrize(
    ("owner", "labels", "allowed"),
    [
        (
            "gpuconf",
            {**LABELLED["metadata"]["labels"], "nvidia.com/gpu.product": "Tesla-T4-SHARED"},
            True,
        ),
        ("gpuconf", {**LABELLED["metadata"]["labels"], "nvidia.com/gpu.replicas": "4"}, True),
        ("gpuconf", {**LABELLED["metadata"]["labels"], "class.gpuconf.dev/t4-shared": "8"}, True),
        ("gpuconf", {"a": "b", "gpuconf.dev/pool": "t4"}, True),
        ("gpuconf", {**LABELLED["metadata"]["labels"], "class.gpuconf.dev/other": "8"}, False),
        (
            "gpuconf",
            {**LABELLED["metadata"]["labels"], "nvidia.com/gpu.deploy.driver": "false"},
            False,
        ),
        ("gpuconf", {**LABELLED["metadata"]["labels"], "a": "c"}, False),
        ("gpuconf", {"nvidia.com/gpu.product": "Tesla-T4", "gpuconf.dev/pool": "t4"}, False),
        ("gfd", {**LABELLED["metadata"]["labels"], "class.gpuconf.dev/t4-shared": "8"}, True),
        ("gfd", {**LABELLED["metadata"]["labels"], "nvidia.com/gpu.product": "T4"}, False),
        ("off", {**LABELLED["metadata"]["labels"], "gpuconf.dev/pool": "a100"}, False),
    ],
    ids=[
        "gpuconf owner: product changes",
        "gpuconf owner: replicas added",
        "gpuconf owner: the cluster's class label",
        "gpuconf owner: a GFD label removed",
        "a class the cluster does not have",
        "a GPU Operator deploy label",
        "someone else's label changed",
        "someone else's label removed",
        "gfd owner: gpuconf's class label",
        "gfd owner: GFD's product label",
        "off: even the pool label",
    ],
)
def test_the_policy_admits_exactly_the_label_keys_the_node_publishes(
    owner: str, labels: dict[str, str], allowed: bool
) -> None:
    verdicts = _verdicts(_policy_for(owner), LABELLED, _with_labels(labels), "gpu-1")
    assert all(verdicts) is allowed


def test_published_labels_are_still_refused_on_another_node() -> None:
    labels = {**LABELLED["metadata"]["labels"], "nvidia.com/gpu.replicas": "4"}
    verdicts = _verdicts(_policy_for("gpuconf"), LABELLED, _with_labels(labels), "gpu-2")
    assert verdicts == [False, True]


def _mig_policy() -> dict[str, Any]:
    data = cluster_file("mig")
    data["spec"]["node"] = {"labels": {"owner": "gpuconf"}}
    return load_yaml(rendered(data)[POLICY])


def _admitted(policy: dict[str, Any], old_labels: dict[str, str], keys: Iterable[str]) -> set[str]:
    """The keys the policy lets gpu-1's node runtime add, one at a time, to a Node with these
    labels (gpuconf's pool label set to the pool the Node is in by its other labels)."""
    old = _with_labels(old_labels)
    return {
        key
        for key in keys
        if all(_verdicts(policy, old, _with_labels({**old_labels, key: "1"}), "gpu-1"))
    }


GFD_MIG_SUFFIXES = [key.removeprefix("nvidia.com/mig-1g.300gb.") for key in GFD_MIG_SHARED]
MIG_POOL_MODELS = {"h100": "H100-SXM5-80GB", "a100": "A100-SXM4-40GB", "a30": "A30"}
"""clusters/mig.yaml's pools and their models."""
MIG_POOL_KEYS = {
    f"nvidia.com/mig-{p}.{s}"
    for name in MIG_POOL_MODELS.values()
    for p in CATALOG.models[name].mig.profiles  # type: ignore[union-attr]
    for s in GFD_MIG_SUFFIXES
}
SINGLE_MIG_CANDIDATES = {f"nvidia.com/gpu.{s}" for s in GFD_MIG_SUFFIXES}


@pytest.mark.parametrize("pool", sorted(MIG_POOL_MODELS))
def test_a_pool_s_nodes_may_write_gfd_s_keys_for_every_mig_profile_of_its_model(pool: str) -> None:
    """GFD labels every MIG device present (mig-strategy.go newMigStrategyMixedLabeler), so a
    node may write the keys of every profile the catalog gives its model, selected or not, and
    no other model's."""
    mig = CATALOG.get(MIG_POOL_MODELS[pool]).mig  # type: ignore[union-attr]
    assert mig is not None
    expected = {f"nvidia.com/mig-{p}.{s}" for p in mig.profiles for s in GFD_MIG_SUFFIXES}
    policy = _mig_policy()
    assert _admitted(policy, {"gpuconf.dev/pool": pool}, MIG_POOL_KEYS) == expected
    assert _admitted(policy, {"gpuconf.dev/pool": "elsewhere"}, MIG_POOL_KEYS) == set()


def _nvml_gpu(gpu: ExpectedGpu) -> GpuInfo:
    """The GPU the node config expects, as NVML would report it, MIG devices and all."""
    attributes = MigAttributes(1, 1, 1, 1, 1, 1, 1, 1, 10_240)
    devices = [
        MigDevice(f"MIG-{gpu.index}-{profile}-{i}", profile, i + 1, 0, attributes)
        for profile, count in sorted((gpu.mig or {}).items())
        for i in range(count)
    ]
    return GpuInfo(
        index=gpu.index,
        uuid=f"GPU-{gpu.index}",
        name=gpu.nvml_name,
        memory_mib=gpu.memory_mi_b,
        pci_bus_id=f"0000:{gpu.index + 16:02x}:00.0",
        mig_enabled=gpu.mig is not None,
        mig_devices=devices,
        compute_capability=(9, 0),
    )


@pytest.mark.parametrize("pool", sorted(MIG_POOL_MODELS))
def test_every_label_a_mig_pool_s_node_runtime_writes_is_admitted_on_its_node(pool: str) -> None:
    """The node runtime's labels for the node config mig.yaml renders, on a Node its pool's
    DaemonSet selects (its nodeSelector, as rendered)."""
    data = cluster_file("mig")
    data["spec"]["node"] = {"labels": {"owner": "gpuconf"}}
    tree = rendered(data)
    config = validate_node_config(
        configmap_data(tree, f"pools/{pool}/configmap-node-config.yaml", "node-config.yaml")
    )
    gpus = tuple(_nvml_gpu(gpu) for gpu in config.inventory.for_node("gpu-1"))
    written = node_labels(config, "gpu-1", NodeFacts(gpus, "550.54.15", (12, 4), "R750xa"))
    assert any(key.startswith("nvidia.com/mig-") for key in written)
    daemonset = load_yaml(tree[f"pools/{pool}/daemonset-gpuconf-node.yaml"])
    old = daemonset["spec"]["template"]["spec"]["nodeSelector"]
    new = _with_labels({**old, **written})
    assert all(_verdicts(load_yaml(tree[POLICY]), _with_labels(old), new, "gpu-1"))


@pytest.mark.parametrize(
    ("pool", "label", "allowed"),
    [
        ("h100", "nvidia.com/mig-1g.10gb.multiprocessors", True),
        ("h100", "nvidia.com/mig-7g.80gb.count", True),
        ("a30", "nvidia.com/mig-7g.80gb.count", False),
        ("a30", "nvidia.com/mig-1g.6gb.product", True),
        ("none", "nvidia.com/mig-1g.10gb.count", False),
    ],
    ids=[
        "a selected profile's key",
        "a profile of the pool's model no class selects",
        "another model's profile",
        "the pool's own profile",
        "a Node of no pool",
    ],
)
def test_mig_keys_are_admitted_only_on_the_nodes_of_the_pools_whose_gpus_have_them(
    pool: str, label: str, allowed: bool
) -> None:
    old = _with_labels({**LABELLED["metadata"]["labels"], "gpuconf.dev/pool": pool})
    new = _with_labels({**old["metadata"]["labels"], label: "1"})
    assert all(_verdicts(_mig_policy(), old, new, "gpu-1")) is allowed


def test_a_pool_whose_mig_devices_are_nvidia_gpu_may_write_gfd_s_single_strategy_keys() -> None:
    # mig-strategy_test.go "single mig-enabled device returns mig labels": the MIG device's
    # attributes go under nvidia.com/gpu.* (memory as gpu.memory, a whole-GPU key already).
    data = yaml.safe_load(
        (
            REPO / "tests/cases/positive/single-mig-nvidia-gpu-beside-whole-gpus/cluster.yaml"
        ).read_text()
    )
    policy = load_yaml(rendered(data)[POLICY])
    whole_gpu = {f"nvidia.com/gpu.{s}" for s in ("count", "replicas", "memory", "product")}
    whole_gpu.add("nvidia.com/gpu.sharing-strategy")
    candidates = SINGLE_MIG_CANDIDATES | MIG_POOL_KEYS
    assert _admitted(policy, {"gpuconf.dev/pool": "a30"}, candidates) == SINGLE_MIG_CANDIDATES
    assert _admitted(policy, {"gpuconf.dev/pool": "elsewhere"}, candidates) == whole_gpu


def _fleet_policy() -> dict[str, Any]:
    return load_yaml(rendered(cluster_file("fleet"))[POLICY])


T4_NODE = {"a": "b", "node.example.com/gpu": "tesla-t4"}  # fleet's t4 pool, by its nodeSelector
A100_NODE = {"a": "b", "gpuconf.dev/pool": "a100"}  # fleet's a100 pool, by gpuconf's pool label


@pytest.mark.parametrize(
    ("old", "new", "allowed"),
    [
        (T4_NODE, {**T4_NODE, "gpuconf.dev/pool": "t4"}, True),
        (T4_NODE, {**T4_NODE, "gpuconf.dev/pool": "a100"}, False),
        ({**T4_NODE, "gpuconf.dev/pool": "t4"}, {**T4_NODE, "gpuconf.dev/pool": "l4"}, False),
        ({**T4_NODE, "gpuconf.dev/pool": "t4"}, T4_NODE, False),
        (A100_NODE, {**A100_NODE, "gpuconf.dev/pool": "l4"}, False),
        (A100_NODE, {"a": "b"}, False),
        (A100_NODE, {**A100_NODE, "node.example.com/gpu": "tesla-t4"}, False),
        (T4_NODE, {**T4_NODE, "node.example.com/gpu": "h100-sxm5"}, False),
        (T4_NODE, {**T4_NODE, "class.gpuconf.dev/t4-shared": "8"}, True),
        (T4_NODE, {**T4_NODE, "class.gpuconf.dev/a100-train": "8"}, False),
        (A100_NODE, {**A100_NODE, "class.gpuconf.dev/a100-train": "8"}, True),
        ({**T4_NODE, "class.gpuconf.dev/a100-train": "8"}, T4_NODE, True),
        ({**T4_NODE, "class.gpuconf.dev/gone": "8"}, T4_NODE, True),
        ({"a": "b"}, {"a": "b", "gpuconf.dev/pool": "a100"}, False),
        ({"a": "b"}, {"a": "b", "class.gpuconf.dev/t4-shared": "8"}, False),
        ({"a": "b"}, {"a": "b", "nvidia.com/gpu.count": "2"}, True),
    ],
    ids=[
        "its pool's name where the pool selects by another label",
        "another pool's name, which that pool selects by",
        "its pool label changed to another pool's",
        "its pool label removed",
        "gpuconf's pool label itself moved to another pool",
        "gpuconf's pool label, its pool's selector, removed",
        "another pool's selector label added",
        "its pool's selector label changed",
        "a class label of its pool",
        "a class label of another pool",
        "a class label of its own pool where the pool label selects",
        "a class label its pool no longer serves taken back",
        "a class label the cluster no longer has taken back",
        "a Node of no pool: a pool label",
        "a Node of no pool: a class label",
        "a Node of no pool: GFD's labels, as before",
    ],
)
def test_a_node_may_not_move_itself_into_another_pool(
    old: dict[str, str], new: dict[str, str], allowed: bool
) -> None:
    """A compromised node runtime that could rewrite gpuconf.dev/pool or a pool's nodeSelector
    label would move its Node into that pool (its workloads, quota and Kueue flavor)."""
    verdicts = _verdicts(_fleet_policy(), _with_labels(old), _with_labels(new), "gpu-1")
    assert all(verdicts) is allowed


def test_a_node_matching_two_pools_writes_neither_pool_s_labels() -> None:
    """By fleet's t4 selector and by a100's pool label: both runtimes run there, and either
    could set the pool label that leaves the other (a100 selects by it)."""
    both = {**T4_NODE, "gpuconf.dev/pool": "a100"}
    policy = _fleet_policy()
    assert _admitted(
        policy,
        both,
        ["class.gpuconf.dev/t4-shared", "class.gpuconf.dev/a100-train", "nvidia.com/gpu.count"],
    ) == {"nvidia.com/gpu.count"}
    moved = _with_labels({**both, "gpuconf.dev/pool": "t4"})
    assert not all(_verdicts(policy, _with_labels(both), moved, "gpu-1"))


def test_a_pool_may_select_by_gpuconf_s_pool_label_only_as_itself() -> None:
    data = cluster_file("fleet")
    data["spec"]["nodePools"][0]["nodeSelector"] = {"gpuconf.dev/pool": "gpu"}
    (error,) = errors(data)
    assert error.path == ("spec", "nodePools", 0, "nodeSelector", "gpuconf.dev/pool")
    assert "takes them out of the pool" in error.message
    assert "--overwrite -l gpuconf.dev/pool=gpu gpuconf.dev/pool=t4" in error.hint
    data["spec"]["nodePools"][0]["nodeSelector"] = {"gpuconf.dev/pool": "t4"}
    policy = load_yaml(rendered(data)[POLICY])
    own = _with_labels({"a": "b", "gpuconf.dev/pool": "t4"})
    moved = _with_labels({"a": "b", "gpuconf.dev/pool": "a100"})
    assert not all(_verdicts(policy, own, moved, "gpu-1"))
    assert _admitted(policy, own["metadata"]["labels"], ["class.gpuconf.dev/t4-shared"])


@pytest.mark.parametrize("owner", ["gpuconf", "gfd", "off"])
def test_a_pool_may_not_select_by_a_class_label(owner: str) -> None:
    """Only the runtime that selector would place writes the label, and a Node may take any
    class label back, leaving the pool."""
    data = cluster_file("fleet")
    data["spec"]["node"]["labels"]["owner"] = owner
    data["spec"]["nodePools"][2]["nodeSelector"] = {"class.gpuconf.dev/h100-x": "1"}
    (error,) = errors(data)
    assert error.path == ("spec", "nodePools", 2, "nodeSelector", "class.gpuconf.dev/h100-x")
    assert "a node may remove it and leave the pool" in error.message


def test_a_pool_whose_nodes_another_pool_s_selector_also_matches_is_warned() -> None:
    """Decidable from the file only where one selector holds another: selectors on different
    keys (fleet's t4 by a site label, a100 by gpuconf's pool label) stay silent."""
    data = cluster_file("fleet")
    assert not [w for w in valid(data).warnings if "also in pool" in w.message]
    data["spec"]["nodePools"][2]["nodeSelector"] = {
        "node.example.com/gpu": "tesla-t4",
        "node.example.com/tier": "premium",
    }
    (warning,) = [w for w in valid(data).warnings if "also in pool" in w.message]
    assert warning.path == ("spec", "nodePools", 2, "nodeSelector")
    assert "pool 'h100' selects is also in pool(s) 't4'" in warning.message


def _lab_selected_by_product() -> dict[str, Any]:
    data = cluster_file("lab")
    data["spec"]["node"] = {"labels": {"owner": "gpuconf"}}
    data["spec"]["nodePools"][0]["nodeSelector"] = {"nvidia.com/gpu.product": "Tesla-T4"}
    return data


def test_a_gfd_label_a_pool_selects_by_is_not_the_node_s_to_change() -> None:
    policy = load_yaml(rendered(_lab_selected_by_product())[POLICY])
    old = _with_labels({"nvidia.com/gpu.product": "Tesla-T4"})
    renamed = _with_labels({"nvidia.com/gpu.product": "Tesla-T4-SHARED"})
    counted = _with_labels({"nvidia.com/gpu.product": "Tesla-T4", "nvidia.com/gpu.count": "2"})
    assert not all(_verdicts(policy, old, renamed, "gpu-1"))
    assert all(_verdicts(policy, old, counted, "gpu-1"))
    assert _admitted(policy, old["metadata"]["labels"], ["class.gpuconf.dev/t4-shared"])
    named = _with_labels({**old["metadata"]["labels"], "gpuconf.dev/pool": "t4"})
    assert all(_verdicts(policy, old, named, "gpu-1"))


def _many_pools_policy(mig_pools: int, plain_pools: int) -> dict[str, Any]:
    return load_yaml(rendered(many_pools(mig_pools, plain_pools))[POLICY])


@pytest.fixture(scope="module")
def hundreds_of_pools() -> dict[str, Any]:
    """The policy of 40 MIG pools and 300 plain ones (tests/many_pools.py)."""
    return _many_pools_policy(40, 300)


def _expressions(policy: dict[str, Any]) -> list[str]:
    spec = policy["spec"]
    return [e["expression"] for e in (*spec["variables"], *spec["validations"])]


def test_with_hundreds_of_pools_no_expression_outgrows_kube_apiserver_s_limits(
    hundreds_of_pools: dict[str, Any],
) -> None:
    """kube-apiserver refuses an expression over 100,000 code points ("expression code point
    size exceeds limit") or nested over 250 deep ("expression recursion limit exceeded"): a
    pool adds map entries, never a ternary, and pools with the same MIG keys share them
    (tests/control_plane/test_node_policy.py applies this policy to the real server)."""
    few, many = _many_pools_policy(2, 3), hundreds_of_pools
    assert max(len(e) for e in _expressions(many)) < 50_000
    assert [e.count("?") for e in _expressions(many)] == [e.count("?") for e in _expressions(few)]


@pytest.mark.parametrize(
    ("old", "new", "allowed"),
    [
        ({"gpuconf.dev/pool": "l4-299"}, {"class.gpuconf.dev/l4-299": "1"}, True),
        ({"gpuconf.dev/pool": "l4-299"}, {"gpuconf.dev/pool": "h100-0"}, False),
        ({"gpuconf.dev/pool": "h100-39"}, {"nvidia.com/mig-3g.40gb.count": "2"}, True),
    ],
    ids=[
        "its own class label",
        "another pool's name",
        "a MIG pool's own MIG key",
    ],
)
def test_with_hundreds_of_pools_a_node_writes_its_own_pool_s_labels_only(
    hundreds_of_pools: dict[str, Any], old: dict[str, str], new: dict[str, str], allowed: bool
) -> None:
    verdicts = _verdicts(
        hundreds_of_pools, _with_labels(old), _with_labels({**old, **new}), "gpu-1"
    )
    assert all(verdicts) is allowed


def test_a_pool_selecting_by_a_label_every_other_pool_s_runtime_writes_is_refused() -> None:
    """fleet's h100 pool selecting by gpu.product (and a team label, so no warning says the
    selector is NVIDIA's alone): every other pool's node runtime writes gpu.product where its
    nodes carry none, and the policy refuses that whole label patch."""
    data = cluster_file("fleet")
    data["spec"]["nodePools"][2]["nodeSelector"] = {
        "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3",
        "example.com/team": "x",
    }
    (error,) = errors(data)
    assert error.path == ("spec", "nodePools", 2, "nodeSelector", "nvidia.com/gpu.product")
    assert "refuses the runtime's whole label patch" in error.message
    assert "('t4', 'a100', 'l4')" in error.message
    data["spec"]["node"]["labels"]["owner"] = "gfd"
    assert not any("label patch" in w.message for w in valid(data).warnings)


def test_a_pool_selecting_by_a_label_only_its_own_runtime_writes_is_warned() -> None:
    """Lab's one pool: its runtime's writes are admitted while it writes the value there."""
    (warning,) = [
        w for w in valid(_lab_selected_by_product()).warnings if "label patch" in w.message
    ]
    assert warning.path == ("spec", "nodePools", 0, "nodeSelector", "nvidia.com/gpu.product")
    assert "wherever the value it writes is not the node's already" in warning.message


@pytest.mark.parametrize(
    ("owner", "says"),
    [
        ("gpuconf", "a label gpuconf's node runtime writes"),
        ("gfd", "only by labels NVIDIA's components write"),
    ],
)
def test_a_pool_selecting_only_by_a_gfd_label_is_warned_once(owner: str, says: str) -> None:
    """One rule owns it: node_labels where gpuconf's runtime writes the label (its policy then
    refuses the runtime's patches), node_selection where NVIDIA's GFD does."""
    data = _lab_selected_by_product()
    data["spec"]["node"]["labels"]["owner"] = owner
    (warning,) = [
        w for w in valid(data).warnings if w.path[:4] == ("spec", "nodePools", 0, "nodeSelector")
    ]
    assert says in warning.message
    assert "gpuconf.dev/pool=t4" in (warning.hint or "")
