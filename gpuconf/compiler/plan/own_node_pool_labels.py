"""The labels the node runtime's admission policy admits on a Node, by the Node's pool.

A node publishes GFD's keys (the same on every pool) and, for its own pool, gpuconf's pool label,
the labels of its pool's classes and the MIG keys of its pool's models (gpus/gfd_labels.pool_keys).
The policy sees no pool, only the Node: a Node is the pool's when its labels, before the change,
match the pool's DaemonSet nodeSelector, which is where the pool's node runtime (and so the
request) can come from. The labels that decide that are what a compromised node runtime would
rewrite to move its Node into another pool (and so to that pool's workloads, quota and Kueue
flavor): no node may change a label any pool selects on, and `gpuconf.dev/pool` may be set only to
the name of the pool the Node is in already.
"""

from __future__ import annotations

from collections.abc import Sequence

from gpuconf.api.cluster import NodePool
from gpuconf.api.node_facts import POOL_LABEL
from gpuconf.compiler.plan.own_node_policy import cel_string, key_set
from gpuconf.compiler.plan.pod import node_selector
from gpuconf.gpus.gfd_labels import CLASS_LABEL_PREFIX

LABELS = "variables.old_labels"
OWN_POOL = "variables.own_pool"


def _on_pool_node(pool: NodePool) -> str:
    selector = sorted(node_selector(pool).items())
    return " && ".join(
        f"{cel_string(k)} in {LABELS} && {LABELS}[{cel_string(k)}] == {cel_string(v)}"
        for k, v in selector
    )


def selected_keys(pools: Sequence[NodePool]) -> frozenset[str]:
    """Every label key a pool's nodeSelector names but gpuconf's pool label, which
    `pool_label_kept` holds to the Node's own pool instead."""
    return frozenset(k for pool in pools for k in node_selector(pool)) - {POOL_LABEL}


def own_pool_expression(pools: Sequence[NodePool]) -> str:
    """A CEL expression for the name of the pool whose nodeSelector the Node's labels matched
    before the change, '' for none. A Node matching several pools (two node runtimes on one
    Node, which their DaemonSets' selectors should never allow) is the first one's."""
    expression = "''"
    for pool in reversed(pools):
        expression = f"({_on_pool_node(pool)}) ? {cel_string(pool.name)} : {expression}"
    return expression


def pool_labels_expression(pools: Sequence[tuple[NodePool, Sequence[str]]]) -> str:
    """A CEL expression for the map of label keys the Node's own pool (`own_pool`) admits,
    empty off every pool. Pools with the same keys share one map."""
    by_keys: dict[str, list[str]] = {}
    for pool, keys in pools:
        by_keys.setdefault(key_set(keys), []).append(pool.name)
    expression = "{}"
    for keys, names in reversed(list(by_keys.items())):
        expression = f"{OWN_POOL} in {key_set(names)} ? {keys} : {expression}"
    return expression


def pool_label_kept() -> str:
    """CEL: gpuconf's pool label is kept as it was or set to the Node's own pool, never
    removed."""
    new, old, key = "variables.new_labels", LABELS, cel_string(POOL_LABEL)
    return (
        f"({key} in {new} ? ({key} in {old} && {new}[{key}] == {old}[{key}]) || "
        f"{new}[{key}] == {OWN_POOL} : !({key} in {old}))"
    )


CLASS_LABEL_REMOVED = (
    f"k.startsWith({cel_string(CLASS_LABEL_PREFIX)}) && !(k in variables.new_labels)"
)
"""CEL: k is a class label the change removes. A node takes back the label of a class its pool
no longer serves (or the cluster no longer has), which neither its pool's keys nor any other
admit; removing it gains the Node nothing."""
