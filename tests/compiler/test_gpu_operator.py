"""The GPU Operator hand-off: the rendered Helm values and ClusterPolicy patch pass the declared
release's ClusterPolicy schema, turn off every operand gpuconf replaces, and the labels gpuconf
gives its pool nodes make the Operator's own selection logic (as read from its code) keep its
operands off them and run the MIG manager, which then waits for gpuconf's plugin pods."""

from __future__ import annotations

from typing import Any

import pytest
from builders import cluster, cluster_file, load_yaml, pool, rendered, valid

from gpuconf.compiler.plan.mig_pause import pool_client_facts
from gpuconf.compiler.templating.check import patch_validator
from gpuconf.gpus.gpu_operator import (
    CLIENT_DEPLOY,
    RELEASES,
    REPLACED_OPERANDS,
    pool_deploy_labels,
)


def _errors(release: str, spec: dict[str, Any]) -> list[str]:
    """How `spec` breaks the release's ClusterPolicy spec schema, as render checks a merge patch."""
    validator, _ = patch_validator(f"gpu-operator/clusterpolicy-{release}", ("spec",))
    return [
        f"{'.'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(spec)
    ]


def _mig_pool(name: str = "h100") -> dict[str, Any]:
    return pool(
        name,
        model="H100-SXM5-80GB",
        count=8,
        sharing=[{"strategy": "mig", "layout": "all-1g.10gb"}],
    )


def _operator_cluster(release: str, plugin: str = "gpuconf", **operator: Any) -> dict[str, Any]:
    return cluster(
        [_mig_pool(), pool("t4", "Tesla-T4", 2)],
        [],
        plugin=plugin,
        gpuOperator={"version": release, **operator},
    )


def _tree(document: dict[str, Any]) -> dict[str, Any]:
    return {
        path: load_yaml(text) for path, text in rendered(document).items() if path.endswith(".yaml")
    }


@pytest.mark.parametrize("release", sorted(RELEASES))
@pytest.mark.parametrize("plugin", ["gpuconf", "nvidia"])
def test_values_and_patch_pass_the_release_clusterpolicy_schema(release: str, plugin: str) -> None:
    tree = _tree(_operator_cluster(release, plugin))
    values = tree["gpu-operator-values.yaml"]
    patch = tree["gpu-operator-clusterpolicy-patch.yaml"]
    assert _errors(release, values) == []
    assert _errors(release, patch["spec"]) == []
    assert patch["spec"] == values


def test_the_schema_check_refuses_what_the_api_server_would() -> None:
    assert _errors("v26.7.0", {"devicePlugin": {"enabled": "no"}}) != []
    assert _errors("v26.7.0", {"migManager": {"config": {"create": True}}}) != []


def test_values_turn_off_every_operand_gpuconf_replaces_and_hand_mig_to_the_manager() -> None:
    values = _tree(_operator_cluster("v26.7.0"))["gpu-operator-values.yaml"]
    assert {s: values[s]["enabled"] for s in REPLACED_OPERANDS} == dict.fromkeys(
        REPLACED_OPERANDS, False
    )
    assert values["migManager"] == {
        "enabled": True,
        "config": {"name": "gpuconf-mig-parted-config", "default": "all-disabled"},
    }


def test_without_mig_the_mig_manager_is_off() -> None:
    document = cluster([pool("t4", "Tesla-T4", 2)], [], gpuOperator={"version": "v26.7.0"})
    assert _tree(document)["gpu-operator-values.yaml"]["migManager"] == {"enabled": False}


def test_keeping_the_operator_plugin_leaves_it_on_and_labels_pool_nodes_off_it() -> None:
    values = _tree(_operator_cluster("v26.7.0", devicePlugin=True))["gpu-operator-values.yaml"]
    assert "devicePlugin" not in values
    labels = pool_deploy_labels(
        "v26.7.0", mig=False, driver_managed=False, operator_device_plugin=True, gfd_labels=True
    )
    assert labels["nvidia.com/gpu.deploy.device-plugin"] == "false"


