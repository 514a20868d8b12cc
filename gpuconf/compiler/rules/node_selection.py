"""Pools pick their nodes by labels the user owns, not by labels NVIDIA's components rewrite,
and no pool's selector picks every node of another pool too. Where gpuconf's node runtime writes
every label a pool selects by, rules/node_labels.py says so, with the stronger reason (its node
policy refuses the runtime's label patches), and this rule keeps quiet about that pool."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from gpuconf.api.cluster import NodePool
from gpuconf.api.node_facts import POOL_LABEL
from gpuconf.compiler.resolve.pool_selector import node_selector
from gpuconf.compiler.rules.context import RuleContext, pool_path
from gpuconf.diagnostics import Diagnostic
from gpuconf.gpus.gfd_labels import writes_key
from gpuconf.gpus.label_owner import gpuconf_writes_gfd_labels
from gpuconf.gpus.node_labels import PRODUCT_LABEL, managed_by_nvidia


def check(ctx: RuleContext) -> Iterator[Diagnostic]:
    spec = ctx.cluster.spec
    gpuconf_writes = gpuconf_writes_gfd_labels(spec)
    for i, pool in enumerate(spec.node_pools):
        selector = pool.node_selector
        if gpuconf_writes and all(label_writers(spec.node_pools, key) for key in selector):
            continue
        if selector and all(managed_by_nvidia(key) for key in selector):
            yield ctx.warning(
                pool_path(i, "nodeSelector"),
                f"pool {pool.name!r} selects its nodes only by labels NVIDIA's components write "
                f"({', '.join(sorted(selector))}): {_why(selector)}, and `helm uninstall` of "
                "NVIDIA's chart removes GFD's labels, so the pool's DaemonSets would stop "
                "matching its nodes",
                f"label the nodes once while the old labels still match ({relabel_command(pool)}) "
                "and drop nodeSelector",
            )
    yield from _contained_selectors(ctx)


def _contained_selectors(ctx: RuleContext) -> Iterator[Diagnostic]:
    """A pool whose nodes all match another pool's selector as well: both pools' DaemonSets run
    on them, and the node policy gives a Node of two pools to neither, so neither runtime may
    write its pool's labels there (plan/own_node_pool_labels.py). A warning only where the file
    decides it: selectors on different keys may overlap on some Node, which only its labels
    tell, and that is the usual case (one pool by gpuconf's pool label, one by a site label)."""
    pools = ctx.cluster.spec.node_pools
    selectors = [node_selector(pool).items() for pool in pools]
    for i, pool in enumerate(pools):
        wider = [
            p.name  # a pool of the same name is another rule's (its name is refused)
            for j, p in enumerate(pools)
            if p.name != pool.name and selectors[j] <= selectors[i]
        ]
        if wider:
            yield ctx.warning(
                pool_path(i, "nodeSelector"),
                f"every node pool {pool.name!r} selects is also in pool(s) "
                f"{', '.join(repr(name) for name in wider)} by its nodeSelector: both pools' "
                "DaemonSets run there, and where gpuconf's node runtime labels nodes its "
                "admission policy lets neither pool's runtime write its pool's labels on them",
                "give the pools selectors no node can match both of (a label with a different "
                "value in each)",
            )


def label_writers(pools: Sequence[NodePool], key: str) -> list[NodePool]:
    """The pools whose node runtime writes `key` where gpuconf owns GFD's labels."""
    return [p for p in pools if writes_key(key, bool(p.mig_layouts()))]


def _why(selector: dict[str, str]) -> str:
    if PRODUCT_LABEL in selector:
        return (
            "GPU Feature Discovery appends -SHARED to nvidia.com/gpu.product when the GPUs are "
            "time-sliced or MPS-shared with renameByDefault false"
        )
    return "their values follow the plugin's config and the GPU Operator's state"


def relabel_command(pool: NodePool) -> str:
    """The command that gives a pool's nodes gpuconf's pool label: by name where the nodes are
    declared, else by the pool's own selector (which matches until NVIDIA's chart is removed)."""
    target = f"{POOL_LABEL}={pool.name}"
    if pool.nodes and (pool.size is None or pool.size == len(pool.nodes)):
        return f"kubectl label nodes {' '.join(n.name for n in pool.nodes)} {target}"
    selector = ",".join(f"{k}={v}" for k, v in sorted(pool.node_selector.items()))
    return f"kubectl label nodes -l {selector} {target}"
