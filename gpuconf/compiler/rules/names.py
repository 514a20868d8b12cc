"""Names that must be unique: pools, classes, declared nodes, resource names, quota namespaces."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from gpuconf.compiler.rules.context import RuleContext, class_path, pool_path, quota_path
from gpuconf.diagnostics import Diagnostic, KeyPath


def _duplicates(
    ctx: RuleContext, items: Iterable[tuple[str, KeyPath]], what: str
) -> Iterator[Diagnostic]:
    first: dict[str, KeyPath] = {}
    for name, path in items:
        if name in first:
            line, _ = ctx.located.position(first[name])
            yield ctx.error(
                path,
                f"{what} {name!r} is already used",
                f"first used on line {line}; names must be unique",
            )
        else:
            first[name] = path


def check(ctx: RuleContext) -> Iterator[Diagnostic]:
    spec = ctx.cluster.spec
    yield from _duplicates(
        ctx, ((p.name, pool_path(i, "name")) for i, p in enumerate(spec.node_pools)), "pool name"
    )
    yield from _duplicates(
        ctx,
        ((c.name, class_path(i, "name")) for i, c in enumerate(spec.resource_classes)),
        "class name",
    )
    yield from _duplicates(
        ctx,
        (
            (n.name, pool_path(i, "nodes", j, "name"))
            for i, p in enumerate(spec.node_pools)
            for j, n in enumerate(p.nodes)
        ),
        "node name",
    )
    yield from _duplicates(
        ctx,
        ((q.namespace, quota_path(i, "namespace")) for i, q in enumerate(spec.quotas)),
        "quota namespace",
    )
    yield from _duplicates(
        ctx,
        (
            (g.uuid, pool_path(i, "nodes", j, "gpus", k, "uuid"))
            for i, p in enumerate(spec.node_pools)
            for j, n in enumerate(p.nodes)
            for k, g in enumerate(n.gpus)
            if g.uuid is not None
        ),
        "GPU UUID",
    )
    for i, pool in enumerate(spec.node_pools):
        for j, node in enumerate(pool.nodes):
            yield from _duplicates(
                ctx,
                (
                    (str(g.index), pool_path(i, "nodes", j, "gpus", k, "index"))
                    for k, g in enumerate(node.gpus)
                ),
                f"GPU index on node {node.name!r}:",
            )
