"""spec.node: device list strategy per engine, XID classes that do not overlap, the scrape jobs
the alerts select."""

from __future__ import annotations

from collections.abc import Iterator

from gpuconf.compiler.resolve.components import dcgm_exporter_runs_anywhere
from gpuconf.compiler.resolve.device_lists import engine_runs_cdi
from gpuconf.compiler.rules.context import SPEC, RuleContext
from gpuconf.diagnostics import Diagnostic
from gpuconf.gpus.label_owner import runs_node_runtime

NODE = (*SPEC, "node")


def check(ctx: RuleContext) -> Iterator[Diagnostic]:
    yield from _device_lists(ctx)
    yield from _xid_classes(ctx)
    yield from _scrape_jobs(ctx)


def _device_lists(ctx: RuleContext) -> Iterator[Diagnostic]:
    spec = ctx.cluster.spec
    declared = spec.node.device_list_strategy
    path = (*NODE, "deviceListStrategy")
    if declared == "envvar":
        yield ctx.warning(
            path,
            "envvar is legacy: on nodes where nvidia is the default runtime a pod can set "
            "NVIDIA_VISIBLE_DEVICES itself and take GPUs past the plugin and the quotas",
            "use cdi or volume-mounts (or leave deviceListStrategy out)",
        )
    if declared != "cdi" or spec.allocation == "dra":
        return
    for pool in spec.node_pools:
        if not engine_runs_cdi(pool):
            yield ctx.warning(
                path,
                f"pool {pool.name!r} ({pool.runtime.engine}) may not run CDI: containerd 1.6 "
                "has none, 1.7 needs enable_cdi, k3s turns it on only with containerd 2 "
                "(v1.31.6+, v1.32.2+), Docker needs 25 or later",
                "make sure the engine supports CDI, or leave deviceListStrategy out",
            )


def _xid_classes(ctx: RuleContext) -> Iterator[Diagnostic]:
    health = ctx.cluster.spec.node.health
    if health.ignored_xids is None or health.reset_xids is None:
        return
    both = sorted(set(health.ignored_xids) & set(health.reset_xids))
    if both:
        yield ctx.error(
            (*NODE, "health", "resetXids"),
            f"XID {', '.join(map(str, both))} is both ignored and a reset fault",
            "list each XID in one of ignoredXids and resetXids",
        )


def _scrape_jobs(ctx: RuleContext) -> Iterator[Diagnostic]:
    """The alerts select the node runtime's and dcgm-exporter's targets by their scrape job:
    without PodMonitors, a rule naming a job nothing scrapes would never fire."""
    monitoring = ctx.cluster.spec.node.monitoring
    path = (*NODE, "monitoring")
    jobs = monitoring.scrape_jobs
    if monitoring.pod_monitor or not monitoring.prometheus_rule:
        if jobs is not None:
            yield ctx.error(
                (*path, "scrapeJobs"),
                "scrapeJobs names the scrape jobs gpuconf's alerts select where there are no "
                "PodMonitors; "
                + (
                    "with podMonitor true they select the PodMonitors' jobs"
                    if monitoring.pod_monitor
                    else "with prometheusRule false there are no alerts"
                ),
                "leave scrapeJobs out",
            )
        return
    needed = []
    if runs_node_runtime(ctx.cluster.spec) and (jobs is None or jobs.node is None):
        needed.append("node")
    if dcgm_exporter_runs_anywhere(ctx.cluster) and (jobs is None or jobs.dcgm_exporter is None):
        needed.append("dcgmExporter")
    if needed:
        keys = " and ".join(f"scrapeJobs.{key}" for key in needed)
        yield ctx.error(
            (*path, "podMonitor"),
            "without PodMonitors gpuconf's alerts cannot know the scrape job of "
            f"{' and '.join(needed)}: they would select a job nothing scrapes and never fire",
            f"set {keys} to your scrape configs' job labels (docs/operations.md), or "
            "prometheusRule: false",
        )
