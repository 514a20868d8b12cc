"""A PrometheusRule with gpuconf's alerts, over the metrics that really exist: the node
runtime's (gpuconf/node/metrics.py) and dcgm-exporter's (the counters file in
plan/dcgm_exporter_counters.py). Each alert links its section of docs/runbooks.md."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any, NamedTuple

from gpuconf.api.cluster import Cluster
from gpuconf.compiler.plan.artifact import Artifact, manifest
from gpuconf.compiler.plan.meta import optional_kind_metadata
from gpuconf.compiler.plan.monitoring import (
    DCGM_MONITOR,
    MONITORING,
    NODE_MONITOR,
    NODE_SERIES_LABEL,
    POOL_SERIES_LABEL,
    labelled,
    scrape_job,
)
from gpuconf.compiler.resolve.components import dcgm_exporter_runs_anywhere, dcgm_exporter_runs_on
from gpuconf.compiler.resolve.declared_inventory import DeclaredInventory
from gpuconf.compiler.resolve.object_labels import MONITORING_COMPONENT
from gpuconf.gpus.label_owner import runs_node_runtime
from gpuconf.gpus.xid import RESET_XIDS

RUNBOOKS = "https://github.com/gpuconf/gpuconf/blob/main/docs/runbooks.md"
HARDWARE_XIDS = (48, 79, 94, 95)
"""Double-bit ECC, fallen off the bus, contained and uncontained ECC: named by the issue that
asked for this alert, beside the catalog's reset class."""
THERMAL_REASONS = 32
"""DCGM's clock event reasons bitmask (nvmlClocksEventReasons): 0x20 software thermal
slowdown, 0x40 hardware thermal slowdown; floor(x / 32) % 4 > 0 tests either bit."""
IDLE_PERCENT = 5


class Alert(NamedTuple):
    name: str
    expr: str
    wait: str
    severity: str
    summary: str
    description: str

    def rule(self) -> dict[str, Any]:
        return {
            "alert": self.name,
            "expr": self.expr,
            "for": _duration(self.wait),
            "labels": {"severity": self.severity},
            "annotations": {
                "summary": self.summary,
                "description": self.description,
                "runbook_url": f"{RUNBOOKS}#{self.name.lower()}",
            },
        }


def _duration(text: str) -> dict[str, int]:
    """A Prometheus duration ("5m") as {unit: amount}: prometheusrule.yaml.j2 joins the two, so
    the pattern the PrometheusRule CRD holds `for` to constrains a number, not free text."""
    return {text[-1]: int(text[:-1])}


def _node_runtime_alerts() -> list[Alert]:
    return [
        Alert(
            "GpuconfPluginNotRegistered",
            "gpuconf_node_registered == 0",
            "5m",
            "critical",
            "A gpuconf resource is not registered with the kubelet.",
            "The node advertises none of this resource's devices: pods requesting it stay Pending.",
        ),
        Alert(
            "GpuconfInventoryDrift",
            "gpuconf_node_inventory_drift == 1",
            "15m",
            "warning",
            "A node's GPUs differ from those declared.",
            "Model, count, UUIDs or MIG layout differ from the cluster file; see the node's "
            "gpuconf.dev/inventory-report annotation.",
        ),
        Alert(
            "GpuconfNodeConfigRefused",
            "gpuconf_node_config_refused == 1",
            "5m",
            "warning",
            "A node refused its changed node config.",
            "gpuconf node keeps serving the last good config; the logs name the problem.",
        ),
        Alert(
            "GpuconfMPSDaemonDown",
            "gpuconf_node_mps_daemon_up == 0",
            "5m",
            "critical",
            "An MPS control daemon does not answer.",
            "The MPS class's devices are withdrawn from the kubelet until the daemon answers.",
        ),
        Alert(
            "GpuconfGrantsNotSaved",
            "gpuconf_node_handed_out_save_failing == 1",
            "5m",
            "warning",
            "A node cannot save which GPUs its plugin handed out.",
            "Pods still start, but a restart of gpuconf node now could offer a GPU just handed "
            "out under a new class; the node's state folder is not writable.",
        ),
        Alert(
            "GpuconfGPUChangesPendingTooLong",
            "gpuconf_node_pending_gpu_changes > 0",
            "2h",
            "warning",
            "A GPU config change has waited two hours for running containers.",
            "A re-classed GPU is still held by a container; the change applies when it ends.",
        ),
    ]


