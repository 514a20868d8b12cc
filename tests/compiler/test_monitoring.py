"""Metrics of the node runtime: port 9402 beside DCGM's 9400, PodMonitors (on by default) valid
for the Prometheus Operator that select every GPU pool's exporter and node runtime, an optional
NetworkPolicy opening only the metrics port.

How the Prometheus Operator picks a PodMonitor's pods (prometheus-operator v0.93, pkg/prometheus/
promcfg.go): namespaceSelector `any` means every namespace, no matchNames the monitor's own
(getNamespacesFromNamespaceSelector); the selector is a Kubernetes LabelSelector; a target is
kept only where the container port's name is the endpoint's `port`.
"""

from __future__ import annotations

from typing import Any

import pytest
from builders import (
    EXAMPLES,
    RENDERED,
    cluster_file,
    configmap_data,
    errors,
    load_yaml,
    manifest_paths,
    read_tree,
    rendered,
)
from crd_schemas import crd_errors

DCGM_EXPORTER_PORT = 9400


def _lab(**monitoring: Any) -> dict[str, Any]:
    document = cluster_file("lab")
    document["spec"]["node"] = {"monitoring": monitoring}
    return document


def _container(tree: dict[str, bytes]) -> dict[str, Any]:
    daemonset = load_yaml(tree["pools/t4/daemonset-gpuconf-node.yaml"])
    [container] = daemonset["spec"]["template"]["spec"]["containers"]
    return container  # type: ignore[no-any-return]


PROMETHEUS_OPERATOR_GROUP = "monitoring.coreos.com/"
SYNC_WAVE = "argocd.argoproj.io/sync-wave"
SYNC_OPTIONS = "argocd.argoproj.io/sync-options"
NO_PROMETHEUS_OPERATOR = {"podMonitor": False, "prometheusRule": False}


def test_the_default_metrics_port_is_not_dcgm_exporters() -> None:
    tree = rendered(_lab())
    [port] = _container(tree)["ports"]
    node_config = configmap_data(tree, "pools/t4/configmap-node-config.yaml", "node-config.yaml")
    assert port["containerPort"] == node_config["metricsPort"] == 9402 != DCGM_EXPORTER_PORT


def _label_selector_matches(selector: dict[str, Any], labels: dict[str, str]) -> bool:
    """A Kubernetes LabelSelector: every matchLabels pair and every matchExpression holds."""
    if not selector.get("matchLabels") and not selector.get("matchExpressions"):
        return True
    for key, value in selector.get("matchLabels", {}).items():
        if labels.get(key) != value:
            return False
    for expression in selector.get("matchExpressions", []):
        key, operator = expression["key"], expression["operator"]
        values = expression.get("values", [])
        held = {
            "In": key in labels and labels[key] in values,
            "NotIn": key not in labels or labels[key] not in values,
            "Exists": key in labels,
            "DoesNotExist": key not in labels,
        }[operator]
        if not held:
            return False
    return True


def _monitored_namespaces(monitor: dict[str, Any]) -> set[str] | None:
    """None: every namespace."""
    chosen = monitor["spec"].get("namespaceSelector", {})
    if chosen.get("any"):
        return None
    return set(chosen.get("matchNames") or [monitor["metadata"]["namespace"]])


def _scrapes(monitor: dict[str, Any], daemonset: dict[str, Any]) -> bool:
    namespaces = _monitored_namespaces(monitor)
    if namespaces is not None and daemonset["metadata"]["namespace"] not in namespaces:
        return False
    template = daemonset["spec"]["template"]
    if not _label_selector_matches(monitor["spec"]["selector"], template["metadata"]["labels"]):
        return False
    ports = {p.get("name") for c in template["spec"]["containers"] for p in c.get("ports", [])}
    return any(e.get("port") in ports for e in monitor["spec"]["podMetricsEndpoints"])