# --- the Operator's and the MIG manager's own logic, as read from their code -------------------


def _operator_labels_node(labels: dict[str, str], release: str) -> dict[str, str]:
    """The labels after the Operator's node labeller ran on a GPU node (gpu.present=true):
    `addGPUStateLabels` in controllers/state_manager.go writes each container-workload state
    label that is absent (v26.7.0: or empty) and the MIG manager's only where GFD's
    mig.capable or product label says MIG and the key is absent. A gpuconf node has no GFD
    labels."""
    state = {
        "nvidia.com/gpu.deploy.driver",
        "nvidia.com/gpu.deploy.gpu-feature-discovery",
        "nvidia.com/gpu.deploy.container-toolkit",
        "nvidia.com/gpu.deploy.device-plugin",
        "nvidia.com/gpu.deploy.dcgm",
        "nvidia.com/gpu.deploy.dcgm-exporter",
        "nvidia.com/gpu.deploy.node-status-exporter",
        "nvidia.com/gpu.deploy.operator-validator",
    }
    if RELEASES[release].waits_for_clients:  # v26.7.0 added the client label to gpuStateLabels
        state.add(CLIENT_DEPLOY)
    out = dict(labels)
    for key in state:
        if not out.get(key):
            out[key] = "true"
    return out


def _selects(node_selector: dict[str, str], labels: dict[str, str]) -> bool:
    return all(labels.get(k) == v for k, v in node_selector.items())


def _not_in_affinity_allows(pod: dict[str, Any], labels: dict[str, str]) -> bool:
    terms = pod.get("affinity", {}).get("nodeAffinity", {})
    required = terms.get("requiredDuringSchedulingIgnoredDuringExecution", {})
    for term in required.get("nodeSelectorTerms", []):
        for expr in term["matchExpressions"]:
            assert expr["operator"] == "NotIn"
            if labels.get(expr["key"]) in expr["values"]:
                return False
    return True


def _runs_on(pod: dict[str, Any], labels: dict[str, str]) -> bool:
    return _selects(pod["nodeSelector"], labels) and _not_in_affinity_allows(pod, labels)


def _mig_manager_pauses(labels: dict[str, str], release: str) -> dict[str, str]:
    """`shutdownKubernetesGPUClients` (mig-parted reconfigure.go / reconfigure-mig.sh):
    `maybeSetPaused` leaves false as false; the client label only where the node has it and
    the MIG manager knows it (v0.15.0)."""
    keys = [
        "nvidia.com/gpu.deploy.device-plugin",
        "nvidia.com/gpu.deploy.gpu-feature-discovery",
        "nvidia.com/gpu.deploy.dcgm-exporter",
        "nvidia.com/gpu.deploy.dcgm",
        "nvidia.com/gpu.deploy.nvsm",
    ]
    if RELEASES[release].waits_for_clients and labels.get(CLIENT_DEPLOY):
        keys.append(CLIENT_DEPLOY)
    out = dict(labels)
    for key in keys:
        out[key] = "false" if labels.get(key) == "false" else "paused-for-mig-change"
    return out


def _waited_for(pod: dict[str, Any], release: str) -> bool:
    """`waitForPodsWithNodeSelector(gpuClientDeployLabel)`: DaemonSet pods whose nodeSelector
    has the key; before v0.15.0 only the Operator's own `app=` pods."""
    return RELEASES[release].waits_for_clients and CLIENT_DEPLOY in pod["nodeSelector"]


OPERATOR_ASSETS_SELECT = {
    # assets/state-*/…daemonset.yaml nodeSelectors at v26.7.0
    "driver": "nvidia.com/gpu.deploy.driver",
    "toolkit": "nvidia.com/gpu.deploy.container-toolkit",
    "devicePlugin": "nvidia.com/gpu.deploy.device-plugin",
    "gfd": "nvidia.com/gpu.deploy.gpu-feature-discovery",
    "migManager": "nvidia.com/gpu.deploy.mig-manager",
}


