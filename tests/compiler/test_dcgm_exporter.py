"""NVIDIA's dcgm-exporter runs on every GPU pool and is told every resource gpuconf advertises
there, so each GPU series carries the pod holding the GPU.

The device-ID parsing below is dcgm-exporter's, NVIDIA/dcgm-exporter 4.5.3-4.8.2 (commit
d5e5f510), internal/pkg/transformation/kubernetes.go: toDeviceToPod (a pod's devices count for
nvidia.com/gpu, names starting nvidia.com/mig-, or names in NVIDIA_RESOURCE_NAMES; an ID
starting MIG- is a MIG device, its `::N` suffix stripped by stripVGPUSuffix; an ID with `::`
is replica N of the GPU before it; any other ID is the GPU's UUID).
"""

from __future__ import annotations

from typing import Any

import pytest
from builders import (
    EXAMPLES,
    RENDERED,
    cluster_file,
    configmap_data,
    gpu_uuid,
    load_yaml,
    mig_uuid,
    read_tree,
    rendered,
    resource_settings,
)
from crd_schemas import crd_errors

from gpuconf.node.devices import build_devices
from gpuconf.node.nvml.api import GpuInfo, MigDevice

NVIDIA_RESOURCE_NAME = "nvidia.com/gpu"
NVIDIA_MIG_RESOURCE_PREFIX = "nvidia.com/mig-"
MIG_UUID_PREFIX = "MIG-"


def dcgm_counts(resource_name: str, listed: list[str]) -> bool:
    return (
        resource_name == NVIDIA_RESOURCE_NAME
        or resource_name in listed
        or resource_name.startswith(NVIDIA_MIG_RESOURCE_PREFIX)
    )


def dcgm_device_key(device_id: str) -> str:
    """The key toDeviceToPod files a device ID under (MIG: the MIG UUID it asks NVML about)."""
    if device_id.startswith(MIG_UUID_PREFIX):
        return device_id.split("::", 1)[0]
    if "::" in device_id:
        return device_id.split("::")[0]
    return device_id


def _env(daemonset: dict[str, Any]) -> dict[str, str]:
    [container] = daemonset["spec"]["template"]["spec"]["containers"]
    return {e["name"]: e.get("value", "") for e in container["env"]}


def _gpu_pools(tree: dict[str, bytes]) -> list[str]:
    return sorted(
        path.split("/")[1]
        for path in tree
        if path.startswith("pools/") and path.endswith("configmap-node-config.yaml")
    )


@pytest.mark.parametrize("example", EXAMPLES)
def test_every_gpu_pool_has_an_exporter_told_every_resource_advertised_there(
    example: str,
) -> None:
    tree = read_tree(RENDERED / example)
    monitor = tree.get("monitoring/podmonitor-dcgm-exporter.yaml")
    for pool in _gpu_pools(tree):
        config = configmap_data(
            tree, f"pools/{pool}/configmap-node-config.yaml", "node-config.yaml"
        )
        path = f"pools/{pool}/daemonset-dcgm-exporter.yaml"
        if config.get("platform") == "tegra":
            assert path not in tree  # no DCGM on a Jetson
            continue
        daemonset = load_yaml(tree[path])
        env = _env(daemonset)
        listed = env["NVIDIA_RESOURCE_NAMES"].split(",") if env.get("NVIDIA_RESOURCE_NAMES") else []
        advertised = {r["name"] for r in config.get("resources", [])}
        dra = cluster_file(example)["spec"].get("allocation") == "dra"
        if not dra:
            assert all(dcgm_counts(name, listed) for name in advertised), (pool, listed)
        assert env["KUBERNETES_ENABLE_DRA"] == str(dra).lower()
        shared = any(r["sharing"].get("replicas", 1) > 1 for r in config.get("resources", []))
        assert env["KUBERNETES_VIRTUAL_GPUS"] == str(shared and not dra).lower()
        pod = daemonset["spec"]["template"]["spec"]
        mounts = {m["mountPath"] for m in pod["containers"][0]["volumeMounts"]}
        assert "/var/lib/kubelet/pod-resources" in mounts
        image = pod["containers"][0]["image"]
        assert ":" in image.rsplit("/", 1)[1]
        assert not image.endswith(":latest")
        if cluster_file(example)["spec"].get("node", {}).get("monitoring", {}).get("podMonitor"):
            assert monitor is not None
            selector = load_yaml(monitor)["spec"]["selector"]["matchLabels"]
            assert selector.items() <= daemonset["spec"]["template"]["metadata"]["labels"].items()


