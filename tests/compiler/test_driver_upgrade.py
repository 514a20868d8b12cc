"""Driver upgrades that drain: what gpuconf renders for a pool whose driver it installs, held
against NVIDIA's k8s-driver-manager v0.12.0 (the init container that stops the GPU clients and
unloads) as read from its source, gpuconf's own drain and uncordon steps around it, and the
validation that keeps the rollout from moving on before the new driver answers. The DaemonSet
controller rolls the pods; these tests pin the contract between the containers of one pod (env
names and formats, commands as the node CLI parses them, RBAC for their calls, the label the
driver manager waits by). tests/control_plane/test_driver_upgrade_sequence.py runs the node's
steps against the real API server."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
from builders import as_dra, cluster, load_yaml, pool, rendered, valid

from gpuconf.compiler.plan.driver import validate_driver_command
from gpuconf.node.commands.driver_uncordon import validated_version
from gpuconf.node.commands.parser import build_parser

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
# Read by os.Getenv, not a flag: shouldUpdateDriverConfig (cmd/driver-manager/main.go v0.12.0).
DRIVER_MANAGER_GETENV = {"DRIVER_CONFIG_DIGEST"}
# What the container runtime reads, not the driver manager (the Operator's DaemonSet sets it too).
RUNTIME_ENV = {"NVIDIA_VISIBLE_DEVICES"}
# The API calls v0.12.0 makes with its eviction and drain off (internal/kubernetes/client.go):
# (API group, resource, verb).
DRIVER_MANAGER_CALLS = {
    ("", "nodes", "get"),  # GetNodeLabelValue, GetNodeAnnotationValue
    ("", "nodes", "patch"),  # UpdateNodeLabels (strategic merge)
    ("", "pods", "list"),  # WaitForPodTermination, WaitForPodsWithNodeSelector
    ("resource.k8s.io", "resourceclaims", "get"),  # GetGPUResourceClaimHolders
}
# gpuconf's driver-drain and driver-uncordon (node/driver_upgrade.py).
GPUCONF_CALLS = {
    ("", "nodes", "get"),  # the Node before each guarded patch
    ("", "nodes", "patch"),  # cordon, state label, uncordon
    ("", "pods", "list"),  # the node's pods
    ("", "pods/eviction", "create"),  # the Eviction API
    ("resource.k8s.io", "resourceclaims", "get"),  # which claims gpu.nvidia.com allocated
}
GO_DURATION = re.compile(r"^(\d+(\.\d+)?(ns|us|µs|ms|s|m|h))+$")


def _tree(images: dict[str, str] | None = None, **driver: Any) -> dict[str, Any]:
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
        **({"images": images} if images else {}),
    )
    return {p: load_yaml(t) for p, t in rendered(document).items() if p.endswith(".yaml")}


def _driver_pod(tree: dict[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = tree["pools/a100/daemonset-nvidia-driver.yaml"]["spec"]
    return spec


def _init_containers(tree: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["name"]: c for c in _driver_pod(tree)["template"]["spec"]["initContainers"]}


def test_gpuconf_drains_first_then_the_driver_manager_runs_with_every_variable_it_reads() -> None:
    init = _driver_pod(_tree())["template"]["spec"]["initContainers"]
    assert [c["name"] for c in init] == ["gpuconf-driver-drain", "k8s-driver-manager"]
    manager = init[1]
    assert manager["command"] == ["driver-manager"]
    assert manager["args"] == ["uninstall_driver"]
    assert manager["image"].endswith(":v0.12.0")
    env = {e["name"]: e for e in manager["env"]}
    assert set(env) - RUNTIME_ENV <= set(DRIVER_MANAGER_ENV) | DRIVER_MANAGER_GETENV
    for name, entry in env.items():
        kind = DRIVER_MANAGER_ENV.get(name, "string")
        if kind == "bool":
            assert entry["value"] in {"true", "false"}, name
        if kind == "duration":
            assert GO_DURATION.match(entry["value"]), name
    # Both off: it then neither cordons, evicts nor uncordons (uninstallDriver), so the cordon
    # gpuconf's drain made holds until the new driver is validated.
    assert env["ENABLE_GPU_POD_EVICTION"]["value"] == "false"
    assert env["ENABLE_AUTO_DRAIN"]["value"] == "false"
    assert not [name for name in env if name.startswith("DRAIN_")]
    assert env["NODE_NAME"]["valueFrom"]["fieldRef"]["fieldPath"] == "spec.nodeName"


def test_the_drain_reads_the_pools_node_config_and_its_eviction_timeout() -> None:
    tree = _tree(evictionTimeoutSeconds=90)
    drain = _init_containers(tree)["gpuconf-driver-drain"]
    options = build_parser().parse_args(drain["command"][2:])
    assert (options.command, options.timeout, options.node_name) == (
        "driver-drain",
        90,
        "$(NODE_NAME)",
    )
    (mount,) = [m for m in drain["volumeMounts"] if m["name"] == "node-config"]
    assert options.config == f"{mount['mountPath']}/node-config.yaml"
    volumes = {v["name"]: v for v in _driver_pod(tree)["template"]["spec"]["volumes"]}
    config_map = tree["pools/a100/configmap-node-config.yaml"]
    assert volumes[mount["name"]]["configMap"]["name"] == config_map["metadata"]["name"]
    assert "node-config.yaml" in config_map["data"]


def test_the_uncordon_waits_for_the_markers_the_driver_probe_and_setup_write() -> None:
    pod = _driver_pod(_tree())["template"]["spec"]
    containers = {c["name"]: c for c in pod["containers"]}
    uncordon = containers["gpuconf-driver-uncordon"]
    options = build_parser().parse_args(uncordon["command"][2:])
    assert options.command == "driver-uncordon"
    assert options.driver_ready == "/run/nvidia/validations/driver-ready"
    assert options.setup_ready == "/run/gpuconf/setup-ready"
    mounted = {m["mountPath"] for m in uncordon["volumeMounts"]}
    assert {"/run/nvidia/validations", "/run/gpuconf"} <= mounted
    # The pod turns Ready, and the rollout moves on, only once the node is uncordoned.
    assert uncordon["startupProbe"]["exec"]["command"] == ["cat", options.done_file]
    assert any(options.done_file.startswith(path + "/") for path in mounted)


def _digests(tree: dict[str, Any]) -> dict[str, str]:
    """DRIVER_CONFIG_DIGEST as each container of the installer's pod gets it."""
    pod = _driver_pod(tree)["template"]["spec"]
    found = {}
    for container in [*pod["initContainers"], *pod["containers"]]:
        env = {e["name"]: e.get("value") for e in container.get("env") or []}
        if "DRIVER_CONFIG_DIGEST" in env:
            found[container["name"]] = env["DRIVER_CONFIG_DIGEST"]
    drain = _init_containers(tree)["gpuconf-driver-drain"]
    found["gpuconf-driver-drain"] = build_parser().parse_args(drain["command"][2:]).config_digest
    return found


