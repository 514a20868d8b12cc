"""Pools: a known size and shape, sensible declared nodes, runtime options, MIG layouts."""

from __future__ import annotations

from collections.abc import Iterator

from gpuconf.api.cluster import NodePool
from gpuconf.api.cluster.pool import MigLayout
from gpuconf.compiler.rules.context import RuleContext, pool_path
from gpuconf.diagnostics import Diagnostic, KeyPath
from gpuconf.gpus.mig import layout_problems
from gpuconf.hints import index_ranges


def check(ctx: RuleContext) -> Iterator[Diagnostic]:
    for i, pool in enumerate(ctx.cluster.spec.node_pools):
        yield from _size(ctx, i, pool)
        yield from _runtime(ctx, i, pool)
        yield from _tolerations(ctx, i, pool)
        if pool.platform != "tegra":  # rules/platforms.py refuses MIG on Jetson
            yield from _mig(ctx, i, pool)


def _size(ctx: RuleContext, i: int, pool: NodePool) -> Iterator[Diagnostic]:
    if pool.size is None and not pool.nodes:
        yield ctx.error(
            pool_path(i),
            f"pool {pool.name!r} has neither size nor nodes",
            "give size: N, or list the nodes",
        )
    if pool.size is not None and pool.size < len(pool.nodes):
        yield ctx.error(
            pool_path(i, "size"),
            f"size {pool.size} is smaller than the {len(pool.nodes)} declared nodes",
            f"raise size to at least {len(pool.nodes)}, or drop it",
        )
    if pool.gpus is None:
        if pool.size is not None and pool.size > len(pool.nodes):
            yield ctx.error(
                pool_path(i, "size"),
                f"{pool.size - len(pool.nodes)} nodes are not declared and the pool has no gpus shape",
                "add gpus: {model: …, count: …} for the undeclared nodes",
            )
        for j, node in enumerate(pool.nodes):
            for k, gpu in enumerate(node.gpus):
                if gpu.model is None:
                    yield ctx.error(
                        pool_path(i, "nodes", j, "gpus", k),
                        "the GPU has no model and the pool has no gpus shape",
                        "add model: to the GPU, or gpus: {model: …, count: …} to the pool",
                    )


def _runtime(ctx: RuleContext, i: int, pool: NodePool) -> Iterator[Diagnostic]:
    version_written = (
        ctx.located.value_at(pool_path(i, "runtime", "containerdConfigVersion")) is not None
    )
    if version_written and pool.runtime.engine != "containerd":
        yield ctx.error(
            pool_path(i, "runtime", "containerdConfigVersion"),
            f"containerdConfigVersion applies to engine containerd, not {pool.runtime.engine}",
            "remove it",
        )


def _tolerations(ctx: RuleContext, i: int, pool: NodePool) -> Iterator[Diagnostic]:
    for k, toleration in enumerate(pool.tolerations):
        path = pool_path(i, "tolerations", k)
        if toleration.operator == "Exists" and toleration.value is not None:
            yield ctx.error(
                (*path, "value"),
                "a toleration with operator Exists takes no value",
                "remove value, or use operator Equal",
            )
        if toleration.operator == "Equal" and toleration.key is None:
            yield ctx.error(
                path,
                "a toleration with operator Equal needs a key",
                "add key:, or use operator Exists to tolerate every taint",
            )
        if toleration.toleration_seconds is not None and toleration.effect != "NoExecute":
            yield ctx.error(
                (*path, "tolerationSeconds"),
                "tolerationSeconds applies only to effect NoExecute",
                "set effect: NoExecute or remove tolerationSeconds",
            )


def _mig(ctx: RuleContext, i: int, pool: NodePool) -> Iterator[Diagnostic]:
    layouts = pool.mig_layouts()
    counts = [len(n.gpus) for n in pool.nodes] + ([pool.gpus.count] if pool.gpus else [])
    claimed: dict[int, int] = {}
    for k, sharing in enumerate(layouts):
        base = pool_path(i, "sharing", k)
        if sharing.indices is None and len(layouts) > 1:
            yield ctx.error(
                base,
                f"pool {pool.name!r} lists {len(layouts)} MIG layouts but this one has no indices",
                "give each layout its GPUs with indices: [...]; a layout without indices covers every GPU",
            )
        if sharing.indices == []:
            yield ctx.error(
                (*base, "indices"),
                "indices is empty: the layout applies to no GPU",
                "list GPU indices, or remove indices to partition every GPU",
            )
        for j, index in enumerate(sharing.indices or []):
            path = (*base, "indices", j)
            if counts and index >= max(counts):
                yield ctx.error(
                    path,
                    f"GPU index {index} does not exist in pool {pool.name!r}",
                    f"its nodes have at most {max(counts)} GPUs (indices 0–{max(counts) - 1})",
                )
            elif index in claimed:
                where = "this list" if claimed[index] == k else f"sharing[{claimed[index]}]"
                yield ctx.error(
                    path,
                    f"GPU index {index} already has a MIG layout in {where}",
                    "each GPU takes one layout: list it once",
                )
            else:
                claimed[index] = k
        yield from _layout_fits(ctx, pool, sharing, base)


def _layout_fits(
    ctx: RuleContext, pool: NodePool, sharing: MigLayout, base: KeyPath
) -> Iterator[Diagnostic]:
    """Check the layout once per model it lands on, naming the GPUs it was checked on."""
    reported: set[str] = set()
    for group in ctx.inventory.by_pool(pool.name):
        covered = [g for g in group.shape if sharing.indices is None or g.index in sharing.indices]
        models = {g.model.name: g.model for g in covered}
        for name, model in models.items():
            if name in reported:
                continue
            reported.add(name)
            indices = sorted(g.index for g in covered if g.model.name == name)
            where = ("GPUs " if len(indices) > 1 else "GPU ") + index_ranges(indices)
            where += f" of node {group.node!r}" if group.node else f" of pool {pool.name!r}"
            for problem in layout_problems(sharing.layout, model):
                path = (*base, "layout")
                if problem.profile is not None:
                    path = (*path, problem.profile)
                yield ctx.error(path, f"{where}: {problem.message}", problem.hint)
