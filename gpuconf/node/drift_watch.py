"""Report inventory drift when it changes: log lines, metrics, and the node annotation."""

from __future__ import annotations

import threading
from collections.abc import Sequence

from gpuconf.api.node_config import ExpectedGpu
from gpuconf.node import drift, log
from gpuconf.node.metrics import Metrics
from gpuconf.node.nvml.api import GpuInfo

_log = log.get("drift")


class DriftWatch:
    def __init__(self, node_name: str, metrics: Metrics) -> None:
        self._node_name = node_name
        self._metrics = metrics
        self._last_problems: list[str] | None = None

    def update(
        self, expected: Sequence[ExpectedGpu], present: Sequence[GpuInfo]
    ) -> drift.DriftReport:
        report = drift.compare(expected, present)
        self._metrics.gpus_declared.set(len(expected))
        self._metrics.gpus_present.set(len(present))
        self._metrics.drift.set(int(report.drifted))
        self._metrics.drift_problems.set(len(report.problems))
        if report.problems != self._last_problems:
            self._last_problems = list(report.problems)
            if not report.drifted:
                _log.info("inventory matches the declaration", extra=log.kv(gpus=len(present)))
            for problem in report.problems:
                _log.warning("inventory drift", extra=log.kv(problem=problem))
            threading.Thread(
                target=self._annotate, args=(report,), name="annotate", daemon=True
            ).start()
        return report

    def _annotate(self, report: drift.DriftReport) -> None:
        try:
            from gpuconf.node.node_annotation import annotate_node

            annotate_node(self._node_name, report)
        except Exception as error:  # the annotation is a courtesy; serving devices matters more
            _log.warning(
                "cannot annotate the node", extra=log.kv(node=self._node_name, error=str(error))
            )
