"""Metrics of the node runtime: port 9402 beside DCGM's 9400, an optional PodMonitor valid for
the Prometheus Operator, an optional NetworkPolicy opening only the metrics port."""

from __future__ import annotations

from typing import Any

from builders import cluster_file, configmap_data, load_yaml, rendered
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


def test_the_default_metrics_port_is_not_dcgm_exporters() -> None:
    tree = rendered(_lab())
    [port] = _container(tree)["ports"]
    node_config = configmap_data(tree, "pools/t4/configmap-node-config.yaml", "node-config.yaml")
    assert port["containerPort"] == node_config["metricsPort"] == 9402 != DCGM_EXPORTER_PORT
    assert not any(path.startswith("monitoring/") for path in tree)


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