def _operator_runs(values: dict[str, Any], node: dict[str, str]) -> set[str]:
    """The Operator's operands on `node`: `isStateEnabled` (controllers/state_manager.go) reads
    the section's `enabled` (default true), and each DaemonSet selects its deploy label `=true`."""
    return {
        section
        for section, key in OPERATOR_ASSETS_SELECT.items()
        if values.get(section, {}).get("enabled", True) and node.get(key) == "true"
    }


def _pool_labels(document: dict[str, Any], pool_name: str) -> dict[str, str]:
    """A pool node's labels once the rendered README's `kubectl label` commands ran."""
    declared = valid(document).cluster
    (pool_spec,) = (p for p in declared.spec.node_pools if p.name == pool_name)
    deploy = pool_deploy_labels(**pool_client_facts(declared, pool_spec))
    return {"gpuconf.dev/pool": pool_name, **deploy}


def _client_pods(tree: dict[str, Any], pool_name: str) -> list[dict[str, Any]]:
    return [
        obj["spec"]["template"]["spec"]
        for path, obj in tree.items()
        if path.startswith(f"pools/{pool_name}/daemonset-")
        and "setup" not in path
        and "driver" not in path
    ]


@pytest.mark.parametrize("plugin", ["gpuconf", "nvidia"])
@pytest.mark.parametrize("device_plugin", [False, True])
def test_on_a_labelled_mig_node_the_operator_runs_only_the_mig_manager_and_it_waits_for_ours(
    plugin: str, device_plugin: bool
) -> None:
    release = "v26.7.0"
    document = _operator_cluster(release, plugin, devicePlugin=device_plugin)
    tree = _tree(document)
    node = _operator_labels_node(_pool_labels(document, "h100"), release)
    # With plugin: nvidia no gpuconf node runtime writes GFD's labels: the Operator's GFD does.
    gfd = {"gfd"} if plugin == "nvidia" else set()
    assert _operator_runs(tree["gpu-operator-values.yaml"], node) == {"migManager"} | gfd
    pods = _client_pods(tree, "h100")
    assert pods
    assert all(_runs_on(p, node) for p in pods)
    paused = _mig_manager_pauses(node, release)
    assert not any(_runs_on(p, paused) for p in pods)
    assert all(_waited_for(p, release) for p in pods)


@pytest.mark.parametrize("release", ["v25.3.4", "v25.10.1", "v26.3.3"])
def test_older_mig_managers_still_take_our_plugin_off_the_node_they_repartition(
    release: str,
) -> None:
    document = _operator_cluster(release)
    tree = _tree(document)
    node = _operator_labels_node(_pool_labels(document, "h100"), release)
    assert node.get("nvidia.com/gpu.deploy.mig-manager") == "true"
    pods = _client_pods(tree, "h100")
    assert all(_runs_on(p, node) for p in pods)
    assert not any(_runs_on(p, _mig_manager_pauses(node, release)) for p in pods)
    assert not any(_waited_for(p, release) for p in pods)


def test_a_pool_without_mig_keeps_the_mig_manager_off() -> None:
    labels = pool_deploy_labels(
        "v26.7.0", mig=False, driver_managed=False, operator_device_plugin=False, gfd_labels=True
    )
    node = _operator_labels_node(labels, "v26.7.0")
    assert node["nvidia.com/gpu.deploy.mig-manager"] == "false"
    assert CLIENT_DEPLOY not in labels


