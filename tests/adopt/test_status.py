"""`gpuconf status` reads a live cluster through the Kubernetes client (here the fake API server
in fake_api_server.py, over real HTTP) and compares it with the cluster file."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from builders import REPO, load_yaml, run_cli
from fake_api_server import FakeApiServer

from gpuconf.adopt.live import cluster_api
from gpuconf.node.drift import DriftReport
from gpuconf.node.node_annotation import annotations_for, pending_annotation

LAB = str(REPO / "clusters" / "lab.yaml")
DRIFT = "GPU 1: expected uuid GPU-5e1a0c52-3c4b-4d6e-9a2f-0c8e1f6b7a02, found GPU-00000000-0000-4000-8000-000000000001"


def _node(name: str, pool: str | None, gpus: int = 0, **annotations: str) -> dict[str, Any]:
    labels = {"kubernetes.io/hostname": name, **({"gpuconf.dev/pool": pool} if pool else {})}
    allocatable = {
        "cpu": "8",
        "memory": "32Gi",
        **({"gpuconf.dev/t4-shared": str(gpus)} if gpus else {}),
    }
    return {
        "metadata": {"name": name, "labels": labels, "annotations": annotations},
        "status": {"allocatable": allocatable, "capacity": allocatable},
    }


def _quota(
    namespace: str,
    hard: int,
    used: int,
    name: str = "gpuconf-gpus",
    key: str = "requests.gpuconf.dev/t4-shared",
    scopes: tuple[str, ...] = (),
) -> dict[str, Any]:
    spec: dict[str, Any] = {"hard": {key: str(hard)}}
    if scopes:
        spec["scopes"] = list(scopes)
    return {
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
        "status": {"hard": {key: str(hard)}, "used": {key: str(used)}},
    }


def _synced_quotas(cluster: str) -> list[dict[str, Any]]:
    """The ResourceQuotas render wrote for the cluster, as the GitOps agent syncs them."""
    folder = REPO / "rendered" / cluster / "quotas"
    return [load_yaml(path.read_text()) for path in sorted(folder.glob("*.yaml"))]


NODES = [
    _node(
        "lab-gpu-1",
        "t4",
        8,
        **annotations_for(DriftReport([DRIFT], frozenset({0}))),
    ),
    _node(
        "lab-gpu-2",
        "t4",
        4,
        **{
            **annotations_for(DriftReport([], frozenset({0, 1}))),
            **pending_annotation([{"index": 0}, {"index": 1}]),
        },
    ),
    *(_node(f"cpu-{i}", None) for i in range(5)),
]
# students' quota was raised by hand in the cluster: 8 + 12 is more than the 12 allocatable.
QUOTAS = [_quota("research", 8, 6), _quota("students", 12, 3)]

EXPECTED = """\
cluster lab
pool  declared  present  drifted  rolling out
t4    2         2        1        1

class      resource               capacity  allocatable  in use  quota
t4-shared  gpuconf.dev/t4-shared  16        12           9       20

5 problem(s):
  - pool t4: node lab-gpu-1 drifted: GPU 1: expected uuid GPU-5e1a0c52-3c4b-4d6e-9a2f-0c8e1f6b7a02, found GPU-00000000-0000-4000-8000-000000000001
  - pool t4: node lab-gpu-2 has 2 GPU change(s) waiting for running containers
  - namespace students: ResourceQuota gpuconf-gpus holds requests.gpuconf.dev/t4-shared: 12, rendered 4
  - class t4-shared: 12 of 16 gpuconf.dev/t4-shared allocatable
  - class t4-shared: quotas add up to 20, more than the 12 available
