"""Counters and gauges, and their Prometheus text exposition (format 0.0.4).

The node runtime exports a few dozen series; prometheus_client (with the HTTP and URL
modules it loads) cost 4 MiB of the runtime's resident memory for them. The text has the
shape prometheus_client writes with `_created` series off (numbers as Python spells floats): `# HELP`, `# TYPE`, then one line per
series, a counter's name with the `_total` suffix throughout (tests/node/test_prometheus_text.py reads it back
with prometheus_client's own parser).
"""

from __future__ import annotations

import math
import threading
from collections.abc import Sequence

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


class Registry:
    def __init__(self) -> None:
        self._metrics: list[_Metric] = []

    def add(self, metric: _Metric) -> None:
        if any(known.name == metric.name for known in self._metrics):
            raise ValueError(f"metric {metric.name} registered twice")
        self._metrics.append(metric)

    def exposition(self) -> bytes:
        return "".join(metric.text() for metric in self._metrics).encode()


class _Series:
    def __init__(self, lock: threading.Lock) -> None:
        self._lock = lock
        self.value = 0.0

    def inc(self, amount: float = 1.0) -> None:
        with self._lock:
            self.value += amount

    def set(self, value: float) -> None:
        with self._lock:
            self.value = float(value)


class _Metric:
    kind = ""
    suffix = ""

    def __init__(
        self, name: str, documentation: str, labelnames: Sequence[str] = (), *, registry: Registry
    ) -> None:
        self.name = name
        self._help = documentation
        self._labelnames = tuple(labelnames)
        self._lock = threading.Lock()
        self._series: dict[tuple[str, ...], _Series] = {}
        if not self._labelnames:
            self._series[()] = _Series(self._lock)
        registry.add(self)

    def labels(self, *values: str) -> _Series:
        if len(values) != len(self._labelnames):
            raise ValueError(f"{self.name} takes labels {self._labelnames}, got {values}")
        with self._lock:
            return self._series.setdefault(tuple(map(str, values)), _Series(self._lock))

    def inc(self, amount: float = 1.0) -> None:
        self.labels().inc(amount)

    def remove(self, *values: str) -> None:
        with self._lock:
            del self._series[tuple(map(str, values))]

    def text(self) -> str:
        exported = self.name + self.suffix
        lines = [f"# HELP {exported} {_escaped(self._help, quotes=False)}\n"]
        lines.append(f"# TYPE {exported} {self.kind}\n")
        with self._lock:
            series = list(self._series.items())
        for values, one in series:
            labels = ",".join(
                f'{name}="{_escaped(value, quotes=True)}"'
                for name, value in sorted(zip(self._labelnames, values, strict=True))
            )
            shown = f"{{{labels}}}" if labels else ""
            lines.append(f"{exported}{shown} {_number(one.value)}\n")
        return "".join(lines)


class Counter(_Metric):
    kind = "counter"
    suffix = "_total"


class Gauge(_Metric):
    kind = "gauge"

    def set(self, value: float) -> None:
        self.labels().set(value)


def _escaped(text: str, *, quotes: bool) -> str:
    text = text.replace("\\", "\\\\").replace("\n", "\\n")
    return text.replace('"', '\\"') if quotes else text


def _number(value: float) -> str:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return repr(float(value))