def _gpu_lost(cluster: Cluster, inventory: DeclaredInventory, dcgm: bool, node: bool) -> Alert:
    """Fewer GPUs than declared: by the node runtime's count, and by dcgm-exporter's series."""
    parts = ["gpuconf_node_gpus_present < gpuconf_node_gpus_declared"] if node else []
    if dcgm:
        exporter = scrape_job(cluster, DCGM_MONITOR)
        for pool in cluster.spec.node_pools:
            if dcgm_exporter_runs_on(cluster, pool):
                parts += _dcgm_gpu_counts(pool.name, inventory, exporter)
    return Alert(
        "GpuconfGPULost",
        " or ".join(f"({part})" for part in parts),
        "2m",
        "critical",
        "A node has fewer GPUs than declared.",
        "A GPU fell off the bus or is no longer seen by NVML/DCGM; its pods fail.",
    )


def _dcgm_gpu_counts(pool: str, inventory: DeclaredInventory, exporter: str) -> list[str]:
    """One comparison per declared GPU count in the pool: nodes with the usual count (the
    undeclared ones', else the commonest) by the pool alone, the others named.

    A node whose GPUs all fell off the bus has no DCGM_FI_DEV_* series at all, so the count has
    no sample for it: each node whose exporter answers (`up` of the exporter's scrape job is 1)
    counts as 0 GPUs unless it has GPU series. A node whose exporter does not answer is left to
    GpuconfMetricsTargetDown. The join is on the PodMonitor's `node` label (the pod's node),
    which `up` carries too; dcgm-exporter's own `Hostname` label is on GPU series only
    (NVIDIA/dcgm-exporter internal/pkg/collector/gpu_collector.go)."""
    by = f"{POOL_SERIES_LABEL}, {NODE_SERIES_LABEL}"
    groups = list(inventory.by_pool(pool))
    counts = Counter(len(g.shape) for g in groups if g.node is not None)
    usual = next(
        (len(g.shape) for g in groups if g.node is None),
        counts.most_common(1)[0][0] if counts else 0,
    )
    unusual: dict[int, list[str]] = {}
    for group in groups:
        if group.node is not None and len(group.shape) != usual:
            unusual.setdefault(len(group.shape), []).append(group.node)
    every_unusual = sorted(node for nodes in unusual.values() for node in nodes)
    selections = [
        (usual, f'{NODE_SERIES_LABEL}!~"{_alternatives(every_unusual)}"' if unusual else "")
    ]
    selections += [
        (count, f'{NODE_SERIES_LABEL}=~"{_alternatives(sorted(nodes))}"')
        for count, nodes in sorted(unusual.items())
    ]
    parts = []
    for count, nodes in selections:
        where = ", ".join(filter(None, [f'{POOL_SERIES_LABEL}="{pool}"', nodes]))
        gpus = f"count by ({by}) (group by ({by}, UUID) (DCGM_FI_DEV_GPU_TEMP{{{where}}}))"
        answering = f'0 * group by ({by}) (up{{job="{exporter}", {where}}} == 1)'
        parts.append(f"({gpus} or on ({by}) {answering}) < {count}")
    return parts


def _alternatives(names: Iterable[str]) -> str:
    """Node names (DNS subdomains: a-z, 0-9, '-', '.') or scrape jobs (ScrapeJob: those and
    `_:/`) as an RE2 alternation inside a PromQL string, where a literal dot is written \\\\.
    (the string unescapes it to \\.); no other character of theirs is special in either."""
    return "|".join(name.replace(".", "\\\\.") for name in names)


