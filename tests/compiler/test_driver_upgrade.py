"""Driver upgrades that drain: what gpuconf renders for a pool whose driver it installs, held
against NVIDIA's k8s-driver-manager v0.12.0 (the init container that cordons, evicts and unloads)
as read from its source, and the validation that keeps the rollout from moving on before the
new driver answers. gpuconf runs no rollout code of its own: the DaemonSet controller rolls the
pods and the driver manager does the node's sequence, so these tests pin the contract between
them (env names and formats, RBAC for its calls, the label it waits by)."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
from builders import as_dra, cluster, load_yaml, pool, rendered, valid

from gpuconf.compiler.plan.driver import validate_driver_command

# cmd/driver-manager/main.go (v0.12.0, bd62ca7d): every EnvVars name of `uninstall_driver`'s
# flags, with its flag type.
DRIVER_MANAGER_ENV = {
    "NODE_NAME": "string",
    "DRAIN_USE_FORCE": "bool",
    "DRAIN_POD_SELECTOR_LABEL": "string",
    "DRAIN_TIMEOUT_SECONDS": "duration",
    "DRAIN_DELETE_EMPTYDIR_DATA": "bool",
    "ENABLE_AUTO_DRAIN": "bool",
    "ENABLE_GPU_POD_EVICTION": "bool",
    "OPERATOR_NAMESPACE": "string",
    "NODE_LABEL_FOR_GPU_POD_EVICTION": "string",
    "GPU_DIRECT_RDMA_ENABLED": "bool",
    "USE_HOST_MOFED": "bool",
    "KUBECONFIG": "string",
    "FORCE_REINSTALL": "bool",
}
# What the container runtime reads, not the driver manager (the Operator's DaemonSet sets it too).
RUNTIME_ENV = {"NVIDIA_VISIBLE_DEVICES"}
# The API calls v0.12.0 makes (internal/kubernetes/client.go and the vendored kubectl drain
# helper it calls): (API group, resource, verb).
DRIVER_MANAGER_CALLS = {
    ("", "nodes", "get"),  # GetNodeLabelValue, CordonNode
    ("", "nodes", "patch"),  # UpdateNodeLabels (strategic merge), RunCordonOrUncordon
    ("", "pods", "list"),  # WaitForPodTermination, WaitForPodsWithNodeSelector, DeleteOrEvictPods
    ("", "pods/eviction", "create"),  # drain.Helper.DeleteOrEvictPods
    ("apps", "daemonsets", "get"),  # drain's daemonSetFilter
    ("resource.k8s.io", "resourceclaims", "get"),  # podHasGPUResourceClaim
}
GO_DURATION = re.compile(r"^(\d+(\.\d+)?(ns|us|µs|ms|s|m|h))+$")


def _tree(**driver: Any) -> dict[str, Any]:
    document = cluster(
        [
            pool(
                "a100",
                "A100-SXM4-80GB",
                8,
                size=4,
                driver={"version": "550.90.07", "install": True, **driver},
            ),
            pool("t4", "Tesla-T4", 2),
        ],
        [],
    )
    return {p: load_yaml(t) for p, t in rendered(document).items() if p.endswith(".yaml")}


def _driver_pod(tree: dict[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = tree["pools/a100/daemonset-nvidia-driver.yaml"]["spec"]
    return spec


def test_the_driver_manager_is_the_installers_init_container_and_reads_every_variable_set() -> None:
    (manager,) = _driver_pod(_tree())["template"]["spec"]["initContainers"]
    assert manager["command"] == ["driver-manager"]
    assert manager["args"] == ["uninstall_driver"]
    assert manager["image"].endswith(":v0.12.0")
    env = {e["name"]: e for e in manager["env"]}
    assert set(env) - RUNTIME_ENV <= set(DRIVER_MANAGER_ENV)
    for name, entry in env.items():
        kind = DRIVER_MANAGER_ENV.get(name, "string")
        if kind == "bool":
            assert entry["value"] in {"true", "false"}, name
        if kind == "duration":
            assert GO_DURATION.match(entry["value"]), name
    assert env["ENABLE_GPU_POD_EVICTION"]["value"] == "true"
    # kubectl's drain without --ignore-daemonsets refuses DaemonSet pods: never on a GPU node.
    assert env["ENABLE_AUTO_DRAIN"]["value"] == "false"
    assert env["NODE_NAME"]["valueFrom"]["fieldRef"]["fieldPath"] == "spec.nodeName"


def test_the_eviction_timeout_is_the_pools() -> None:
    (manager,) = _driver_pod(_tree(evictionTimeoutSeconds=90))["template"]["spec"]["initContainers"]
    env = {e["name"]: e.get("value") for e in manager["env"]}
    assert env["DRAIN_TIMEOUT_SECONDS"] == "90s"


@pytest.mark.parametrize(("declared", "expected"), [({}, 1), ({"maxUnavailable": 3}, 3)])
def test_a_driver_change_rolls_max_unavailable_nodes_at_a_time(
    declared: dict[str, Any], expected: int
) -> None:
    strategy = _driver_pod(_tree(**declared))["updateStrategy"]
    assert strategy == {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": expected}}


def test_the_rbac_grants_every_call_the_driver_manager_makes_and_binds_its_account() -> None:
    tree = _tree()
    role = tree["cluster/clusterrole-gpuconf-driver-manager.yaml"]
    granted = {
        (group, resource, verb)
        for rule in role["rules"]
        for group in rule["apiGroups"]
        for resource in rule["resources"]
        for verb in rule["verbs"]
    }
    assert granted >= DRIVER_MANAGER_CALLS
    assert not {v for _, _, v in granted} & {"delete", "deletecollection", "*"}
    binding = tree["cluster/clusterrolebinding-gpuconf-driver-manager.yaml"]
    account = _driver_pod(tree)["template"]["spec"]["serviceAccountName"]
    assert binding["subjects"][0]["name"] == account
    assert binding["roleRef"]["name"] == role["metadata"]["name"]


def test_without_an_installer_no_driver_manager_account_is_rendered() -> None:
    document = cluster([pool("t4", "Tesla-T4", 2)], [])
    assert not any("driver-manager" in p for p in rendered(document))


def test_the_pools_gpu_clients_are_among_the_pods_the_driver_manager_stops_and_waits_for() -> None:
    tree = _tree()
    plugin = tree["pools/a100/daemonset-gpuconf-node.yaml"]["spec"]["template"]["spec"]
    # WaitForPodsWithNodeSelector waits for DaemonSet pods whose nodeSelector has the key;
    # evictAllGPUOperatorComponents set the node's value to paused-for-driver-upgrade first.
    assert plugin["nodeSelector"]["nvidia.com/gpu.deploy.client"] == "true"
    # Setup too: restarted after the new driver, it regenerates the CDI spec.
    setup = tree["pools/a100/daemonset-gpuconf-setup.yaml"]["spec"]["template"]["spec"]
    assert setup["nodeSelector"]["nvidia.com/gpu.deploy.client"] == "true"
    # Never the driver pod itself: the driver manager would wait for its own pod to go.
    assert (
        "nvidia.com/gpu.deploy.client" not in _driver_pod(tree)["template"]["spec"]["nodeSelector"]
    )
    other = tree["pools/t4/daemonset-gpuconf-node.yaml"]["spec"]["template"]["spec"]
    assert "nvidia.com/gpu.deploy.client" not in other["nodeSelector"]


# --- the startup probe: the rollout moves on only once the new driver answers ---------------


def _probe(tmp_path: Path, nvidia_smi: str | None, version: str = "550.90.07") -> tuple[int, bool]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    if nvidia_smi is not None:
        tool = bin_dir / "nvidia-smi"
        tool.write_text(f"#!/bin/sh\n{nvidia_smi}\n")
        tool.chmod(0o755)
    validations = tmp_path / "validations"
    command = validate_driver_command(version).replace("/run/nvidia/validations", str(validations))
    path = f"{bin_dir}:/usr/bin:/bin"
    result = subprocess.run(
        ["sh", "-c", command], env={**os.environ, "PATH": path}, capture_output=True, check=False
    )
    return result.returncode, (validations / "driver-ready").exists()


def test_the_probe_passes_and_marks_ready_when_every_gpu_reports_the_new_version(
    tmp_path: Path,
) -> None:
    assert _probe(tmp_path, "printf '550.90.07\\n550.90.07\\n'") == (0, True)


@pytest.mark.parametrize(
    "nvidia_smi",
    [
        "printf '550.54.15\\n550.54.15\\n'",  # still the old driver
        "printf '550.90.07\\n550.54.15\\n'",  # one GPU on the old one
        "echo 'NVIDIA-SMI has failed' >&2; exit 9",  # no driver loaded
        "true",  # answers, but with no GPU
        "printf '550.90.070\\n'",  # a longer version is another version
    ],
    ids=["old-version", "mixed", "no-driver", "no-gpus", "prefix-only"],
)
def test_the_probe_fails_and_leaves_no_marker_until_the_new_driver_answers(
    tmp_path: Path, nvidia_smi: str
) -> None:
    code, marked = _probe(tmp_path, nvidia_smi)
    assert code != 0
    assert not marked


def test_the_probe_is_the_installers_startup_probe() -> None:
    (container,) = _driver_pod(_tree())["template"]["spec"]["containers"]
    assert container["startupProbe"]["exec"]["command"] == [
        "sh",
        "-c",
        validate_driver_command("550.90.07"),
    ]


@pytest.mark.parametrize(("version", "warned"), [("1.32", True), ("1.33", True), ("1.34", False)])
def test_under_dra_the_driver_manager_evicts_claim_holders_only_where_v1_is_served(
    version: str, warned: bool
) -> None:
    """v0.12.0 reads a pod's claims through ResourceV1() alone (podHasGPUResourceClaim): on
    1.32/1.33, which serve only the beta APIs, it finds no GPU pod to evict."""
    document = as_dra(
        cluster(
            [
                pool(
                    "a100",
                    "A100-SXM4-80GB",
                    8,
                    size=4,
                    driver={"version": "550.90.07", "install": True},
                )
            ],
            [{"name": "a100", "select": {"pools": ["a100"]}}],
        ),
        version,
    )
    warnings = [d for d in valid(document).warnings if "cannot evict pods" in d.message]
    assert bool(warnings) == warned
    assert all(d.path == ("spec", "nodePools", 0, "driver", "version") for d in warnings)
