"""A driver upgrade's Node side (node/driver_upgrade.py: what `gpuconf node driver-drain` and
`driver-uncordon` do) against the real API server, as the installer's service account with a
token bound to a pod on its Node, under the rendered RBAC and own-Node admission policy of
rendered/fleet: cordon, eviction of exactly the pods holding GPUs through the Eviction API, a
PodDisruptionBudget's 429 retried until the timeout and then a give-up state, uncordon only
after the new driver is validated. There is no kubelet: the test plays it between the drain's
turns (it ends the pods the Eviction API marked for deletion, and reports pods Running)."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import kubernetes
import pytest
import yaml
from builders import RENDERED
from control_plane.manifests import SETUP_MANAGER, delete_objects, ensure_namespaces
from control_plane.server import Refused, Server
from in_pod import as_pod_of

from gpuconf.api.driver_upgrade import CORDONED_ANNOTATION, UPGRADE_LABEL, VERSION_LABEL
from gpuconf.errors import UserError
from gpuconf.node.commands.parser import main as node_main
from gpuconf.node.driver_upgrade import Blocked, NodeUpgrade, claim_reader

FLEET = RENDERED / "fleet"
ACCOUNT_FILES = [
    "cluster/serviceaccount-gpuconf-driver-manager.yaml",
    "cluster/clusterrole-gpuconf-driver-manager.yaml",
    "cluster/clusterrolebinding-gpuconf-driver-manager.yaml",
    "cluster/validatingadmissionpolicy-gpuconf-driver-manager.yaml",
    "cluster/validatingadmissionpolicybinding-gpuconf-driver-manager.yaml",
]
SYSTEM, ACCOUNT = "gpuconf-system", "gpuconf-driver-manager"
NODE, OTHER, WORKLOADS = "gpu-node-driver", "gpu-node-beside", "gpuconf-test-driver-drain"
GPUCONF_RESOURCE = "gpus.example.com/a100-train"
"""A class's own resourceName (clusters/fleet.yaml): read from the pool's node config."""
WRONG_NODE = "gpuconf-driver-manager may change only the Node its pod runs on"
MERGE = "application/merge-patch+json"


def _pod(name: str, resources: dict[str, str] | None = None, node: str = NODE) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "job", "image": "registry.k8s.io/pause:3.10"}
    if resources:
        container["resources"] = {"limits": resources}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": WORKLOADS, "labels": {"app": name.split("-")[0]}},
        "spec": {"nodeName": node, "containers": [container]},
    }


BUDGET = {
    "apiVersion": "policy/v1",
    "kind": "PodDisruptionBudget",
    "metadata": {"name": "trainer", "namespace": WORKLOADS},
    "spec": {"minAvailable": 2, "selector": {"matchLabels": {"app": "trainer"}}},
}
SPARE = _pod("trainer-2", node=OTHER)
"""Another trainer turning Ready lets the budget allow one disruption."""
PODS = [
    _pod("trainer-0", {GPUCONF_RESOURCE: "1"}),
    _pod("notebook-0", {"nvidia.com/gpu": "1"}),
    _pod("web-0"),  # no GPU: it stays
    _pod("trainer-1", {GPUCONF_RESOURCE: "1"}, node=OTHER),  # another node's: it stays
]


def _running(server: Server, name: str) -> None:
    """Report the pod Running and Ready, as its kubelet would."""
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    status = {
        "phase": "Running",
        "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": now}],
    }
    path = server.path("v1", "Pod", WORKLOADS, name) + "/status"
    server.request("PATCH", path, {"status": status}, content_type=MERGE)


def _policy_enforced(installer: Server) -> None:
    """A new policy takes effect once the server's informers see it."""
    probe = {"metadata": {"labels": {UPGRADE_LABEL: "probe"}}}
    deadline = time.monotonic() + 30
    while True:
        try:
            path = installer.path("v1", "Node", "", OTHER)
            installer.request("PATCH", path, probe, [("dryRun", "All")], MERGE)
        except Refused as refused:
            if WRONG_NODE in refused.message:
                return
        if time.monotonic() > deadline:
            raise TimeoutError("the installer's own-Node policy was not enforced within 30 s")
        time.sleep(0.2)