"""


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeApiServer]:
    monkeypatch.setattr(cluster_api, "PAGE_SIZE", 2)  # several pages from a few objects
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    with FakeApiServer(NODES, QUOTAS).running() as running:
        yield running


def test_status_prints_drift_rollout_and_quota_over_capacity(
    server: FakeApiServer, tmp_path: Path
) -> None:
    kubeconfig = server.kubeconfig(tmp_path)
    result = run_cli("status", LAB, "--kubeconfig", str(kubeconfig))
    assert (result.code, result.out) == (1, EXPECTED), result.err
    node_pages = [r for r in server.requests if r.startswith("/api/v1/nodes")]
    assert len(node_pages) == 4  # 7 nodes, 2 a page
    assert all("limit=2" in r for r in node_pages)


def test_status_json_for_scripts_and_kubeconfig_from_the_environment(
    server: FakeApiServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A list, as kubectl takes it: files that do not exist are skipped, the rest merged.
    monkeypatch.setenv("KUBECONFIG", f"{tmp_path / 'absent'}:{server.kubeconfig(tmp_path)}")
    result = run_cli("status", LAB, "--output", "json")
    assert result.code == 1, result.err
    report = json.loads(result.out)
    assert report["pools"][0]["drifted"] == {"lab-gpu-1": [DRIFT]}
    assert report["pools"][0]["rolling_out"] == {"lab-gpu-2": 2}
    assert report["classes"][0] == {
        "name": "t4-shared",
        "resource": "gpuconf.dev/t4-shared",
        "capacity": 16,
        "allocatable": 12,
        "in_use": 9,
        "quota": 20,
        "device_class": None,
    }
    assert len(report["problems"]) == 5
    assert report["quota_drift"] == [
        {
            "namespace": "students",
            "key": "requests.gpuconf.dev/t4-shared",
            "rendered": 4,
            "live": 12,
            "in_cluster": True,
        }
    ]


def test_status_exits_0_when_the_cluster_is_as_declared(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    healthy = [_node("lab-gpu-1", "t4", 8), _node("lab-gpu-2", "t4", 8)]
    with FakeApiServer(
        healthy, [_quota("research", 8, 1), _quota("students", 4, 0)]
    ).running() as fake:
        result = run_cli("status", LAB, "--kubeconfig", str(fake.kubeconfig(tmp_path)))
    assert result.code == 0, result.out + result.err
    assert result.out.endswith("\nno problems\n")


def test_status_restarts_a_list_whose_continue_token_expired(
    server: FakeApiServer, tmp_path: Path
) -> None:
    server.expire_next_continue = True
    result = run_cli("status", LAB, "--kubeconfig", str(server.kubeconfig(tmp_path)))
    assert result.out == EXPECTED
    node_pages = [r for r in server.requests if r.startswith("/api/v1/nodes")]
    assert len(node_pages) == 1 + 1 + 4  # first page, the expired second, then all again


def test_status_names_the_missing_permission_when_forbidden(
    server: FakeApiServer, tmp_path: Path
) -> None:
    kubeconfig = server.kubeconfig(tmp_path)
    result = run_cli("status", LAB, "--kubeconfig", str(kubeconfig), "--context", "no-rbac")
    assert result.code == 1
    assert result.err.startswith(
        f"gpuconf: {server.url}: forbidden to list nodes: nodes is forbidden"
    )
    assert "clusterrole-gpuconf-status.yaml" in result.err


def test_status_with_an_unknown_context_says_so(server: FakeApiServer, tmp_path: Path) -> None:
    kubeconfig = server.kubeconfig(tmp_path)
    result = run_cli("status", LAB, "--kubeconfig", str(kubeconfig), "--context", "prod")
    assert result.code == 1
    assert "cannot load the cluster's configuration" in result.err
    assert "prod" in result.err


DRA_LAB = str(REPO / "clusters" / "dra-lab.yaml")


def _slice(node: str, devices: int) -> dict[str, Any]:
    return {
        "metadata": {"name": f"{node}-gpu.nvidia.com"},
        "spec": {
            "driver": "gpu.nvidia.com",
            "nodeName": node,
            "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
            "devices": [{"name": f"gpu-{i}"} for i in range(devices)],
        },
    }


def test_status_of_a_dra_cluster_checks_device_classes_and_resource_slices(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    nodes = [
        *(_node(f"h100-{i}", "h100") for i in range(2)),
        *(_node(f"l40s-{i}", "l40s") for i in range(2)),
        *(_node(f"l4-{i}", "l4") for i in range(4)),
    ]
    # l40s-1's driver has not published its GPUs; the h100-1g DeviceClass was never synced.
    slices = [_slice(n["metadata"]["name"], 4) for n in nodes if n["metadata"]["name"] != "l40s-1"]
    classes = [{"metadata": {"name": name}} for name in ("big-memory", "l4-shared")]
    quotas = _synced_quotas("dra-lab")
    with FakeApiServer(nodes, quotas, (classes, slices)).running() as fake:
        result = run_cli("status", DRA_LAB, "--kubeconfig", str(fake.kubeconfig(tmp_path)))
    assert result.code == 1, result.err
    assert result.out.splitlines()[1:5] == [
        "pool  declared  present  drifted  rolling out  publishing",
        "h100  2         2        0        0            2",
        "l40s  2         2        0        0            1",
        "l4    4         4        0        0            4",
    ]
    assert result.out.endswith(
        "2 problem(s):\n"
        "  - pool l40s: 1 of 2 nodes publish no GPU through gpu.nvidia.com\n"
        "  - class h100-1g: the cluster has no DeviceClass h100-1g\n"
    )


def test_status_of_a_dra_cluster_whose_server_has_no_dra_api(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    nodes = [_node(f"l4-{i}", "l4") for i in range(4)]
    with FakeApiServer(nodes, []).running() as fake:
        result = run_cli("status", DRA_LAB, "--kubeconfig", str(fake.kubeconfig(tmp_path)))
    assert "publishing" not in result.out
    assert "pool h100: 0 of 2 nodes present" in result.out


def test_classes_sharing_a_resource_name_count_only_their_pools_nodes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)

    def nvidia_node(name: str, pool: str, product: str, gpus: int) -> dict[str, Any]:
        # The cut-over labels the nodes by pool (docs/nvidia-plugin.md); GFD's label stays.
        labels = {"gpuconf.dev/pool": pool, "nvidia.com/gpu.product": product}
        return {
            "metadata": {"name": name, "labels": labels},
            "status": {"allocatable": {"nvidia.com/gpu": str(gpus)}},
        }

    nodes = [
        *(nvidia_node(f"t4-{i}", "t4", "Tesla-T4-SHARED", 16) for i in range(6)),
        *(nvidia_node(f"l4-{i}", "l4", "NVIDIA-L4-SHARED", 8) for i in range(4)),
        *(nvidia_node(f"a100-{i}", "a100", "NVIDIA-A100-SXM4-80GB", 8) for i in range(2)),
    ]
    migration = str(REPO / "clusters" / "nvidia-migration.yaml")
    with FakeApiServer(nodes, _synced_quotas("nvidia-migration")).running() as fake:
        result = run_cli(
            "status", migration, "--kubeconfig", str(fake.kubeconfig(tmp_path)), "-o", "json"
        )
    assert result.code == 0, result.out
    classes = json.loads(result.out)["classes"]
    assert [(c["name"], c["capacity"], c["allocatable"]) for c in classes] == [
        ("t4-shared", 96, 96),
        ("l4-mps", 32, 32),
        ("a100", 16, 16),
    ]


def test_two_quotas_in_one_namespace_limit_it_to_the_smaller_not_their_sum(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # During the cut-over the team's own quota and gpuconf's rendered one both hold the
    # namespace; the quota admission enforces each, so the smaller is the namespace's limit,
    # and both count the same pods as used.
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    healthy = [_node("lab-gpu-1", "t4", 8), _node("lab-gpu-2", "t4", 8)]
    quotas = [
        _quota("research", 10, 3, name="gpus"),
        _quota("research", 8, 3),
        _quota("students", 4, 1),
    ]
    with FakeApiServer(healthy, quotas).running() as fake:
        result = run_cli(
            "status", LAB, "--kubeconfig", str(fake.kubeconfig(tmp_path)), "-o", "json"
        )
    report = json.loads(result.out)
    assert [(c["in_use"], c["quota"]) for c in report["classes"]] == [(4, 12)]
    assert (result.code, report["problems"]) == (0, [])


@pytest.mark.parametrize(
    ("scoped", "counted"),
    [
        # Terminating and NotTerminating part every pod: the namespace gets both sides.
        ((("Terminating", 2, 1), ("NotTerminating", 4, 3)), (8, 18)),
        # A normal GPU pod matches both, and is held to 4; a BestEffort pod that terminates to
        # neither: the namespace is not held as a whole, as one without a quota.
        ((("NotBestEffort", 4, 3), ("NotTerminating", 4, 3)), (4, 12)),
        ((("PriorityClass", 1, 1),), (4, 12)),
    ],
    ids=["parting-pair", "overlapping-scopes", "one-scope"],
)
def test_scoped_quotas_hold_a_namespace_only_where_their_scopes_part_every_pod(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    scoped: tuple[tuple[str, int, int], ...],
    counted: tuple[int, int],
) -> None:
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    healthy = [_node("lab-gpu-1", "t4", 8), _node("lab-gpu-2", "t4", 8)]
    quotas = [
        _quota("research", 8, 3),
        _quota("students", 4, 1),
        *(
            _quota("ml", hard, used, name=f"gpus-{scope.lower()}", scopes=(scope,))
            for scope, hard, used in scoped
        ),
    ]
    with FakeApiServer(healthy, quotas).running() as fake:
        result = run_cli(
            "status", LAB, "--kubeconfig", str(fake.kubeconfig(tmp_path)), "-o", "json"
        )
    report = json.loads(result.out)
    assert [(c["in_use"], c["quota"]) for c in report["classes"]] == [counted]
    over = [p for p in report["problems"] if "quotas add up to" in p]
    assert over == (
        ["class t4-shared: quotas add up to 18, more than the 16 available"]
        if counted[1] > 16
        else []
    )


def test_classes_sharing_a_resource_name_are_held_to_its_quota_together(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # rendered/nvidia-migration/quotas: inference's t4-shared 64 and l4-mps 16 are one
    # requests.nvidia.com/gpu: "80"; the 96 of that resource in quotas fit the 144 the three
    # classes' nodes offer, though not any one class's.
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)

    def nvidia_node(name: str, pool: str, gpus: int) -> dict[str, Any]:
        labels = {"gpuconf.dev/pool": pool}
        return {
            "metadata": {"name": name, "labels": labels},
            "status": {"allocatable": {"nvidia.com/gpu": str(gpus)}},
        }

    nodes = [
        *(nvidia_node(f"t4-{i}", "t4", 16) for i in range(6)),
        *(nvidia_node(f"l4-{i}", "l4", 8) for i in range(4)),
        *(nvidia_node(f"a100-{i}", "a100", 8) for i in range(2)),
    ]
    key = "requests.nvidia.com/gpu"
    quotas = [_quota("inference", 80, 0, key=key), _quota("training", 16, 0, key=key)]
    migration = str(REPO / "clusters" / "nvidia-migration.yaml")
    with FakeApiServer(nodes, quotas).running() as fake:
        result = run_cli("status", migration, "--kubeconfig", str(fake.kubeconfig(tmp_path)))
    assert result.code == 0, result.out
    assert result.out.endswith("\nno problems\n")
    # Over the resource's whole supply it is a problem, named for all of its classes.
    quotas.append(_quota("more", 50, 0, key=key))
    with FakeApiServer(nodes, quotas).running() as fake:
        result = run_cli("status", migration, "--kubeconfig", str(fake.kubeconfig(tmp_path)))
    assert result.code == 1
    assert result.out.endswith(
        "1 problem(s):\n"
        "  - classes t4-shared, l4-mps, a100 (nvidia.com/gpu): quotas add up to 146, "
        "more than the 144 available\n"
    )


def test_gpuconfs_quotas_not_as_rendered_are_drift(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Not synced yet, edited by hand (a line changed, one added), or left in a namespace the file
    no longer gives a quota: each is named. Another cluster's leftovers, and quotas of other
    names (the team's own), are not gpuconf's to judge."""
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    healthy = [_node("lab-gpu-1", "t4", 8), _node("lab-gpu-2", "t4", 8)]
    students = _quota("students", 4, 0)
    students["spec"]["hard"]["requests.cpu"] = "8"
    ours = {"gpuconf.dev/cluster": "lab"}
    gone, elsewhere = _quota("old-team", 2, 0), _quota("other", 2, 0)
    gone["metadata"]["labels"] = ours
    elsewhere["metadata"]["labels"] = {"gpuconf.dev/cluster": "other-lab"}
    quotas = [_quota("research", 6, 0, name="gpus"), students, gone, elsewhere]
    with FakeApiServer(healthy, quotas).running() as fake:
        result = run_cli("status", LAB, "--kubeconfig", str(fake.kubeconfig(tmp_path)))
    assert result.code == 1
    assert result.out.endswith(
        "3 problem(s):\n"
        "  - namespace old-team: ResourceQuota gpuconf-gpus holds "
        "requests.gpuconf.dev/t4-shared: 2, not rendered\n"
        "  - namespace research: ResourceQuota gpuconf-gpus is not in the cluster "
        "(rendered with requests.gpuconf.dev/t4-shared: 8)\n"
        "  - namespace students: ResourceQuota gpuconf-gpus holds requests.cpu: 8, not rendered\n"
    ), result.out


