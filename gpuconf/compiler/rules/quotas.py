"""Quotas name classes that exist and add up to no more than each class can give."""

from __future__ import annotations

from collections.abc import Iterator

from gpuconf.compiler.rules.context import RuleContext, class_path, quota_path
from gpuconf.diagnostics import Diagnostic
from gpuconf.hints import did_you_mean


def check(ctx: RuleContext) -> Iterator[Diagnostic]:
    by_name = {c.name: c for c in ctx.classes}
    totals: dict[str, int] = {}
    for i, quota in enumerate(ctx.cluster.spec.quotas):
        for name, count in quota.classes.items():
            if name in by_name:
                totals[name] = totals.get(name, 0) + count
            elif name not in ctx.set_aside.resource_classes:
                hint = did_you_mean(
                    name, by_name, otherwise="classes: " + ", ".join(sorted(by_name))
                )
                yield ctx.error(quota_path(i, "classes", name), f"no class is named {name!r}", hint)
    for name, total in totals.items():
        resolved = by_name[name]
        if total <= resolved.capacity or not resolved.taken:
            continue
        message = (
            f"quotas for class {name!r} add up to {total}, more than its capacity of {resolved.capacity} "
            + (
                f"({resolved.devices} devices; under DRA each claim takes whole devices, replicas add none)"
                if resolved.claims_take_whole_devices
                else f"({resolved.devices} devices × {resolved.replicas} replicas)"
            )
        )
        if resolved.spec.overcommit:
            yield ctx.warning(
                class_path(resolved.index, "overcommit"), message, "overcommit: true allows this"
            )
        else:
            yield ctx.error(
                class_path(resolved.index, "name"),
                message,
                "lower the quotas, add GPUs, or set overcommit: true on the class if that is intended",
            )
