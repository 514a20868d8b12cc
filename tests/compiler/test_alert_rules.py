"""gpuconf's PrometheusRule passes `promtool check rules`, and `promtool test rules` fires every
alert on synthetic series and keeps each quiet on others (Debian's prometheus package ships
promtool; `make test` installs it when run as root)."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import Any, NamedTuple

import pytest
import yaml
from builders import (
    EXAMPLES,
    RENDERED,
    REPO,
    cluster_file,
    dcgm_series,
    load_yaml,
    read_tree,
    rendered,
)
from crd_schemas import crd_errors

RULE = "monitoring/prometheusrule-gpuconf.yaml"
PROMTOOL = shutil.which("promtool")
needs_promtool = pytest.mark.skipif(
    PROMTOOL is None,
    reason="promtool not installed (Debian package prometheus; `make test` installs it as root)",
)


class Case(NamedTuple):
    series: dict[str, str]
    """Series selector -> promtool's expanding values notation."""
    eval_time: str
    fires: dict[str, str] | None
    """The alert's labels (severity aside) when it fires; None when it must stay quiet."""


GPU = {"gpuconf_pool": "t4", "node": "t4-1", "UUID": "GPU-a", "gpu": "0"}
WORKLOAD = {**GPU, "pod": "notebook-0", "namespace": "ml", "container": "main"}


def _selector(name: str, labels: dict[str, str]) -> str:
    return name + "{" + ",".join(f'{k}="{v}"' for k, v in sorted(labels.items())) + "}"


NODE = {"node": "t4-1", "gpuconf_pool": "t4"}
MPS = {**NODE, "resource": "gpus.example.com/a100-mps"}
CASES: dict[str, list[Case]] = {
    "GpuconfGPUHardwareXid": [
        Case({_selector("DCGM_FI_DEV_XID_ERRORS", GPU): "79x10"}, "5m", GPU),
        Case({_selector("DCGM_FI_DEV_XID_ERRORS", GPU): "94x10"}, "5m", GPU),
        Case({_selector("DCGM_FI_DEV_XID_ERRORS", GPU): "13x10"}, "5m", None),
    ],
    "GpuconfGPUDoubleBitECC": [
        Case({_selector("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", GPU): "0x5 1x10"}, "10m", GPU),
        Case({_selector("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", GPU): "2x15"}, "10m", None),
    ],
    "GpuconfGPUThermalThrottling": [
        Case({_selector("DCGM_FI_DEV_CLOCKS_EVENT_REASONS", GPU): "64x20"}, "15m", GPU),
        Case({_selector("DCGM_FI_DEV_CLOCKS_EVENT_REASONS", GPU): "32x20"}, "15m", GPU),
        # Power cap (0x4) and power brake (0x80) are not heat.
        Case({_selector("DCGM_FI_DEV_CLOCKS_EVENT_REASONS", GPU): "132x20"}, "15m", None),
    ],
    "GpuconfPluginNotRegistered": [
        Case({_selector("gpuconf_node_registered", MPS): "0x10"}, "8m", MPS),
        Case({_selector("gpuconf_node_registered", MPS): "0x3 1x10"}, "8m", None),
    ],
    "GpuconfInventoryDrift": [
        Case({_selector("gpuconf_node_inventory_drift", NODE): "1x20"}, "18m", NODE),
        Case({_selector("gpuconf_node_inventory_drift", NODE): "1x5 0x20"}, "18m", None),
    ],
    "GpuconfGrantsNotSaved": [
        Case({_selector("gpuconf_node_handed_out_save_failing", NODE): "1x10"}, "8m", NODE),
        Case({_selector("gpuconf_node_handed_out_save_failing", NODE): "1x3 0x7"}, "8m", None),
    ],
    "GpuconfNodeConfigRefused": [
        Case({_selector("gpuconf_node_config_refused", NODE): "1x10"}, "8m", NODE),
        Case({_selector("gpuconf_node_config_refused", NODE): "0x10"}, "8m", None),
    ],
    "GpuconfMPSDaemonDown": [
        Case({_selector("gpuconf_node_mps_daemon_up", MPS): "0x10"}, "8m", MPS),
        Case({_selector("gpuconf_node_mps_daemon_up", MPS): "1x10"}, "8m", None),
    ],
    "GpuconfGPUChangesPendingTooLong": [
        Case({_selector("gpuconf_node_pending_gpu_changes", NODE): "1x150"}, "140m", NODE),
        Case({_selector("gpuconf_node_pending_gpu_changes", NODE): "1x60 0x90"}, "140m", None),
    ],
    "GpuconfGPUAllocatedButIdle": [
        Case({_selector("DCGM_FI_DEV_GPU_UTIL", WORKLOAD): "1x200"}, "150m", WORKLOAD),
        Case({_selector("DCGM_FI_DEV_GPU_UTIL", WORKLOAD): "80x200"}, "150m", None),
        # Idle but held by nobody: not a cost to reclaim from a pod.
        Case({_selector("DCGM_FI_DEV_GPU_UTIL", GPU): "0x200"}, "150m", None),
    ],
}  # fmt: skip