def _manifests(tree: dict[str, bytes]) -> dict[str, dict[str, Any]]:
    return {path: load_yaml(tree[path]) for path in manifest_paths(tree)}


@pytest.mark.parametrize("example", EXAMPLES)
def test_every_gpu_pool_s_exporter_and_node_runtime_pods_are_scraped_by_a_pod_monitor(
    example: str,
) -> None:
    tree = read_tree(RENDERED / example)
    manifests = _manifests(tree)
    monitors = [m for m in manifests.values() if m["kind"] == "PodMonitor"]
    pools = sorted({path.split("/")[1] for path in tree if path.startswith("pools/")})
    assert pools
    for pool in pools:
        config = configmap_data(
            tree, f"pools/{pool}/configmap-node-config.yaml", "node-config.yaml"
        )
        scraped = [f"pools/{pool}/daemonset-gpuconf-node.yaml"]
        if config.get("platform") != "tegra":  # no DCGM on a Jetson
            scraped.append(f"pools/{pool}/daemonset-dcgm-exporter.yaml")
        for path in scraped:
            if path.endswith("gpuconf-node.yaml") and path not in manifests:
                continue  # NVIDIA's plugin or DRA: no gpuconf node runtime on the pool
            daemonset = manifests[path]
            assert any(_scrapes(m, daemonset) for m in monitors), path


@pytest.mark.parametrize("example", EXAMPLES)
def test_prometheus_operator_objects_never_hold_back_the_rest_of_an_argo_cd_sync(
    example: str,
) -> None:
    """Argo CD dry-runs the whole sync first and stops at a wave that fails: an object of a
    kind the cluster lacks carries SkipDryRunOnMissingResource and comes after every other."""
    manifests = _manifests(read_tree(RENDERED / example))
    waves = {
        path: int(m["metadata"].get("annotations", {}).get(SYNC_WAVE, "0"))
        for path, m in manifests.items()
    }
    optional = {
        p for p, m in manifests.items() if m["apiVersion"].startswith(PROMETHEUS_OPERATOR_GROUP)
    }
    assert optional
    for path in optional:
        options = manifests[path]["metadata"]["annotations"][SYNC_OPTIONS].split(",")
        assert "SkipDryRunOnMissingResource=true" in [o.strip() for o in options]
        assert all(waves[path] > waves[other] for other in waves.keys() - optional), path


def test_a_cluster_without_the_prometheus_operator_renders_none_of_its_kinds() -> None:
    tree = rendered(_lab(**NO_PROMETHEUS_OPERATOR))
    kinds = {m["apiVersion"] for m in _manifests(tree).values()}
    assert not [k for k in kinds if k.startswith(PROMETHEUS_OPERATOR_GROUP)]
    assert "pools/t4/daemonset-dcgm-exporter.yaml" in tree
    # The dashboard is a plain ConfigMap: it stays, for a Grafana without the Operator.
    assert "monitoring/configmap-gpuconf-dashboard.yaml" in tree


def test_the_pod_monitor_scrapes_the_node_pods_metrics_port_and_fits_its_crd() -> None:
    tree = rendered(_lab(podMonitor=True))
    monitor = load_yaml(tree["monitoring/podmonitor-gpuconf-node.yaml"])
    assert crd_errors(monitor) == []
    assert monitor["metadata"]["namespace"] == "gpuconf-system"
    [endpoint] = monitor["spec"]["podMetricsEndpoints"]
    assert endpoint["port"] == _container(tree)["ports"][0]["name"]
    pod_labels = load_yaml(tree["pools/t4/daemonset-gpuconf-node.yaml"])["spec"]["template"][
        "metadata"
    ]["labels"]
    assert monitor["spec"]["selector"]["matchLabels"].items() <= pod_labels.items()


