"""Every mode gets a setup DaemonSet per pool, and nothing needs a GPU before setup is ready."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from builders import EXAMPLES, as_dra, check, cluster_file, load_yaml, rendered

from gpuconf.api.runtime_files import SETUP_READY_MARKER

WORKLOADS = {"DaemonSet", "Deployment", "StatefulSet", "Job"}
# Setup itself, and the driver it waits for, are the two pods that run before the marker.
BEFORE_SETUP = {"gpuconf-setup", "nvidia-driver"}


def modes(name: str) -> list[tuple[str, dict[str, Any]]]:
    """The example as written, and as the other modes it validates in."""
    data = cluster_file(name)
    variants = [("as written", data), ("dra", as_dra(data))]
    nvidia = copy.deepcopy(data)
    nvidia["spec"]["plugin"] = "nvidia"
    nvidia["spec"]["allocation"] = "device-plugin"
    variants.append(("nvidia plugin", nvidia))
    return [(mode, variant) for mode, variant in variants if not isinstance(check(variant), list)]


CASES = [
    pytest.param(variant, id=f"{name}-{mode}") for name in EXAMPLES for mode, variant in modes(name)
]


def pod_templates(document: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    tree = rendered(document)
    found = []
    for path, data in tree.items():
        if not path.endswith(".yaml") or path == "kustomization.yaml":
            continue
        obj = load_yaml(data)
        if obj.get("kind") in WORKLOADS:
            found.append((obj["spec"]["selector"]["matchLabels"]["app.kubernetes.io/name"], obj))
    return found


def waits_for_setup(pod: dict[str, Any]) -> bool:
    volumes = {v["name"]: v for v in pod.get("volumes", [])}
    for init in pod.get("initContainers", []):
        if init["command"][-1] != SETUP_READY_MARKER or init["command"][:3] != [
            "gpuconf",
            "node",
            "wait",
        ]:
            continue
        for mount in init.get("volumeMounts", []):
            source = volumes[mount["name"]].get("hostPath", {}).get("path")
            if source == mount["mountPath"] and SETUP_READY_MARKER.startswith(source + "/"):
                return True
    return False


def test_the_modes_cover_every_example_at_least_once_per_mode() -> None:
    ids = [case.id for case in CASES]
    assert {i.rsplit("-", 1)[-1] for i in ids} >= {"as written", "dra", "nvidia plugin"}


@pytest.mark.parametrize("document", CASES)
def test_every_pool_has_a_setup_daemonset_under_runc(document: dict[str, Any]) -> None:
    pools = {pool["name"] for pool in document["spec"]["nodePools"]}
    setups = {
        obj["metadata"]["labels"]["gpuconf.dev/pool"]: obj
        for name, obj in pod_templates(document)
        if name == "gpuconf-setup"
    }
    assert set(setups) == pools
    for workload in setups.values():
        pod = workload["spec"]["template"]["spec"]
        assert "runtimeClassName" not in pod
        assert pod["hostPID"] is True
        assert pod["containers"][0]["securityContext"] == {"privileged": True}


@pytest.mark.parametrize("document", CASES)
def test_no_gpu_pod_starts_before_setup_is_ready(document: dict[str, Any]) -> None:
    for name, workload in pod_templates(document):
        pod = workload["spec"]["template"]["spec"]
        if name in BEFORE_SETUP:
            assert pod.get("runtimeClassName") != "nvidia", name
            continue
        assert waits_for_setup(pod), f"{name} does not wait for {SETUP_READY_MARKER}"
