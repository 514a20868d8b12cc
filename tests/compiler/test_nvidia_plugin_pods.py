"""With plugin: nvidia, the rendered pods are NVIDIA's plugin as NVIDIA's chart runs it: the
release asked for, MPS with its control daemon and mounts, MIG privileges, a config hash that
rolls a changed config out, and a step aside while the MIG manager repartitions."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from builders import cluster, configmap_data, errors, load_yaml, pool, rendered, valid

PLUGIN = "pools/{}/daemonset-nvidia-device-plugin.yaml"
MPS_DAEMON = "pools/{}/daemonset-nvidia-mps-control-daemon.yaml"
CONFIG = "pools/{}/configmap-nvidia-device-plugin.yaml"


def _nvidia(classes: list[dict[str, Any]], *pools: dict[str, Any], **spec: Any) -> dict[str, Any]:
    return cluster(list(pools) or [pool("t4", "Tesla-T4", 2)], classes, plugin="nvidia", **spec)


def _time_sliced(replicas: int = 4, **extra: Any) -> dict[str, Any]:
    return {
        "name": "shared",
        "select": {"pools": ["t4"]},
        "sharing": {"strategy": "time-slicing", "replicas": replicas},
        **extra,
    }


def _pod(tree: dict[str, bytes], path: str) -> dict[str, Any]:
    return load_yaml(tree[path])["spec"]["template"]  # type: ignore[no-any-return]


def _mounts(container: dict[str, Any]) -> dict[str, str]:
    return {m["name"]: m["mountPath"] for m in container["volumeMounts"]}


def _host_paths(pod: dict[str, Any]) -> dict[str, str]:
    return {v["name"]: v["hostPath"]["path"] for v in pod["spec"]["volumes"] if "hostPath" in v}


def test_nvidia_plugin_v0_20_0_is_the_default_image() -> None:
    tree = rendered(_nvidia([_time_sliced()]))
    container = _pod(tree, PLUGIN.format("t4"))["spec"]["containers"][0]
    assert container["image"] == "nvcr.io/nvidia/k8s-device-plugin:v0.20.0"


def test_an_older_release_gets_its_own_image_and_no_allocation_policy() -> None:
    tree = rendered(_nvidia([_time_sliced()], nvidiaPlugin={"version": "v0.19.3"}))
    container = _pod(tree, PLUGIN.format("t4"))["spec"]["containers"][0]
    assert container["image"] == "nvcr.io/nvidia/k8s-device-plugin:v0.19.3"
    config = configmap_data(tree, CONFIG.format("t4"), "config.yaml")
    assert "sharedDevicesAllocationPolicy" not in config["flags"]["plugin"]


@pytest.mark.parametrize(("policy", "nvidia"), [("spread", "distributed"), ("pack", "packed")])
def test_allocation_policy_becomes_nvidias_shared_devices_allocation_policy(
    policy: str, nvidia: str
) -> None:
    tree = rendered(_nvidia([_time_sliced(allocationPolicy=policy)]))
    config = configmap_data(tree, CONFIG.format("t4"), "config.yaml")
    assert config["flags"]["plugin"]["sharedDevicesAllocationPolicy"] == nvidia


def test_packing_is_refused_on_a_release_that_always_spreads() -> None:
    found = errors(
        _nvidia([_time_sliced(allocationPolicy="pack")], nvidiaPlugin={"version": "v0.19.3"})
    )
    assert [d.path for d in found] == [("spec", "resourceClasses", 0, "allocationPolicy")]
    assert "v0.20.0" in found[0].hint


def test_an_image_of_another_release_than_the_version_is_refused() -> None:
    document = _nvidia(
        [_time_sliced()],
        images={"nvidiaDevicePlugin": "nvcr.io/nvidia/k8s-device-plugin:v0.17.0"},
        nvidiaPlugin={"version": "v0.20.0"},
    )
    found = errors(document)
    assert [d.path for d in found] == [("spec", "images", "nvidiaDevicePlugin")]
    assert "nvidiaPlugin.version: v0.17.0" in found[0].hint


def test_a_pinned_image_alone_decides_the_release() -> None:
    image = "nvcr.io/nvidia/k8s-device-plugin:v0.17.0"
    tree = rendered(_nvidia([_time_sliced()], images={"nvidiaDevicePlugin": image}))
    assert _pod(tree, PLUGIN.format("t4"))["spec"]["containers"][0]["image"] == image
    config = configmap_data(tree, CONFIG.format("t4"), "config.yaml")
    assert "sharedDevicesAllocationPolicy" not in config["flags"]["plugin"]


def test_an_image_of_a_release_gpuconf_cannot_write_for_is_refused() -> None:
    image = "nvcr.io/nvidia/k8s-device-plugin:v0.16.2"
    found = errors(_nvidia([_time_sliced()], images={"nvidiaDevicePlugin": image}))
    assert [d.path for d in found] == [("spec", "images", "nvidiaDevicePlugin")]
    assert "v0.17.0 to v0.20.0" in found[0].message


def test_a_mirrored_image_of_the_same_release_is_used_as_given() -> None:
    image = "registry.example.com/nvidia/k8s-device-plugin:v0.20.0"
    tree = rendered(_nvidia([_time_sliced()], images={"nvidiaDevicePlugin": image}))
    assert _pod(tree, PLUGIN.format("t4"))["spec"]["containers"][0]["image"] == image


def test_a_config_change_changes_the_pod_template_so_the_plugin_restarts() -> None:
    before = _pod(rendered(_nvidia([_time_sliced(4)])), PLUGIN.format("t4"))
    after = _pod(rendered(_nvidia([_time_sliced(8)])), PLUGIN.format("t4"))
    again = _pod(rendered(_nvidia([_time_sliced(8)])), PLUGIN.format("t4"))
    key = "gpuconf.dev/config-sha256"
    assert before["metadata"]["annotations"][key] != after["metadata"]["annotations"][key]
    assert after == again


def test_mps_renders_nvidias_control_daemon_with_the_charts_mounts() -> None:
    mps = {
        "name": "mps",
        "select": {"pools": ["t4"]},
        "sharing": {"strategy": "mps", "replicas": 4},
    }
    tree = rendered(_nvidia([mps]))
    plugin = _pod(tree, PLUGIN.format("t4"))
    daemon = _pod(tree, MPS_DAEMON.format("t4"))
    assert _mounts(plugin["spec"]["containers"][0])["mps-root"] == "/mps"
    assert _mounts(plugin["spec"]["containers"][0])["mps-shm"] == "/dev/shm"
    assert _host_paths(plugin) == _host_paths(daemon) | {
        "device-plugins": "/var/lib/kubelet/device-plugins"
    }
    assert _host_paths(daemon) == {
        "mps-root": "/run/nvidia/mps",
        "mps-shm": "/run/nvidia/mps/shm",
        "gpuconf-setup-marker": "/run/gpuconf",
    }
    [init] = [
        c for c in daemon["spec"]["initContainers"] if c["name"] == "mps-control-daemon-mounts"
    ]
    assert init["command"] == ["mps-control-daemon", "mount-shm"]
    assert init["volumeMounts"] == [
        {"name": "mps-root", "mountPath": "/mps", "mountPropagation": "Bidirectional"}
    ]
    main = daemon["spec"]["containers"][0]
    assert main["command"] == ["mps-control-daemon"]
    assert _mounts(main) == {
        "mps-root": "/mps",
        "mps-shm": "/dev/shm",
        "config": "/etc/nvidia-device-plugin",
    }
    assert {"name": "CONFIG_FILE", "value": "/etc/nvidia-device-plugin/config.yaml"} in main["env"]
    assert daemon["spec"]["hostPID"] is True
    config = configmap_data(tree, CONFIG.format("t4"), "config.yaml")
    assert config["flags"]["mpsRoot"] == "/run/nvidia/mps"


def test_time_slicing_renders_no_mps_daemon_and_no_mps_mounts() -> None:
    tree = rendered(_nvidia([_time_sliced()]))
    assert MPS_DAEMON.format("t4") not in tree
    assert "mps-root" not in _mounts(_pod(tree, PLUGIN.format("t4"))["spec"]["containers"][0])


def test_mig_pools_give_the_plugin_sys_admin_and_mig_monitor_devices() -> None:
    mig = pool("h100", "H100-SXM5-80GB", 8, [{"strategy": "mig", "layout": "all-1g.10gb"}])
    classes = [
        {"name": "slices", "select": {"pools": ["h100"], "migProfile": "1g.10gb"}},
        {"name": "whole", "select": {"pools": ["t4"]}},
    ]
    # containerd 2.x: CDI by default; volume-mounts would add SYS_ADMIN as NVIDIA's chart does.
    cdi = {"engine": "containerd", "containerdConfigVersion": 3}
    tree = rendered(_nvidia(classes, mig, pool("t4", "Tesla-T4", 2, runtime=cdi)))
    with_mig = _pod(tree, PLUGIN.format("h100"))["spec"]["containers"][0]
    without = _pod(tree, PLUGIN.format("t4"))["spec"]["containers"][0]
    assert with_mig["securityContext"]["capabilities"] == {"drop": ["ALL"], "add": ["SYS_ADMIN"]}
    assert {"name": "NVIDIA_MIG_MONITOR_DEVICES", "value": "all"} in with_mig["env"]
    assert without["securityContext"]["capabilities"] == {"drop": ["ALL"]}
    assert all(e["name"] != "NVIDIA_MIG_MONITOR_DEVICES" for e in without["env"])


@pytest.mark.parametrize("path", [PLUGIN, MPS_DAEMON])
def test_nvidias_pods_step_aside_while_the_mig_manager_repartitions(path: str) -> None:
    mps = {
        "name": "mps",
        "select": {"pools": ["t4"]},
        "sharing": {"strategy": "mps", "replicas": 4},
    }
    pod = _pod(rendered(_nvidia([mps])), path.format("t4"))
    terms = pod["spec"]["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"
    ]
    assert terms["nodeSelectorTerms"] == [
        {
            "matchExpressions": [
                {
                    "key": "nvidia.com/gpu.deploy.device-plugin",
                    "operator": "NotIn",
                    "values": ["false", "paused-for-mig-change"],
                }
            ]
        }
    ]


# --- migrating from NVIDIA's chart --------------------------------------------------------


def _migration(rename: bool) -> dict[str, Any]:
    classes = [
        _time_sliced(),
        {"name": "whole", "select": {"pools": ["a100"]}},
    ]
    return _nvidia(
        classes,
        pool("t4", "Tesla-T4", 2),
        pool("a100", "A100-SXM4-80GB", 8),
        nvidiaPlugin={"renameByDefault": rename},
        quotas=[{"namespace": "team", "classes": {"shared": 8, "whole": 4}}],
    )


def test_without_rename_shared_gpus_keep_nvidias_resource_name() -> None:
    validated = valid(_migration(rename=False))
    assert {c.name: c.resource_name for c in validated.classes} == {
        "shared": "nvidia.com/gpu",
        "whole": "nvidia.com/gpu",
    }
    tree = rendered(_migration(rename=False))
    config = configmap_data(tree, CONFIG.format("t4"), "config.yaml")
    assert config["sharing"]["timeSlicing"]["renameByDefault"] is False


def test_two_classes_with_one_name_on_different_pools_warn_that_quotas_add_them_up() -> None:
    validated = valid(_migration(rename=False))
    assert len(validated.warnings) == 1
    warning = validated.warnings[0]
    assert "a quota cannot tell them apart" in warning.message
    assert "renameByDefault: true" in warning.hint
    quota = load_yaml(rendered(_migration(rename=False))["quotas/team.yaml"])
    assert quota["spec"]["hard"] == {"requests.nvidia.com/gpu": "12"}


def test_with_rename_the_same_cluster_has_two_names_and_no_warning() -> None:
    validated = valid(_migration(rename=True))
    assert validated.warnings == ()
    assert {c.resource_name for c in validated.classes} == {
        "nvidia.com/gpu",
        "nvidia.com/gpu.shared",
    }


def test_one_name_twice_on_the_same_pool_is_still_refused() -> None:
    document = copy.deepcopy(_migration(rename=False))
    document["spec"]["nodePools"][0]["gpus"]["count"] = 2
    document["spec"]["resourceClasses"] = [
        {**_time_sliced(), "select": {"pools": ["t4"], "indices": [0]}},
        {"name": "whole", "select": {"pools": ["t4"], "indices": [1]}},
    ]
    document["spec"]["quotas"] = []
    assert errors(document)
