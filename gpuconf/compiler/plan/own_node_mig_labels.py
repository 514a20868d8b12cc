"""The MIG label keys the node runtime's admission policy admits, pool by pool.

A node labels the MIG profiles its pool's GPU models have (gpus/gfd_labels.mig_label_keys:
under migStrategy mixed one key set per profile, under single nvidia.com/gpu.* attributes), so
the policy admits those keys on the pool's Nodes only. The policy sees no pool, only the Node:
a Node is the pool's when its labels, before the change, match the pool's DaemonSet
nodeSelector, which is where the pool's node runtime (and so the request) can come from.
"""

from __future__ import annotations

from collections.abc import Sequence

from gpuconf.api.cluster import NodePool
from gpuconf.compiler.plan.own_node_policy import cel_string, key_set
from gpuconf.compiler.plan.pod import node_selector

LABELS = "variables.old_labels"


def _on_pool_node(pool: NodePool) -> str:
    selector = sorted(node_selector(pool).items())
    return " && ".join(
        f"{cel_string(k)} in {LABELS} && {LABELS}[{cel_string(k)}] == {cel_string(v)}"
        for k, v in selector
    )


def mig_labels_expression(pools: Sequence[tuple[NodePool, Sequence[str]]]) -> str | None:
    """A CEL expression for the map of MIG label keys the changed Node's pool admits (empty off
    such pools), from each pool's keys; None when no pool has any. Pools with the same keys
    share one map; a Node matching pools of different keys (two node runtimes on one Node,
    which their DaemonSets' selectors should never allow) gets the first one's."""
    if not pools:
        return None
    by_keys: dict[str, list[NodePool]] = {}
    for pool, keys in pools:
        by_keys.setdefault(key_set(keys), []).append(pool)
    expression = "{}"
    for keys, members in reversed(list(by_keys.items())):
        on_pool = " || ".join(f"({_on_pool_node(pool)})" for pool in members)
        expression = f"({on_pool}) ? {keys} : {expression}"
    return expression
