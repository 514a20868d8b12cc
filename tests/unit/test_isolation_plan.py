"""What the compiler renders for isolation: device list per engine, MPS and pod-resources mounts,
XID classes, and the privileges MIG and MPS need."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from builders import cluster, compile_example, configmap_data, load_yaml, pool, rendered

from gpuconf.gpus.xid import APPLICATION_XIDS, RESET_XIDS
from gpuconf.node.commands.parser import build_parser


def node_config_of(document: dict[str, Any], pool_name: str) -> Any:
    tree = rendered(document)
    path = f"pools/{pool_name}/configmap-node-config.yaml"
    return configmap_data(tree, path, "node-config.yaml")


def pod_of(document: dict[str, Any], pool_name: str) -> Any:
    tree = rendered(document)
    return load_yaml(tree[f"pools/{pool_name}/daemonset-gpuconf-node.yaml"])["spec"]["template"][
        "spec"
    ]


@pytest.mark.parametrize(
    ("runtime", "strategy"),
    [
        ({"engine": "containerd", "containerdConfigVersion": 3}, "cdi"),
        ({"engine": "k3s"}, "volume-mounts"),
        ({"engine": "containerd"}, "volume-mounts"),
        ({"engine": "docker"}, "volume-mounts"),
    ],
    ids=["containerd-2", "k3s", "containerd-1", "docker"],
)
def test_the_default_device_list_is_cdi_only_where_the_engine_runs_it(
    runtime: dict[str, Any], strategy: str
) -> None:
    document = cluster([pool("t4", "Tesla-T4", 1, runtime=runtime)], [])
    assert node_config_of(document, "t4")["deviceListStrategy"] == strategy


def test_nvidia_plugin_gets_cdi_as_cdi_cri() -> None:
    runtime = {"engine": "containerd", "containerdConfigVersion": 3}
    classes = [{"name": "t4", "select": {"model": "Tesla-T4"}}]
    document = cluster([pool("t4", "Tesla-T4", 1, runtime=runtime)], classes, plugin="nvidia")
    tree = rendered(document)
    config = configmap_data(tree, "pools/t4/configmap-nvidia-device-plugin.yaml", "config.yaml")
    assert config["flags"]["plugin"]["deviceListStrategy"] == ["cdi-cri"]


def test_xid_classes_default_to_the_catalog_and_an_ignored_xid_is_never_a_reset() -> None:
    document = cluster([pool("t4", "Tesla-T4", 1)], [])
    health = node_config_of(document, "t4")["health"]
    assert (health["ignoredXids"], health["resetXids"]) == (
        list(APPLICATION_XIDS),
        list(RESET_XIDS),
    )
    document["spec"]["node"] = {"health": {"ignoredXids": [13, 109]}}
    health = node_config_of(document, "t4")["health"]
    assert health["ignoredXids"] == [13, 109]
    assert 109 not in health["resetXids"]


def test_the_node_pod_reads_pod_resources_and_shares_mps_pipes_and_shm() -> None:
    classes = [
        {
            "name": "t4-mps",
            "select": {"model": "Tesla-T4"},
            "sharing": {"strategy": "mps", "replicas": 4},
        }
    ]
    pod = pod_of(cluster([pool("t4", "Tesla-T4", 1)], classes), "t4")
    container = pod["containers"][0]
    mounts = {m["mountPath"]: m for m in container["volumeMounts"]}
    assert mounts["/var/lib/kubelet/pod-resources"]["readOnly"] is True
    assert "readOnly" not in mounts["/run/nvidia/mps"]
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert volumes[mounts["/dev/shm"]["name"]]["hostPath"]["path"] == "/run/nvidia/mps/shm"
    env = {e["name"]: e.get("value") for e in container["env"]}
    assert env["NVIDIA_DRIVER_CAPABILITIES"] == "compute,utility"
    assert container["securityContext"]["capabilities"] == {"drop": ["ALL"], "add": ["SYS_ADMIN"]}
    sharing = node_config_of(cluster([pool("t4", "Tesla-T4", 1)], classes), "t4")["resources"][0][
        "sharing"
    ]
    assert sharing["mpsPipeDirectory"] == "/run/nvidia/mps/t4-mps/pipe"
    assert sharing["mpsShmDirectory"] == "/run/nvidia/mps/shm"


def test_a_pool_without_mig_or_mps_keeps_every_capability_dropped() -> None:
    classes = [{"name": "t4", "select": {"model": "Tesla-T4"}}]
    container = pod_of(cluster([pool("t4", "Tesla-T4", 1)], classes), "t4")["containers"][0]
    assert container["securityContext"]["capabilities"] == {"drop": ["ALL"]}
    assert "NVIDIA_MIG_MONITOR_DEVICES" not in {e["name"] for e in container["env"]}


def test_a_pool_with_mig_classes_may_monitor_every_mig_device() -> None:
    compiled = compile_example("mig")
    text = compiled.rendered["mig"]["pools/a100/daemonset-gpuconf-node.yaml"]
    container = load_yaml(text)["spec"]["template"]["spec"]["containers"][0]
    env = {e["name"]: e.get("value") for e in container["env"]}
    assert env["NVIDIA_MIG_MONITOR_DEVICES"] == "all"
    assert container["securityContext"]["capabilities"]["add"] == ["SYS_ADMIN"]


def test_the_node_runtimes_default_state_dir_and_pod_resources_socket_are_mounted() -> None:
    classes = [{"name": "t4", "select": {"model": "Tesla-T4"}}]
    container = pod_of(cluster([pool("t4", "Tesla-T4", 1)], classes), "t4")["containers"][0]
    arguments = [a.replace("$(NODE_NAME)", "n") for a in container["command"][2:]]
    options = build_parser().parse_args(arguments)
    mounts = {m["mountPath"]: m for m in container["volumeMounts"]}
    assert "readOnly" not in mounts[options.state_dir]
    assert mounts[str(Path(options.pod_resources_socket).parent)]["readOnly"] is True
