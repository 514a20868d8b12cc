"""The Grafana dashboard: a ConfigMap the sidecar loads, whose per-class queries read series
that exist and compute capacity, allocated, quota and utilisation (`promtool test rules`
evaluates them on synthetic kube-state-metrics and dcgm-exporter series)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from builders import RENDERED, cluster_file, dcgm_series, load_yaml, read_tree, rendered

DASHBOARD = "monitoring/configmap-gpuconf-dashboard.yaml"
PROMTOOL = shutil.which("promtool")
# kube-state-metrics' series (kubernetes/kube-state-metrics v2.20 internal/store) and the
# dcgm-exporter fields gpuconf's counters file collects.
KSM_SERIES = {
    "kube_node_status_allocatable",
    "kube_pod_container_resource_requests",
    "kube_pod_status_phase",
    "kube_resourcequota",
}
DCGM_SERIES = dcgm_series()


def _board(tree: dict[str, bytes]) -> dict[str, Any]:
    configmap = load_yaml(tree[DASHBOARD])
    assert configmap["metadata"]["labels"]["grafana_dashboard"] == "1"
    [text] = configmap["data"].values()
    return json.loads(text)  # type: ignore[no-any-return]


def _queries(board: dict[str, Any]) -> dict[tuple[str, str], str]:
    return {
        (panel["title"], target["legendFormat"]): target["expr"]
        for panel in board["panels"]
        for target in panel["targets"]
    }


def test_fleet_has_a_panel_per_figure_and_a_query_per_class_on_series_that_exist() -> None:
    board = _board(read_tree(RENDERED / "fleet"))
    classes = {c["name"] for c in cluster_file("fleet")["spec"]["resourceClasses"]}
    queries = _queries(board)
    titles = {"Capacity", "Allocated", "Quota", "Utilisation (%)"}
    assert set(queries) == {(t, c) for t in titles for c in classes}
    for expr in queries.values():
        names = set(re.findall(r"\b([a-zA-Z_][a-zA-Z0-9_]*)\{", expr))
        assert names <= KSM_SERIES | DCGM_SERIES, expr


def test_dra_clusters_and_clusters_that_turn_it_off_get_no_dashboard() -> None:
    document = cluster_file("dra-lab")
    document["spec"].setdefault("node", {})["monitoring"] = {"dashboard": True}
    assert DASHBOARD not in rendered(document)
    assert DASHBOARD in read_tree(RENDERED / "lab")
    lab = cluster_file("lab")
    lab["spec"]["node"] = {"monitoring": {"dashboard": False}}
    assert DASHBOARD not in rendered(lab)


T4_SHARED = "gpus_example_com_t4_shared"
SERIES = {
    f'kube_node_status_allocatable{{node="t4-1",resource="{T4_SHARED}",unit="integer"}}': "8x10",
    f'kube_node_status_allocatable{{node="t4-2",resource="{T4_SHARED}",unit="integer"}}': "8x10",
    f'kube_pod_container_resource_requests{{namespace="search",pod="nb-1",container="main",resource="{T4_SHARED}"}}': "1x10",
    f'kube_pod_container_resource_requests{{namespace="search",pod="nb-2",container="main",resource="{T4_SHARED}"}}': "1x10",
    f'kube_pod_container_resource_requests{{namespace="search",pod="done",container="main",resource="{T4_SHARED}"}}': "1x10",
    'kube_pod_status_phase{namespace="search",pod="nb-1",phase="Running"}': "1x10",
    'kube_pod_status_phase{namespace="search",pod="nb-2",phase="Running"}': "1x10",
    'kube_pod_status_phase{namespace="search",pod="done",phase="Running"}': "0x10",
    'kube_pod_status_phase{namespace="search",pod="done",phase="Succeeded"}': "1x10",
    'kube_resourcequota{namespace="search",resourcequota="gpuconf-gpus",resource="requests.gpus.example.com/t4-shared",type="hard"}': "8x10",
    'kube_resourcequota{namespace="ads",resourcequota="gpuconf-gpus",resource="requests.gpus.example.com/t4-shared",type="hard"}': "8x10",
    'DCGM_FI_DEV_GPU_UTIL{UUID="GPU-0",namespace="search",pod="nb-1"}': "30x10",
    'DCGM_FI_DEV_GPU_UTIL{UUID="GPU-1",namespace="search",pod="nb-2"}': "50x10",
    'DCGM_FI_DEV_GPU_UTIL{UUID="GPU-2"}': "0x10",
}  # fmt: skip
EXPECTED = {"Capacity": 16, "Allocated": 2, "Quota": 16, "Utilisation (%)": 40}


@pytest.mark.skipif(
    PROMTOOL is None,
    reason="promtool not installed (Debian package prometheus; `make test` installs it as root)",
)
def test_the_queries_compute_the_figures_from_synthetic_series(tmp_path: Path) -> None:
    queries = _queries(_board(read_tree(RENDERED / "fleet")))
    (tmp_path / "rules.yaml").write_text("groups: []\n")
    tests = {
        "rule_files": ["rules.yaml"],
        "evaluation_interval": "1m",
        "tests": [
            {
                "interval": "1m",
                "input_series": [{"series": s, "values": v} for s, v in SERIES.items()],
                "promql_expr_test": [
                    {
                        "expr": queries[title, "t4-shared"],
                        "eval_time": "5m",
                        "exp_samples": [{"labels": "{}", "value": value}],
                    }
                    for title, value in EXPECTED.items()
                ],
            }
        ],
    }
    (tmp_path / "tests.yaml").write_text(yaml.safe_dump(tests))
    assert PROMTOOL is not None
    result = subprocess.run(
        [PROMTOOL, "test", "rules", "tests.yaml"],
        capture_output=True, text=True, cwd=tmp_path, timeout=120, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr


GRAFANA_UID = re.compile(r"^[a-zA-Z0-9\-_]{1,40}$")
"""What Grafana takes as a dashboard uid (grafana/grafana pkg/util/shortid_generator.go:
ValidateUID, MaxUIDLength 40)."""


def test_every_clusters_dashboard_uid_is_one_grafana_takes_however_long_its_name() -> None:
    uids = []
    for name in ("fleet", "a" * 62 + "x", "a" * 62 + "y"):
        document = cluster_file("fleet")
        document["metadata"]["name"] = name
        uids.append(_board(rendered(document))["uid"])
    assert uids[0] == "gpuconf-fleet"
    assert all(GRAFANA_UID.match(uid) for uid in uids), uids
    assert len(set(uids)) == 3
