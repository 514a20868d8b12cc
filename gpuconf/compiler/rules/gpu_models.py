"""Every GPU model named in the file is in the catalog."""

from __future__ import annotations

from collections.abc import Iterator

from gpuconf.compiler.rules.context import RuleContext, class_path, pool_path
from gpuconf.diagnostics import Diagnostic, KeyPath


def _check_name(ctx: RuleContext, name: str, path: KeyPath) -> Iterator[Diagnostic]:
    if ctx.catalog.get(name) is None:
        known = ctx.catalog.by_nvml_name(name)
        hint = f"write the catalog name {known.name!r}" if known else ctx.catalog.suggest(name)
        yield ctx.error(path, f"unknown GPU model {name!r}", hint)


def check(ctx: RuleContext) -> Iterator[Diagnostic]:
    for i, pool in enumerate(ctx.cluster.spec.node_pools):
        if pool.gpus is not None:
            yield from _check_name(ctx, pool.gpus.model, pool_path(i, "gpus", "model"))
        for j, node in enumerate(pool.nodes):
            for k, gpu in enumerate(node.gpus):
                if gpu.model is not None:
                    yield from _check_name(
                        ctx, gpu.model, pool_path(i, "nodes", j, "gpus", k, "model")
                    )
    for i, resource_class in enumerate(ctx.cluster.spec.resource_classes):
        selected = resource_class.select.model
        if isinstance(selected, str):
            yield from _check_name(ctx, selected, class_path(i, "select", "model"))
        elif selected is not None:
            for k, name in enumerate(selected):
                yield from _check_name(ctx, name, class_path(i, "select", "model", k))