@pytest.fixture
def token(api_server: Server) -> Iterator[str]:
    """The installer's account's token, as its pod on NODE holds it, with the workload pods in
    place."""
    rendered = [yaml.safe_load((FLEET / f).read_text(encoding="utf-8")) for f in ACCOUNT_FILES]
    ensure_namespaces(api_server, [("", d) for d in rendered])
    setup = [
        *rendered,
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": NODE}},
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": OTHER}},
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": WORKLOADS}},
    ]
    for document in setup:
        api_server.apply(document, manager=SETUP_MANAGER)
    driver_pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "nvidia-driver-test", "namespace": SYSTEM},
        "spec": {
            "nodeName": NODE,
            "serviceAccountName": ACCOUNT,
            "automountServiceAccountToken": False,
            "containers": [{"name": "driver", "image": "registry.k8s.io/pause:3.10"}],
        },
    }
    made = [driver_pod, *PODS]
    for document in made:
        api_server.create(document)
    for pod in PODS:
        _running(api_server, pod["metadata"]["name"])
    try:
        yield api_server.pod_token(SYSTEM, ACCOUNT, "nvidia-driver-test")
    finally:
        objects = [("test", d) for d in [BUDGET, SPARE, *made, *setup]]
        delete_objects(api_server, [o for o in objects if o[1]["kind"] != "Node"])
        for node in (NODE, OTHER):  # a cordon must not outlive its test
            api_server.delete("v1", "Node", "", node)


@pytest.fixture
def installer(kubeconfig: Path, token: str) -> Server:
    server = Server.with_token(kubeconfig, token)
    _policy_enforced(server)
    return server


@pytest.fixture
def in_pod(
    monkeypatch: pytest.MonkeyPatch, kubeconfig: Path, installer: Server, token: str, tmp_path: Path
) -> None:
    """What a container of the installer's pod sees: the service host and port, the token."""
    as_pod_of(monkeypatch, tmp_path / "serviceaccount", kubeconfig, token)


class Kubelet:
    """Between the drain's turns: end the pods marked for deletion on NODE (their containers
    stopped), and note what the Node says meanwhile."""

    def __init__(self, server: Server) -> None:
        self.server = server
        self.seen: list[tuple[bool, str | None]] = []

    def __call__(self, seconds: float) -> None:
        node = self.server.get("v1", "Node", "", NODE)
        assert node is not None
        labels = node["metadata"].get("labels", {})
        self.seen.append((bool(node["spec"].get("unschedulable")), labels.get(UPGRADE_LABEL)))
        for pod in self.server.list("v1", "Pod"):
            meta = pod["metadata"]
            if meta["namespace"] == WORKLOADS and "deletionTimestamp" in meta:
                self.server.delete("v1", "Pod", WORKLOADS, meta["name"])
        time.sleep(seconds)


def _pods_left(server: Server) -> set[str]:
    return {
        p["metadata"]["name"]
        for p in server.list("v1", "Pod")
        if p["metadata"]["namespace"] == WORKLOADS
    }


def _node(server: Server) -> dict[str, Any]:
    node = server.get("v1", "Node", "", NODE)
    assert node is not None
    return node


def _upgrade(installer: Server, kubelet: Kubelet) -> NodeUpgrade:
    return NodeUpgrade(installer.client, NODE, sleep=kubelet)