def test_the_driver_and_its_manager_get_one_config_digest_and_the_drain_compares_with_it() -> None:
    # The GPU Operator sets it on these two (controllers/object_controls.go v26.7.0); the
    # driver manager reads it in shouldUpdateDriverConfig, the driver container stores it.
    digests = _digests(_tree())
    assert set(digests) == {"k8s-driver-manager", "nvidia-driver", "gpuconf-driver-drain"}
    assert len(set(digests.values())) == 1
    assert all(digests.values())


def test_a_gpuconf_image_bump_rolls_the_pods_but_keeps_the_driver_config_digest() -> None:
    before = _tree()
    after = _tree(images={"gpuconf": "ghcr.io/gpuconf/gpuconf:0.2.0"})
    assert _driver_pod(before)["template"] != _driver_pod(after)["template"]
    assert _digests(before) == _digests(after)


@pytest.mark.parametrize(
    ("images", "driver"),
    [
        ({}, {"version": "560.35.03"}),
        ({"driver": "registry.example/nvidia/driver"}, {}),
        ({"driverManager": "nvcr.io/nvidia/cloud-native/k8s-driver-manager:v0.13.0"}, {}),
    ],
    ids=["driver version", "driver repository", "driver manager"],
)
def test_what_decides_the_installed_driver_changes_the_digest(
    images: dict[str, str], driver: dict[str, str]
) -> None:
    changed = _digests(_tree(images=images, **driver))
    assert set(changed.values()).isdisjoint(_digests(_tree()).values())


