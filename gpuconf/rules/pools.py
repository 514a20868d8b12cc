"""Pools: a known size and shape, sensible declared nodes, runtime options, MIG layouts."""

from __future__ import annotations

from collections.abc import Iterator

from gpuconf.diagnostics import Diagnostic
from gpuconf.mig import layout_problems
from gpuconf.model import NodePool
from gpuconf.rules.context import RuleContext, pool_path


def check(ctx: RuleContext) -> Iterator[Diagnostic]:
    for i, pool in enumerate(ctx.cluster.spec.node_pools):
        yield from _size(ctx, i, pool)
        yield from _runtime(ctx, i, pool)
        yield from _tolerations(ctx, i, pool)
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
    version_written = ctx.written(pool_path(i, "runtime", "containerdConfigVersion")) is not None
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
    sharing = pool.sharing
    if sharing is None:
        return
    counts = [len(n.gpus) for n in pool.nodes] + ([pool.gpus.count] if pool.gpus else [])
    for k, index in enumerate(sharing.indices or []):
        if counts and index >= max(counts):
            yield ctx.error(
                pool_path(i, "sharing", "indices", k),
                f"GPU index {index} does not exist in pool {pool.name!r}",
                f"its nodes have at most {max(counts)} GPUs (indices 0–{max(counts) - 1})",
            )
    reported: set[str] = set()
    for group in ctx.inventory.by_pool(pool.name):
        for gpu in group.gpus:
            if sharing.indices is not None and gpu.index not in sharing.indices:
                continue
            if gpu.model.name in reported:
                continue
            reported.add(gpu.model.name)
            where = f"GPU {gpu.index}" + (f" of node {group.node!r}" if group.node else "")
            for message, hint in layout_problems(sharing.layout, gpu.model):
                yield ctx.error(pool_path(i, "sharing", "layout"), f"{where}: {message}", hint)
