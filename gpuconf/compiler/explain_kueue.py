"""The Kueue part of the capacity table (explain.py): each ClusterQueue's share of a class, for
a cluster that declares Kueue."""

from __future__ import annotations

from typing import NamedTuple

from gpuconf.compiler.kueue.queues import KueuePlan, kueue_plan, lendable
from gpuconf.compiler.resolve.class_selection import ResolvedClass
from gpuconf.compiler.validate import Validated


class QueueRow(NamedTuple):
    queue: str
    nominal: int
    by_pool: dict[str, int]
    lends: int
    borrows: int


def queue_rows(kueue: KueuePlan, resolved: ResolvedClass) -> list[QueueRow]:
    """Each ClusterQueue's part of one class: its nominal quota (per pool), what it lends of
    it and what it may borrow from the cohort."""
    rows = []
    pools = resolved.pools
    for queue in kueue.queues:
        for resource in queue.resources:
            if resolved.name not in resource.classes:
                continue
            flavors = [f for f in resource.flavors if f.flavor in pools]
            rows.append(
                QueueRow(
                    queue.name,
                    sum(f.nominal for f in flavors),
                    {f.flavor: f.nominal for f in flavors},
                    sum(lendable(f) for f in flavors),
                    kueue.borrowable(queue, resource, pools),
                )
            )
    return rows


def kueue_lines(validated: Validated) -> list[str]:
    """The capacity table's lines on Kueue's queues: per class, each ClusterQueue's part."""
    kueue = kueue_plan(validated.cluster, validated.classes)
    lines = []
    for resolved in validated.classes:
        rows = queue_rows(kueue, resolved)
        if not rows:
            continue
        lines += [
            "",
            f"{resolved.name}: Kueue ClusterQueues in cohort {kueue.cohort} (capacity {resolved.capacity})",
        ]
        for row in rows:
            split = (
                " (" + ", ".join(f"{pool}: {n}" for pool, n in row.by_pool.items()) + ")"
                if len(row.by_pool) > 1
                else ""
            )
            lines.append(
                f"  {row.queue}: nominal {row.nominal}{split}, lends up to {row.lends}, "
                f"may borrow {row.borrows}"
            )
    return lines