def test_the_network_policy_admits_only_the_scrapers_to_only_the_metrics_port() -> None:
    tree = rendered(_lab(networkPolicy=True, scraperNamespaces=["prometheus", "monitoring"]))
    policy = load_yaml(tree["monitoring/networkpolicy-gpuconf-node-metrics.yaml"])
    assert policy["spec"]["policyTypes"] == ["Ingress"]
    [rule] = policy["spec"]["ingress"]
    assert rule["ports"] == [{"port": 9402, "protocol": "TCP"}]
    allowed = [f["namespaceSelector"]["matchLabels"] for f in rule["from"]]
    assert allowed == [
        {"kubernetes.io/metadata.name": "monitoring"},
        {"kubernetes.io/metadata.name": "prometheus"},
    ]
    assert (
        "monitoring/networkpolicy-gpuconf-node-metrics.yaml"
        in load_yaml(tree["kustomization.yaml"])["resources"]
    )


def test_a_changed_metrics_port_moves_the_network_policy_with_it() -> None:
    document = _lab(networkPolicy=True)
    document["spec"]["node"]["metricsPort"] = 9500
    tree = rendered(document)
    policy = load_yaml(tree["monitoring/networkpolicy-gpuconf-node-metrics.yaml"])
    assert policy["spec"]["ingress"][0]["ports"][0]["port"] == 9500
    assert _container(tree)["ports"][0]["containerPort"] == 9500


MONITORING_PATH = ("spec", "node", "monitoring")


def test_alerts_without_pod_monitors_need_the_scrape_jobs_they_select() -> None:
    # lab runs the node runtime and dcgm-exporter: the alerts select both jobs.
    [found] = errors(_lab(podMonitor=False))
    assert found.path == (*MONITORING_PATH, "podMonitor")
    assert "node and dcgmExporter" in found.message
    assert "scrapeJobs.node and scrapeJobs.dcgmExporter" in found.hint
    [found] = errors(_lab(podMonitor=False, scrapeJobs={"node": "gpuconf"}))
    assert "scrapeJobs.dcgmExporter" in found.hint
    assert "scrapeJobs.node" not in found.hint
    # Without the rule there is nothing to select.
    assert RULE_PATH not in rendered(_lab(**NO_PROMETHEUS_OPERATOR))


@pytest.mark.parametrize("unused", [{}, {"podMonitor": False, "prometheusRule": False}])
def test_scrape_jobs_nothing_reads_are_refused(unused: dict[str, bool]) -> None:
    # Beside PodMonitors the alerts select theirs; without the rule there are no alerts.
    [found] = errors(_lab(scrapeJobs={"node": "gpuconf"}, **unused))
    assert found.path == (*MONITORING_PATH, "scrapeJobs")


def test_the_alerts_select_the_sites_scrape_jobs_where_there_are_no_pod_monitors() -> None:
    jobs = {"node": "kubernetes-pods.gpuconf", "dcgmExporter": "gpu/dcgm-exporter"}
    tree = rendered(_lab(podMonitor=False, scrapeJobs=jobs))
    assert not [path for path in tree if "podmonitor" in path]
    rules = {
        r["alert"]: r["expr"]
        for group in load_yaml(tree[RULE_PATH])["spec"]["groups"]
        for r in group["rules"]
    }
    # A regex alternation: the dot escaped, so it matches only itself.
    expected = 'up{job=~"kubernetes-pods\\\\.gpuconf|gpu/dcgm-exporter", gpuconf_pool!=""} == 0'
    assert rules["GpuconfMetricsTargetDown"] == expected
    assert 'up{job="gpu/dcgm-exporter", gpuconf_pool="t4"}' in rules["GpuconfGPULost"]


@pytest.mark.parametrize("job", ["a b", 'a"b', "a|b", "a\\b", ""])
def test_a_scrape_job_that_would_need_escaping_is_refused(job: str) -> None:
    [found] = errors(_lab(podMonitor=False, scrapeJobs={"node": job, "dcgmExporter": "d"}))
    assert found.path == (*MONITORING_PATH, "scrapeJobs", "node")


RULE_PATH = "monitoring/prometheusrule-gpuconf.yaml"