def test_the_operator_plugin_and_ours_never_share_a_node() -> None:
    release = "v26.7.0"
    document = _operator_cluster(release, devicePlugin=True)
    tree = _tree(document)
    for pool_name in ("h100", "t4"):
        node = _operator_labels_node(_pool_labels(document, pool_name), release)
        assert node["nvidia.com/gpu.deploy.device-plugin"] == "false"
        assert all(_runs_on(p, node) for p in _client_pods(tree, pool_name))
        # A node the Operator's plugin runs on (label true) runs none of ours.
        other = {**node, "nvidia.com/gpu.deploy.device-plugin": "true"}
        assert not any(_runs_on(p, other) for p in _client_pods(tree, pool_name))


def test_a_cluster_without_the_operator_renders_no_operator_files() -> None:
    assert not any(p.startswith("gpu-operator-") for p in _tree(cluster([_mig_pool()], [])))


def test_the_mig_example_declares_the_operator() -> None:
    assert valid(cluster_file("mig")).cluster.spec.gpu_operator is not None


@pytest.mark.parametrize("device_plugin", [False, True])
def test_the_labels_alone_keep_replaced_operands_off_if_the_clusterpolicy_turns_them_on(
    device_plugin: bool,
) -> None:
    labels = pool_deploy_labels(
        "v26.7.0",
        mig=False,
        driver_managed=False,
        operator_device_plugin=device_plugin,
        gfd_labels=True,
    )
    node = _operator_labels_node(labels, "v26.7.0")
    kept_off = {s for s, key in REPLACED_OPERANDS.items() if node[key] == "false"}
    # Without the Operator's plugin the device-plugin label stays the Operator's: it is the
    # one every MIG manager pauses, and gpuconf's plugin follows it.
    expected = set(REPLACED_OPERANDS) - (set() if device_plugin else {"devicePlugin"})
    assert kept_off == expected


# --- GPU Feature Discovery: replaced only where gpuconf's node runtime writes its labels -------


def _gfd_runs_on(document: dict[str, Any], pool_name: str) -> bool:
    release = document["spec"]["gpuOperator"]["version"]
    values = _tree(document)["gpu-operator-values.yaml"]
    node = _operator_labels_node(_pool_labels(document, pool_name), release)
    return "gfd" in _operator_runs(values, node)


@pytest.mark.parametrize("pool_name", ["h100", "a100"])
def test_beside_nvidias_plugin_the_operators_gfd_runs_on_the_mig_pools(pool_name: str) -> None:
    # clusters/mig-nvidia.yaml: no gpuconf node runtime runs, so only the Operator's GFD
    # gives the nodes nvidia.com/gpu.product and nvidia.com/mig.capable.
    document = cluster_file("mig-nvidia")
    assert _tree(document)["gpu-operator-values.yaml"]["gfd"] == {"enabled": True}
    assert _gfd_runs_on(document, pool_name)


def test_where_gpuconf_writes_gfds_labels_the_operators_gfd_is_off_there() -> None:
    document = _operator_cluster("v26.7.0")
    document["spec"]["node"] = {"labels": {"owner": "gpuconf"}}
    assert _tree(document)["gpu-operator-values.yaml"]["gfd"] == {"enabled": False}
    assert _pool_labels(document, "h100")["nvidia.com/gpu.deploy.gpu-feature-discovery"] == "false"
    assert not _gfd_runs_on(document, "h100")
    assert not _gfd_runs_on(document, "t4")


@pytest.mark.parametrize(
    "spec",
    [
        {"node": {"labels": {"owner": "gfd"}}},
        {"node": {"labels": {"owner": "off"}}},
        {"kubernetes": {"version": "1.29"}},
    ],
    ids=["owner-gfd", "owner-off", "kubernetes-1.29"],
)
def test_where_gpuconf_writes_no_gfd_labels_the_operators_gfd_keeps_running(
    spec: dict[str, Any],
) -> None:
    document = _operator_cluster("v26.7.0")
    document["spec"].update(spec)
    assert _tree(document)["gpu-operator-values.yaml"]["gfd"] == {"enabled": True}
    assert _gfd_runs_on(document, "h100")
    assert _gfd_runs_on(document, "t4")
