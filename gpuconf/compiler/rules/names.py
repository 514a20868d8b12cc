"""Names that must be unique: pools, classes, declared nodes, resource names, quota namespaces."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

from gpuconf.api.cluster import DeclaredNode
from gpuconf.compiler.rules.context import RuleContext, class_path, pool_path, quota_path
from gpuconf.diagnostics import Diagnostic, KeyPath


def _duplicates(
    ctx: RuleContext, names: Sequence[str], path: Callable[[int], KeyPath], what: str
) -> Iterator[Diagnostic]:
    """An error at each repeat of a name; `path(i)` says where names[i] is. Paths are built
    only for repeats: a 20,000-node file has 200,000 names and, as a rule, no repeat."""
    if len(set(names)) == len(names):  # the rule, found without a step per name
        return
    first: dict[str, int] = {}
    for i, name in enumerate(names):
        seen = first.setdefault(name, i)
        if seen != i:
            line, _ = ctx.located.position(path(seen))
            yield ctx.error(
                path(i),
                f"{what} {name!r} is already used",
                f"first used on line {line}; names must be unique",
            )


def _gpu_index_path(pool: int, node: int) -> Callable[[int], KeyPath]:
    return lambda gpu: pool_path(pool, "nodes", node, "gpus", gpu, "index")


def check(ctx: RuleContext) -> Iterator[Diagnostic]:
    spec = ctx.cluster.spec
    pools, classes, quotas = spec.node_pools, spec.resource_classes, spec.quotas
    yield from _duplicates(
        ctx, [p.name for p in pools], lambda i: pool_path(i, "name"), "pool name"
    )
    yield from _duplicates(
        ctx, [c.name for c in classes], lambda i: class_path(i, "name"), "class name"
    )
    nodes = [(i, j, node) for i, pool in enumerate(pools) for j, node in enumerate(pool.nodes)]
    yield from _duplicates(
        ctx,
        [node.name for _, _, node in nodes],
        lambda k: pool_path(nodes[k][0], "nodes", nodes[k][1], "name"),
        "node name",
    )
    yield from _duplicates(
        ctx, [q.namespace for q in quotas], lambda i: quota_path(i, "namespace"), "quota namespace"
    )
    declared_uuids = [gpu.uuid for _, _, node in nodes for gpu in node.gpus]
    yield from _duplicates(
        ctx,
        [uuid for uuid in declared_uuids if uuid is not None],
        _uuid_path(nodes),
        "GPU UUID",
    )
    for i, j, node in nodes:
        indices = [gpu.index for gpu in node.gpus]
        if len(set(indices)) < len(indices):
            yield from _duplicates(
                ctx,
                [str(index) for index in indices],
                _gpu_index_path(i, j),
                f"GPU index on node {node.name!r}:",
            )


def _uuid_path(nodes: list[tuple[int, int, DeclaredNode]]) -> Callable[[int], KeyPath]:
    """Where the m-th declared UUID is: the positions are listed on the first repeat only."""
    found: list[tuple[int, int, int]] = []

    def path(m: int) -> KeyPath:
        if not found:
            found.extend(
                (i, j, k)
                for i, j, node in nodes
                for k, gpu in enumerate(node.gpus)
                if gpu.uuid is not None
            )
        i, j, k = found[m]
        return pool_path(i, "nodes", j, "gpus", k, "uuid")

    return path