def _fake_gpu(index: int, mig: bool = False) -> GpuInfo:
    migs = (MigDevice(mig_uuid(index, 1), "1g.10gb", 1, 0),) if mig else ()
    return GpuInfo(
        index, gpu_uuid(index), "NVIDIA A100-SXM4-80GB", 81920, f"0000:{index:02x}:00.0",
        mig_enabled=mig, mig_devices=migs, mig_capable=mig,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("sharing", "mig"),
    [({"strategy": "none"}, False), ({"strategy": "time-slicing", "replicas": 4}, False),
     ({"strategy": "mps", "replicas": 2}, False), ({"strategy": "none"}, True),
     ({"strategy": "time-slicing", "replicas": 2}, True)],
    ids=["whole", "time-sliced", "mps", "mig", "time-sliced mig"],
)  # fmt: skip
def test_dcgm_exporter_parses_gpuconf_s_device_ids_back_to_their_gpu(
    sharing: dict[str, Any], mig: bool
) -> None:
    settings: dict[str, Any] = {
        "name": "gpuconf.dev/a", "class": "a", "gpus": {"default": [0, 1]}, "sharing": sharing,
    }  # fmt: skip
    if mig:
        settings["migProfile"] = "1g.10gb"
    resource = resource_settings(settings)
    gpus = {i: _fake_gpu(i, mig) for i in (0, 1)}
    built = build_devices(resource, gpus, [0, 1])
    assert built.devices
    assert not built.problems
    for device in built.devices:
        assert dcgm_device_key(device.id) == (device.mig_uuid or device.gpu_uuid)


def test_a_cluster_can_turn_the_exporter_off() -> None:
    document = cluster_file("lab")
    document["spec"]["dcgmExporter"] = {"enabled": False}
    document["spec"]["node"] = {"monitoring": {"podMonitor": True}}
    tree = rendered(document)
    assert not [p for p in tree if "dcgm-exporter" in p]


def test_monitors_carry_the_extra_labels_kube_prometheus_stack_selects_on() -> None:
    document = cluster_file("lab")
    extra = {"release": "kube-prometheus-stack"}
    document["spec"]["node"] = {"monitoring": {"podMonitor": True, "extraLabels": extra}}
    tree = rendered(document)
    for name in ("gpuconf-node", "dcgm-exporter"):
        monitor = load_yaml(tree[f"monitoring/podmonitor-{name}.yaml"])
        assert crd_errors(monitor) == []
        assert extra.items() <= monitor["metadata"]["labels"].items()
        relabelled = {
            r.get("targetLabel") for r in monitor["spec"]["podMetricsEndpoints"][0]["relabelings"]
        }
        assert {"gpuconf_pool", "node"} <= relabelled


def test_on_dra_clusters_the_exporter_reads_claims_with_rights_to_list_resource_slices() -> None:
    tree = read_tree(RENDERED / "dra-lab")
    [pool, *_] = _gpu_pools(tree)
    daemonset = load_yaml(tree[f"pools/{pool}/daemonset-dcgm-exporter.yaml"])
    assert _env(daemonset)["KUBERNETES_ENABLE_DRA"] == "true"
    assert daemonset["spec"]["template"]["spec"]["automountServiceAccountToken"] is True
    role = load_yaml(tree["telemetry/clusterrole-dcgm-exporter.yaml"])
    assert role["rules"] == [
        {
            "apiGroups": ["resource.k8s.io"],
            "resources": ["resourceslices"],
            "verbs": ["get", "list", "watch"],
        }
    ]