def _budget_counts(server: Server, allowed: int) -> None:
    """Wait until the disruption controller has counted the budget's pods."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        found = server.get("policy/v1", "PodDisruptionBudget", WORKLOADS, "trainer")
        status = (found or {}).get("status", {})
        if status.get("disruptionsAllowed") == allowed and status.get("currentHealthy"):
            return
        time.sleep(0.2)
    raise TimeoutError("the disruption controller did not count the budget's pods")


def test_a_driver_upgrade_cordons_evicts_only_gpu_pods_and_uncordons_once_validated(
    api_server: Server, installer: Server
) -> None:
    kubelet = Kubelet(api_server)
    upgrade = _upgrade(installer, kubelet)
    blocked = upgrade.drain({GPUCONF_RESOURCE}, claim_reader(installer.client), 30, 0.1)
    assert blocked == []
    # Cordoned and labelled before the first eviction's wait, and through the evictions.
    assert kubelet.seen
    assert set(kubelet.seen) == {(True, "evicting")}
    assert _pods_left(api_server) == {"web-0", "trainer-1"}
    node = _node(api_server)
    assert node["spec"]["unschedulable"] is True
    assert node["metadata"]["labels"][UPGRADE_LABEL] == "installing"
    assert node["metadata"]["annotations"][CORDONED_ANNOTATION] == "true"

    upgrade.finish("550.90.07")
    node = _node(api_server)
    assert "unschedulable" not in node["spec"]
    assert node["metadata"]["labels"][UPGRADE_LABEL] == "ready"
    assert node["metadata"]["labels"][VERSION_LABEL] == "550.90.07"
    assert CORDONED_ANNOTATION not in node["metadata"].get("annotations", {})


def test_a_budget_that_keeps_refusing_is_retried_until_the_timeout_then_the_drain_gives_up(
    api_server: Server, installer: Server
) -> None:
    api_server.create(BUDGET)
    _budget_counts(api_server, 0)
    kubelet = Kubelet(api_server)
    upgrade = _upgrade(installer, kubelet)
    started = time.monotonic()
    blocked = upgrade.drain({GPUCONF_RESOURCE}, claim_reader(installer.client), 2, 0.2)
    assert time.monotonic() - started >= 2
    assert len(kubelet.seen) >= 3  # retried every 0.2 s, not once
    assert blocked == [
        Blocked(f"{WORKLOADS}/trainer-0", "its PodDisruptionBudget refuses the eviction (429)")
    ]
    # The pod the budget does not cover went; the node stays cordoned, saying why.
    assert _pods_left(api_server) == {"trainer-0", "web-0", "trainer-1"}
    node = _node(api_server)
    assert node["spec"]["unschedulable"] is True
    assert node["metadata"]["labels"][UPGRADE_LABEL] == "eviction-timed-out"

    # The kubelet runs the container again; once the budget allows it, the drain completes.
    api_server.create(SPARE)
    _running(api_server, "trainer-2")
    _budget_counts(api_server, 1)
    blocked = upgrade.drain({GPUCONF_RESOURCE}, claim_reader(installer.client), 30, 0.2)
    assert blocked == []
    assert "trainer-0" not in _pods_left(api_server)
    assert _node(api_server)["metadata"]["labels"][UPGRADE_LABEL] == "installing"
    upgrade.finish("550.90.07")
    assert "unschedulable" not in _node(api_server)["spec"]


def test_an_administrators_cordon_outlives_the_upgrade(
    api_server: Server, installer: Server
) -> None:
    cordon = {"spec": {"unschedulable": True}}
    api_server.request("PATCH", api_server.path("v1", "Node", "", NODE), cordon, content_type=MERGE)
    upgrade = _upgrade(installer, Kubelet(api_server))
    assert upgrade.drain({GPUCONF_RESOURCE}, claim_reader(installer.client), 30, 0.1) == []
    upgrade.finish("550.90.07")
    node = _node(api_server)
    assert node["spec"]["unschedulable"] is True
    assert node["metadata"]["labels"][UPGRADE_LABEL] == "ready"
    assert CORDONED_ANNOTATION not in node["metadata"].get("annotations", {})


def test_a_node_changed_between_read_and_patch_is_read_again(
    api_server: Server, installer: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    upgrade = _upgrade(installer, Kubelet(api_server))
    patch_node = upgrade.api.patch_node
    conflicts: list[int] = []

    def someone_else_first(name: str, body: Any) -> Any:
        if not conflicts:  # another writer changes the Node after the read
            other = {"metadata": {"labels": {"example.com/team": "ml"}}}
            path = api_server.path("v1", "Node", "", NODE)
            api_server.request("PATCH", path, other, content_type=MERGE)
        try:
            return patch_node(name, body)
        except kubernetes.client.exceptions.ApiException as error:
            conflicts.append(error.status)
            raise

    monkeypatch.setattr(upgrade.api, "patch_node", someone_else_first)
    upgrade.cordon()
    assert conflicts == [409]
    labels = _node(api_server)["metadata"]["labels"]
    assert labels["example.com/team"] == "ml"
    assert labels[UPGRADE_LABEL] == "evicting"


def test_the_installers_account_may_not_touch_another_node(
    api_server: Server, installer: Server
) -> None:
    other = NodeUpgrade(installer.client, OTHER)
    with pytest.raises(kubernetes.client.exceptions.ApiException) as refused:
        other.cordon()
    assert refused.value.status == 422
    assert WRONG_NODE in str(refused.value.body)
    assert "unschedulable" not in _node(api_server)["spec"]


@pytest.mark.parametrize(
    "patch",
    [
        pytest.param({"spec": {"taints": [{"key": "x", "effect": "NoExecute"}]}}, id="a-taint"),
        pytest.param({"metadata": {"labels": {"example.com/team": "x"}}}, id="another-label"),
        pytest.param({"metadata": {"annotations": {"example.com/a": "x"}}}, id="an-annotation"),
    ],
)
def test_on_its_own_node_it_may_change_only_what_an_upgrade_changes(
    installer: Server, patch: dict[str, Any]
) -> None:
    path = installer.path("v1", "Node", "", NODE)
    with pytest.raises(Refused) as refused:
        installer.request("PATCH", path, patch, content_type=MERGE)
    assert refused.value.status == 422
    assert "may change only its Node's cordon" in refused.value.message
    # What NVIDIA's driver manager writes (UpdateNodeLabels) is admitted.
    paused = {"metadata": {"labels": {"nvidia.com/gpu.deploy.client": "paused-for-driver-upgrade"}}}
    installer.request("PATCH", path, paused, content_type=MERGE)


# --- the commands, as the pod's containers run them ------------------------------------------


def _node_config(tmp_path: Path) -> Path:
    """The a100 pool's node config, as its ConfigMap mounts it."""
    config_map = yaml.safe_load(
        (FLEET / "pools/a100/configmap-node-config.yaml").read_text(encoding="utf-8")
    )
    path = tmp_path / "node-config.yaml"
    path.write_text(config_map["data"]["node-config.yaml"], encoding="utf-8")
    return path