def test_status_of_a_server_that_cannot_be_reached_is_a_user_error(
    server: FakeApiServer, tmp_path: Path
) -> None:
    import socket

    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    kubeconfig = server.kubeconfig(tmp_path)
    kubeconfig.write_text(kubeconfig.read_text().replace(server.url, f"http://127.0.0.1:{port}"))
    result = run_cli("status", LAB, "--kubeconfig", str(kubeconfig))
    assert result.code == 1, result.err
    assert result.err.startswith(f"gpuconf: http://127.0.0.1:{port}: cannot list nodes: "), (
        result.err
    )
    assert "Connection refused" in result.err
    assert result.err.count("\n") == 1


def test_status_reads_a_kubeconfig_given_through_a_pipe_as_kubectl_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """--kubeconfig <(…): not a regular file, yet kubectl and the client read it."""
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    kubeconfig = tmp_path / "kubeconfig"
    os.mkfifo(kubeconfig)
    text = (
        "clusters: [{name: c, cluster: {server: 'https://127.0.0.1:1'}}]\n"
        "users: [{name: u, user: {token: x}}]\n"
        "contexts: [{name: a, context: {cluster: c, user: u}}]\ncurrent-context: a\n"
    )
    writer = threading.Thread(target=kubeconfig.write_text, args=(text,), daemon=True)
    writer.start()
    result = run_cli("status", LAB, "--kubeconfig", str(kubeconfig))
    writer.join(5)
    assert result.code == 1, result.err
    assert result.err.startswith("gpuconf: https://127.0.0.1:1: cannot list nodes: "), result.err