def test_the_drain_reads_the_driver_state_file_and_asks_the_hosts_nvidia_smi_read_only() -> None:
    pod = _driver_pod(_tree())["template"]["spec"]
    drain = _init_containers(_tree())["gpuconf-driver-drain"]
    options = build_parser().parse_args(drain["command"][2:])
    # k8s-driver-manager's driverConfigStateFile (cmd/driver-manager/main.go v0.12.0).
    assert options.state_file == "/run/nvidia/nvidia-driver.state"
    mounts = {m["mountPath"]: m for m in drain["volumeMounts"]}
    volumes = {v["name"]: v for v in pod["volumes"]}
    run_nvidia = mounts["/run/nvidia"]
    assert run_nvidia["readOnly"]
    assert volumes[run_nvidia["name"]]["hostPath"]["path"] == "/run/nvidia"
    host = mounts[options.host_root]
    assert host["readOnly"]
    assert volumes[host["name"]]["hostPath"]["path"] == "/"
    # As the driver manager's isHostDriver: nvidia-smi must open the host's /dev/nvidia*.
    assert drain["securityContext"]["privileged"]


def test_the_uncordon_waits_for_the_declared_version() -> None:
    containers = {c["name"]: c for c in _driver_pod(_tree())["template"]["spec"]["containers"]}
    command = containers["gpuconf-driver-uncordon"]["command"]
    assert build_parser().parse_args(command[2:]).version == "550.90.07"


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
    assert granted >= DRIVER_MANAGER_CALLS | GPUCONF_CALLS
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


def test_the_probe_passes_and_marks_ready_with_the_version_every_gpu_reports(
    tmp_path: Path,
) -> None:
    assert _probe(tmp_path, "printf '550.90.07\\n550.90.07\\n'") == (0, True)
    marker = tmp_path / "validations" / "driver-ready"
    assert marker.read_text() == "550.90.07\n550.90.07\n"
    assert validated_version(marker) == "550.90.07"
    assert not (tmp_path / "validations" / "driver-ready.new").exists()


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
    container = _driver_pod(_tree())["template"]["spec"]["containers"][0]
    assert container["name"] == "nvidia-driver"
    assert container["startupProbe"]["exec"]["command"] == [
        "sh",
        "-c",
        validate_driver_command("550.90.07"),
    ]


@pytest.mark.parametrize("version", ["1.32", "1.33", "1.34"])
def test_under_dra_a_driver_change_is_not_warned_about_since_gpuconf_reads_any_claim_version(
    version: str,
) -> None:
    """NVIDIA's driver manager reads claims through resource.k8s.io/v1 alone; gpuconf's drain
    reads whichever version the server prefers (node/driver_upgrade.py claim_reader)."""
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
    assert not [d for d in valid(document).warnings if "driver" in d.message]


@pytest.mark.parametrize(("version", "rendered_policy"), [("1.29", False), ("1.30", True)])
def test_the_own_node_policy_of_the_installers_account_comes_with_admission_policies(
    version: str, rendered_policy: bool
) -> None:
    document = cluster(
        [
            pool(
                "a100",
                "A100-SXM4-80GB",
                8,
                size=4,
                driver={"version": "550.90.07", "install": True},
            )
        ],
        [],
    )
    document["spec"]["kubernetes"]["version"] = version
    paths = set(rendered(document))
    policy = "cluster/validatingadmissionpolicy-gpuconf-driver-manager.yaml"
    assert (policy in paths) == rendered_policy