def _loaded_driver(tmp_path: Path) -> Path:
    sys_module = tmp_path / "module"
    (sys_module / "nvidia").mkdir(parents=True)
    (sys_module / "nvidia" / "refcnt").write_text("12\n")
    return sys_module


@pytest.mark.usefixtures("in_pod")
def test_the_drain_command_gives_up_saying_which_pods_stayed_and_why(
    api_server: Server, tmp_path: Path
) -> None:
    api_server.create(BUDGET)
    _budget_counts(api_server, 0)
    command = [
        "driver-drain",
        "--config", str(_node_config(tmp_path)),
        "--node-name", NODE,
        "--timeout", "1",
        "--sys-module", str(_loaded_driver(tmp_path)),
    ]  # fmt: skip
    with pytest.raises(UserError) as gave_up:
        node_main(command)
    # No kubelet ends the evicted pod here: still terminating, it still holds its GPU.
    assert str(gave_up.value) == (
        f"gave up after 1s with 2 GPU pod(s) on node {NODE}: {WORKLOADS}/notebook-0 "
        f"(terminating); {WORKLOADS}/trainer-0 (its PodDisruptionBudget refuses the eviction (429)); the node stays cordoned and labelled "
        "gpuconf.dev/driver-upgrade=eviction-timed-out, the old driver loaded, and the kubelet "
        "runs this container again"
    )
    assert _node(api_server)["metadata"]["labels"][UPGRADE_LABEL] == "eviction-timed-out"