def test_status_with_a_folder_for_kubeconfig_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("KUBECONFIG", raising=False)
    result = run_cli("status", LAB, "--kubeconfig", str(tmp_path))
    assert result.code == 1, result.err
    assert result.err == (
        f"gpuconf: cannot load the cluster's configuration: {tmp_path}: a folder, not a file\n"
    )


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("- a\n- b\n", "not a kubeconfig"),
        ("clusters: [\n", "not a kubeconfig"),
        (
            "clusters: 5\ncontexts: [{name: a, context: {cluster: c, user: u}}]\n"
            "current-context: a\n",
            "not a kubeconfig",
        ),
        (
            "clusters: [{name: c, cluster: {server: 'https://127.0.0.1:1'}}]\nusers: [{name: u, user: 5}]\n"
            "contexts: [{name: a, context: {cluster: c, user: u}}]\ncurrent-context: a\n",
            "not a kubeconfig",
        ),
        (None, "no such file"),
    ],
    ids=["a-list", "broken-yaml", "clusters-a-number", "user-a-number", "missing"],
)
def test_status_with_a_kubeconfig_kubectl_would_refuse_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str | None, reason: str
) -> None:
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    kubeconfig = tmp_path / "kubeconfig"
    if text is not None:
        kubeconfig.write_text(text)
    result = run_cli("status", LAB, "--kubeconfig", str(kubeconfig))
    assert result.code == 1, result.err
    assert result.err.startswith(
        f"gpuconf: cannot load the cluster's configuration: {kubeconfig}: {reason}"
    ), result.err
    assert result.err.count("\n") == 1