def _rules(tree: dict[str, bytes]) -> dict[str, Any]:
    return {"groups": load_yaml(tree[RULE])["spec"]["groups"]}


def _alerts(rules: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {r["alert"]: r for group in rules["groups"] for r in group["rules"]}


def _promtool(*argv: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    assert PROMTOOL is not None
    return subprocess.run(
        [PROMTOOL, *argv], capture_output=True, text=True, cwd=cwd, timeout=120, check=False
    )


POOL_GPU_COUNT = re.compile(r'up\{job="([^"]+)", gpuconf_pool="([^"]+)"\} == 1\)\) < (\d+)')
"""A pool's usual GPU count in GpuconfGPULost's dcgm-exporter comparison (no node filter), with
the exporter's scrape job whose `up` stands in for a node that reports no GPU at all."""
TARGET_JOBS = re.compile(r'up\{job=~"([^"]+)", gpuconf_pool!=""\} == 0')


def _gpu_lost_cases(expr: str) -> list[Case]:
    """GpuconfGPULost's cases for one cluster's rule: every dcgm-exporter pool losing all of a
    node's GPUs (one GPU or eight: the node then reports no GPU series at all) fires; its first
    pool with two or more GPUs a node losing one fires; a healthy node and a node whose exporter
    does not answer (GpuconfMetricsTargetDown's business) stay quiet."""
    by_node_runtime = "gpuconf_node_gpus_present" in expr
    pools = [(job, pool, int(count)) for job, pool, count in POOL_GPU_COUNT.findall(expr)]
    assert bool(pools) == ("DCGM_FI_DEV_GPU_TEMP" in expr), expr
    job, pool, count = next((p for p in pools if p[2] >= 2), ("", "t4", 4))
    node = {"node": f"{pool}-1", "gpuconf_pool": pool}

    def gauges(present: int) -> dict[str, str]:
        return {
            _selector("gpuconf_node_gpus_present", node): f"{present}x20",
            _selector("gpuconf_node_gpus_declared", node): f"{count}x20",
        }

    def exporter(job: str, pool: str, gpus: int, up: int = 1) -> dict[str, str]:
        labels = {"node": f"{pool}-1", "gpuconf_pool": pool}
        temps = {
            _selector("DCGM_FI_DEV_GPU_TEMP", {**labels, "UUID": f"GPU-{i}", "gpu": str(i)}): (
                "60x20"
            )
            for i in range(gpus)
        }
        return {_selector("up", {**labels, "job": job}): f"{up}x20", **temps}

    cases = [Case(gauges(count - 1), "10m", node)] if by_node_runtime else []
    for each_job, each_pool, _ in pools:
        lost_all = {"node": f"{each_pool}-1", "gpuconf_pool": each_pool}
        cases.append(Case(exporter(each_job, each_pool, 0), "10m", lost_all))
    if pools:
        cases.append(Case(exporter(job, pool, count - 1), "10m", node))
        cases.append(Case(exporter(job, pool, 0, up=0), "10m", None))
    healthy = {**gauges(count), **(exporter(job, pool, count) if pools else {})}
    cases.append(Case(healthy, "10m", None))
    return cases


def _target_down_cases(expr: str) -> list[Case]:
    """Each scraped job's target down for ten minutes fires; one that answers stays quiet."""
    match = TARGET_JOBS.search(expr)
    assert match is not None, expr
    # A dot in a job is escaped in the alternation (\\\\. in the PromQL string): the label's
    # own spelling has it bare, and any other character in its place must not match.
    jobs = [job.replace("\\\\.", ".") for job in match.group(1).split("|")]
    cases = []
    for job in jobs:
        target = {**NODE, "job": job}
        cases.append(Case({_selector("up", target): "0x10"}, "8m", target))
        if "." in job:
            other = {**NODE, "job": job.replace(".", "x")}
            cases.append(Case({_selector("up", other): "0x10"}, "8m", None))
        # Another pod the job scrapes (a site's own job may): no pool, not gpuconf's business.
        not_ours = {"node": NODE["node"], "job": job}
        cases.append(Case({_selector("up", not_ours): "0x10"}, "8m", None))
    cases.append(Case({_selector("up", {**NODE, "job": jobs[0]}): "0x2 1x10"}, "8m", None))
    return cases


def _cases(name: str, rule: dict[str, Any]) -> list[Case]:
    if name == "GpuconfGPULost":
        return _gpu_lost_cases(rule["expr"])
    if name == "GpuconfMetricsTargetDown":
        return _target_down_cases(rule["expr"])
    return CASES[name]


def _unit_tests(rules: dict[str, Any]) -> dict[str, Any]:
    tests = []
    for name, rule in _alerts(rules).items():
        for case in _cases(name, rule):
            expected = []
            if case.fires is not None:
                expected.append(
                    {
                        "exp_labels": {**case.fires, **rule["labels"]},
                        "exp_annotations": rule["annotations"],
                    }
                )
            tests.append(
                {
                    "interval": "1m",
                    "input_series": [
                        {"series": series, "values": values}
                        for series, values in case.series.items()
                    ],
                    "alert_rule_test": [
                        {"eval_time": case.eval_time, "alertname": name, "exp_alerts": expected}
                    ],
                }
            )
    return {"rule_files": ["rules.yaml"], "evaluation_interval": "1m", "tests": tests}


def _with_rules(*examples: str) -> list[str]:
    return [e for e in examples if RULE in read_tree(RENDERED / e)]


def test_every_cluster_renders_the_rule_by_default_and_it_fits_the_prometheus_operator_crd() -> (
    None
):
    assert _with_rules(*EXAMPLES) == EXAMPLES
    for example in EXAMPLES:
        assert crd_errors(load_yaml(read_tree(RENDERED / example)[RULE])) == []
    fleet = load_yaml(read_tree(RENDERED / "fleet")[RULE])
    assert fleet["metadata"]["labels"]["release"] == "kube-prometheus-stack"


def test_every_alert_has_a_case_that_fires_it_and_one_that_does_not() -> None:
    alerts = _alerts(_rules(read_tree(RENDERED / "fleet")))
    assert set(alerts) == {*CASES, "GpuconfGPULost", "GpuconfMetricsTargetDown"}
    for name, rule in alerts.items():
        cases = _cases(name, rule)
        assert any(c.fires is not None for c in cases), name
        assert any(c.fires is None for c in cases), name


def test_every_alert_links_its_runbook_section() -> None:
    runbooks = (REPO / "docs" / "runbooks.md").read_text(encoding="utf-8")
    headings = {
        line[3:].strip().lower() for line in runbooks.splitlines() if line.startswith("## ")
    }
    for name, rule in _alerts(_rules(read_tree(RENDERED / "fleet"))).items():
        anchor = rule["annotations"]["runbook_url"].split("#")[1]
        assert anchor == name.lower()
        assert anchor in headings


@pytest.mark.parametrize(
    ("example", "pools"), [("fleet", {"l4": 1, "a100": 8}), ("dra-lab", {"l4": 1})]
)
def test_the_gpu_lost_cases_lose_every_gpu_of_one_and_eight_gpu_nodes(
    example: str, pools: dict[str, int]
) -> None:
    """A node whose GPUs all fell off the bus reports no DCGM series: the promtool cases above
    fire GpuconfGPULost for it from the exporter's `up` alone, for these pools among others."""
    expr = _alerts(_rules(read_tree(RENDERED / example)))["GpuconfGPULost"]["expr"]
    found = {pool: int(count) for _, pool, count in POOL_GPU_COUNT.findall(expr)}
    assert pools.items() <= found.items()
    lost_all = [c for c in _gpu_lost_cases(expr) if c.fires is not None and "up{" in str(c.series)]
    for pool in pools:
        case = next(c for c in lost_all if c.fires == {"node": f"{pool}-1", "gpuconf_pool": pool})
        assert not any(s.startswith("DCGM_FI_DEV_GPU_TEMP") for s in case.series)


def _check_and_test(rules: dict[str, Any], folder: Path) -> None:
    """promtool check rules on `rules`, then promtool test rules on their cases (_unit_tests)."""
    (folder / "rules.yaml").write_text(yaml.safe_dump(rules))
    checked = _promtool("check", "rules", "rules.yaml", cwd=folder)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    (folder / "tests.yaml").write_text(yaml.safe_dump(_unit_tests(rules)))
    tested = _promtool("test", "rules", "tests.yaml", cwd=folder)
    assert tested.returncode == 0, tested.stdout + tested.stderr


@needs_promtool
@pytest.mark.parametrize("example", _with_rules(*EXAMPLES))
def test_promtool_accepts_the_rules_and_their_unit_tests_pass(example: str, tmp_path: Path) -> None:
    rules = _rules(read_tree(RENDERED / example))
    _check_and_test(rules, tmp_path)


@needs_promtool
def test_without_pod_monitors_the_alerts_fire_on_the_sites_own_scrape_jobs(tmp_path: Path) -> None:
    document = cluster_file("lab")
    document["spec"]["node"] = {
        "monitoring": {
            "podMonitor": False,
            "scrapeJobs": {"node": "kubernetes-pods.gpuconf", "dcgmExporter": "gpu/dcgm"},
        }
    }
    rules = _rules(rendered(document))
    assert "kubernetes-pods" in _alerts(rules)["GpuconfMetricsTargetDown"]["expr"]
    _check_and_test(rules, tmp_path)


@needs_promtool
def test_a_cluster_without_the_node_runtime_gets_only_the_dcgm_alerts(tmp_path: Path) -> None:
    document = cluster_file("nvidia-plugin")
    document["spec"].setdefault("node", {})["monitoring"] = {"prometheusRule": True}
    rules = _rules(rendered(document))
    assert not any("gpuconf_node_" in r["expr"] for r in _alerts(rules).values())
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump(rules))
    checked = _promtool("check", "rules", "rules.yaml", cwd=tmp_path)
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_every_dcgm_series_a_rule_reads_is_one_the_exporter_is_told_to_collect() -> None:
    # dcgm-exporter exports only the fields of its counters file (internal/pkg/counters): a
    # rule on any other would never fire, and promtool's synthetic series cannot tell.
    collected = dcgm_series()
    for example in EXAMPLES:
        tree = read_tree(RENDERED / example)
        if RULE not in tree:
            continue
        for group in load_yaml(tree[RULE])["spec"]["groups"]:
            for rule in group["rules"]:
                read = set(re.findall(r"\b(DCGM_FI_[A-Z0-9_]+)", rule["expr"]))
                assert read <= collected, (example, rule.get("alert"), read - collected)