@pytest.mark.usefixtures("in_pod")
def test_with_no_driver_loaded_the_drain_evicts_nothing_and_leaves_the_node_schedulable(
    api_server: Server, tmp_path: Path
) -> None:
    command = [
        "driver-drain",
        "--config", str(_node_config(tmp_path)),
        "--node-name", NODE,
        "--sys-module", str(tmp_path / "empty"),
    ]  # fmt: skip
    assert node_main(command) == 0
    assert _pods_left(api_server) == {p["metadata"]["name"] for p in PODS}
    node = _node(api_server)
    assert "unschedulable" not in node["spec"]
    assert node["metadata"]["labels"][UPGRADE_LABEL] == "installing"


@pytest.mark.usefixtures("in_pod")
def test_the_uncordon_command_labels_the_version_the_probe_validated(
    api_server: Server, installer: Server, tmp_path: Path
) -> None:
    NodeUpgrade(installer.client, NODE).cordon()
    (tmp_path / "driver-ready").write_text("550.90.07\n550.90.07\n", encoding="utf-8")
    (tmp_path / "setup-ready").write_text("", encoding="utf-8")
    command = [
        "driver-uncordon",
        "--node-name", NODE,
        "--driver-ready", str(tmp_path / "driver-ready"),
        "--setup-ready", str(tmp_path / "setup-ready"),
        "--done-file", str(tmp_path / "done"),
        "--version", "550.90.07",
    ]  # fmt: skip
    assert node_main(command) == 0
    node = _node(api_server)
    assert "unschedulable" not in node["spec"]
    assert node["metadata"]["labels"][VERSION_LABEL] == "550.90.07"
    assert (tmp_path / "done").read_text(encoding="utf-8") == "550.90.07\n"


@pytest.mark.usefixtures("in_pod")
def test_the_uncordon_command_waits_past_a_marker_naming_another_version(
    api_server: Server, installer: Server, tmp_path: Path
) -> None:
    """A marker left by an older pod (force-deleted before its preStop ran) is not the new
    driver's validation: the command waits until the probe names the declared version."""
    NodeUpgrade(installer.client, NODE).cordon()
    marker = tmp_path / "driver-ready"
    marker.write_text("535.183.01\n", encoding="utf-8")
    (tmp_path / "setup-ready").write_text("", encoding="utf-8")
    seen_while_stale: list[dict[str, Any]] = []

    def probe_passes() -> None:
        seen_while_stale.append(_node(api_server))
        marker.write_text("550.90.07\n", encoding="utf-8")

    probe = threading.Timer(0.5, probe_passes)
    probe.start()
    command = [
        "driver-uncordon",
        "--node-name", NODE,
        "--version", "550.90.07",
        "--driver-ready", str(marker),
        "--setup-ready", str(tmp_path / "setup-ready"),
        "--interval", "0.05",
    ]  # fmt: skip
    try:
        assert node_main(command) == 0
    finally:
        probe.join()
    (stale,) = seen_while_stale
    assert stale["spec"]["unschedulable"] is True
    assert VERSION_LABEL not in stale["metadata"]["labels"]
    node = _node(api_server)
    assert "unschedulable" not in node["spec"]
    assert node["metadata"]["labels"][VERSION_LABEL] == "550.90.07"