def _target_down(jobs: list[str]) -> Alert:
    """A node runtime or dcgm-exporter Prometheus cannot scrape: GpuconfGPULost cannot see that
    node's GPUs then, so this one pages instead. Only targets with a pool: a site's own scrape
    job (monitoring.scrapeJobs) may hold other pods too."""
    return Alert(
        "GpuconfMetricsTargetDown",
        f'up{{job=~"{_alternatives(jobs)}", {POOL_SERIES_LABEL}!=""}} == 0',
        "5m",
        "critical",
        "Prometheus cannot scrape a node's gpuconf or dcgm-exporter metrics.",
        "The node's GPU alerts are blind while its exporter does not answer.",
    )


def _dcgm_alerts(cluster: Cluster) -> list[Alert]:
    health = cluster.spec.node.health
    reset = RESET_XIDS if health.reset_xids is None else tuple(health.reset_xids)
    xids = sorted(set(HARDWARE_XIDS) | set(reset))
    return [
        Alert(
            "GpuconfGPUHardwareXid",
            " or ".join(f"DCGM_FI_DEV_XID_ERRORS == {xid}" for xid in xids),
            "0m",
            "critical",
            "A GPU reported an XID that needs a reset or a reboot.",
            "The last XID of this GPU is of the reset class ("
            + ", ".join(map(str, xids))
            + "); its value is the XID.",
        ),
        Alert(
            "GpuconfGPUDoubleBitECC",
            "increase(DCGM_FI_DEV_ECC_DBE_VOL_TOTAL[15m]) > 0",
            "0m",
            "critical",
            "A GPU had double-bit (uncorrectable) ECC errors.",
            "Memory errors the GPU could not correct; the work on it may be corrupt.",
        ),
        Alert(
            "GpuconfGPUThermalThrottling",
            f"floor(DCGM_FI_DEV_CLOCKS_EVENT_REASONS / {THERMAL_REASONS}) % 4 > 0",
            "10m",
            "warning",
            "A GPU slows its clocks because it is too hot.",
            "Software or hardware thermal slowdown for ten minutes.",
        ),
        Alert(
            "GpuconfGPUAllocatedButIdle",
            f'avg_over_time(DCGM_FI_DEV_GPU_UTIL{{pod!=""}}[1h]) < {IDLE_PERCENT}',
            "1h",
            "info",
            "A pod holds a GPU it has hardly used for two hours.",
            f"Average utilisation under {IDLE_PERCENT}% while allocated: a cost to reclaim.",
        ),
    ]


def alerts(cluster: Cluster, inventory: DeclaredInventory) -> list[Alert]:
    node = runs_node_runtime(cluster.spec)
    dcgm = dcgm_exporter_runs_anywhere(cluster)
    found = []
    jobs = [scrape_job(cluster, NODE_MONITOR)] if node else []
    jobs += [scrape_job(cluster, DCGM_MONITOR)] if dcgm else []
    if jobs:
        found += [_gpu_lost(cluster, inventory, dcgm, node), _target_down(jobs)]
    if node:
        found += _node_runtime_alerts()
    if dcgm:
        found += _dcgm_alerts(cluster)
    return found


def prometheus_rule(cluster: Cluster, inventory: DeclaredInventory) -> list[Artifact]:
    settings = cluster.spec.node.monitoring
    if not settings.prometheus_rule:
        return []
    found = alerts(cluster, inventory)
    if not found:
        return []
    meta = optional_kind_metadata(cluster, "gpuconf", MONITORING_COMPONENT, cluster.spec.namespace)
    return [
        manifest(
            "monitoring/prometheusrule-gpuconf.yaml",
            "prometheusrule.yaml.j2",
            "PrometheusRule",
            {
                "meta": labelled(cluster, meta),
                "group": "gpuconf",
                "rules": [a.rule() for a in found],
            },
            source=MONITORING,
        )
    ]