def _host_driver(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A host with its own driver, as `chroot HOST nvidia-smi …` finds it (a stand-in chroot
    that runs the command as is, and a host nvidia-smi answering its version)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "chroot").write_text('#!/bin/sh\nshift\nexec "$@"\n', encoding="utf-8")
    (bin_dir / "nvidia-smi").write_text(
        '#!/bin/sh\n[ "$*" = "--query-gpu=driver_version --format=csv,noheader" ] '
        "&& printf '535.183.01\\n535.183.01\\n'\n",
        encoding="utf-8",
    )
    for tool in bin_dir.iterdir():
        tool.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    return tmp_path / "host"


@pytest.mark.usefixtures("in_pod")
def test_on_a_host_installed_driver_the_drain_leaves_the_node_schedulable(
    api_server: Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    """k8s-driver-manager stops before any unload there (uninstallDriver: isHostDriver), and the
    uncordon container never starts: a cordon would be for ever."""
    command = [
        "driver-drain",
        "--config", str(_node_config(tmp_path)),
        "--node-name", NODE,
        "--sys-module", str(_loaded_driver(tmp_path)),
        "--host-root", str(_host_driver(tmp_path, monkeypatch)),
    ]  # fmt: skip
    assert node_main(command) == 0
    assert "the host's own driver 535.183.01 is installed" in capsys.readouterr().out
    assert _pods_left(api_server) == {p["metadata"]["name"] for p in PODS}
    node = _node(api_server)
    assert "unschedulable" not in node["spec"]
    assert UPGRADE_LABEL not in node["metadata"].get("labels", {})


def _drain_with_state(tmp_path: Path, stored: str) -> list[str]:
    state = tmp_path / "nvidia-driver.state"
    state.write_text(stored, encoding="utf-8")
    return [
        "driver-drain",
        "--config", str(_node_config(tmp_path)),
        "--node-name", NODE,
        "--timeout", "1",
        "--sys-module", str(_loaded_driver(tmp_path)),
        "--state-file", str(state),
        "--config-digest", "5f0c2a9e41d7b3c8",
    ]  # fmt: skip


@pytest.mark.usefixtures("in_pod")
def test_a_loaded_driver_with_the_same_config_digest_is_not_drained(
    api_server: Server, tmp_path: Path
) -> None:
    """As k8s-driver-manager's shouldSkipUninstall: the loaded driver stays, so the GPU pods
    may stay too (a gpuconf image bump rolls the pod and changes nothing else)."""
    assert node_main(_drain_with_state(tmp_path, "5f0c2a9e41d7b3c8\n")) == 0
    assert _pods_left(api_server) == {p["metadata"]["name"] for p in PODS}
    node = _node(api_server)
    assert "unschedulable" not in node["spec"]
    assert UPGRADE_LABEL not in node["metadata"].get("labels", {})


@pytest.mark.usefixtures("in_pod")
def test_a_loaded_driver_with_another_config_digest_is_drained(
    api_server: Server, tmp_path: Path
) -> None:
    with pytest.raises(UserError, match="gave up after 1s with 2 GPU pod"):
        node_main(_drain_with_state(tmp_path, "0e4b17c2d9a6f835\n"))
    node = _node(api_server)
    assert node["spec"]["unschedulable"] is True
    assert node["metadata"]["labels"][UPGRADE_LABEL] == "eviction-timed-out"


def _daemonset_pod(name: str, owner: dict[str, Any], selector: dict[str, str]) -> dict[str, Any]:
    pod = _pod(name, {"nvidia.com/gpu": "1"})
    meta = owner["metadata"]
    pod["metadata"]["ownerReferences"] = [
        {
            "apiVersion": "apps/v1",
            "kind": "DaemonSet",
            "name": meta["name"],
            "uid": meta["uid"],
            "controller": True,
        }
    ]
    pod["spec"]["nodeSelector"] = selector
    return pod


def test_a_daemonset_pod_the_driver_manager_stops_next_does_not_hold_the_drain(
    api_server: Server, installer: Server
) -> None:
    """k8s-driver-manager pauses each nvidia.com/gpu.deploy.* label right after the drain and
    waits for the pods scheduled by it (evictAllGPUOperatorComponents); another DaemonSet's
    GPU pod it never stops, and that one still holds the upgrade."""
    daemonset = {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": "gpu-agent", "namespace": WORKLOADS},
        "spec": {
            "selector": {"matchLabels": {"app": "gpu"}},
            "template": {
                "metadata": {"labels": {"app": "gpu"}},
                "spec": {"containers": [{"name": "a", "image": "registry.k8s.io/pause:3.10"}]},
            },
        },
    }
    owner = api_server.create(daemonset).body
    pods = [
        _daemonset_pod("client-0", owner, {"nvidia.com/gpu.deploy.client": "true"}),
        _daemonset_pod("agent-0", owner, {"kubernetes.io/os": "linux"}),
    ]
    for pod in pods:
        api_server.create(pod)
    try:
        upgrade = _upgrade(installer, Kubelet(api_server))
        blocked = upgrade.evict_gpu_pods({GPUCONF_RESOURCE}, claim_reader(installer.client), 1, 0.1)
        assert [b.pod for b in blocked] == [f"{WORKLOADS}/agent-0"]
        assert "DaemonSet" in blocked[0].reason
        assert {"client-0", "agent-0"} <= _pods_left(api_server)
    finally:
        delete_objects(api_server, [("test", d) for d in [*pods, daemonset]])


@pytest.mark.usefixtures("in_pod")
def test_a_refused_drain_ends_with_the_servers_message(tmp_path: Path) -> None:
    command = [
        "driver-drain",
        "--config", str(_node_config(tmp_path)),
        "--node-name", OTHER,
        "--sys-module", str(_loaded_driver(tmp_path)),
    ]  # fmt: skip
    with pytest.raises(UserError) as refused:
        node_main(command)
    assert str(refused.value).startswith("the API server answered 422: ")
    assert WRONG_NODE in str(refused.value)


def test_a_pod_holding_a_claim_nvidias_dra_driver_allocated_is_evicted(
    api_server: Server, installer: Server
) -> None:
    """Read as the installer's account, in the version the server prefers (v1 here)."""
    claims = []
    for name, driver in (("gpu-claim", "gpu.nvidia.com"), ("nic-claim", "net.example.com")):
        claim = {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaim",
            "metadata": {"name": name, "namespace": WORKLOADS},
            "spec": {
                "devices": {"requests": [{"name": "dev", "exactly": {"deviceClassName": name}}]}
            },
        }
        api_server.create(claim)
        claims.append(claim)
        allocation = {
            "devices": {
                "results": [{"request": "dev", "driver": driver, "pool": NODE, "device": "d0"}]
            }
        }
        path = api_server.path("resource.k8s.io/v1", "ResourceClaim", WORKLOADS, name)
        api_server.request(
            "PATCH", path + "/status", {"status": {"allocation": allocation}}, content_type=MERGE
        )
    pods = [
        {**_pod(f"{kind}-0"), "spec": {**_pod(kind)["spec"], "resourceClaims": [ref]}}
        for kind, ref in (
            ("dra", {"name": "g", "resourceClaimName": "gpu-claim"}),
            ("nic", {"name": "n", "resourceClaimName": "nic-claim"}),
        )
    ]
    for pod in pods:
        api_server.create(pod)
    try:
        upgrade = _upgrade(installer, Kubelet(api_server))
        assert upgrade.drain(set(), claim_reader(installer.client), 30, 0.1) == []
        left = _pods_left(api_server)
        assert "dra-0" not in left
        assert "nic-0" in left
    finally:
        delete_objects(api_server, [("test", d) for d in [*pods, *claims]])
