"""The labels the node runtime's admission policy admits on a Node, by the Node's pool.

A node publishes GFD's keys (the same on every pool) and, for its own pool, gpuconf's pool label,
the labels of its pool's classes and the MIG keys of its pool's models (gpus/gfd_labels.pool_keys).
The policy sees no pool, only the Node: a Node is the pool's when its labels, before the change,
match the pool's DaemonSet nodeSelector, which is where the pool's node runtime (and so the
request) can come from. The labels that decide that are what a compromised node runtime would
rewrite to move its Node into another pool (and so to that pool's workloads, quota and Kueue
flavor): no node may change a label any pool selects on, and `gpuconf.dev/pool` may be set only to
the name of the pool the Node is in already (a Node matching several pools is in none).

kube-apiserver refuses an expression over 100,000 code points or nested over 250 deep, so the
variables grow with the number of pools by one map entry each, never by a nested ternary or a
repeated key list: pools are looked up in map literals, and pools with the same MIG keys share
one key map.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from gpuconf.api.cluster import NodePool
from gpuconf.api.node_facts import POOL_LABEL
from gpuconf.compiler.plan.own_node_policy import cel_string, key_set
from gpuconf.compiler.plan.pod import node_selector
from gpuconf.gpus.gfd_labels import CLASS_LABEL_PREFIX

LABELS = "variables.old_labels"
OWN_POOL = "variables.own_pool"
MATCHED = "variables.matched_pools"


def selected_keys(pools: Sequence[NodePool]) -> frozenset[str]:
    """Every label key a pool's nodeSelector names but gpuconf's pool label, which
    `pool_label_kept` holds to the Node's own pool instead: a pool selecting by it selects by
    its own name (rules/node_labels.py), so the one pool a Node may set it to is its own."""
    return frozenset(k for pool in pools for k in node_selector(pool)) - {POOL_LABEL}


def _map(entries: Iterable[tuple[str, str]]) -> str:
    """A CEL map literal of string keys to CEL expressions."""
    return "{" + ", ".join(f"{cel_string(k)}: {v}" for k, v in entries) + "}"


def _selectors(pools: Sequence[NodePool]) -> str:
    return _map(
        (pool.name, _map((k, cel_string(v)) for k, v in sorted(node_selector(pool).items())))
        for pool in pools
    )


def _matched_pools(pools: Sequence[NodePool]) -> str:
    """The names of the pools whose nodeSelector the Node's labels matched before the change."""
    names = "[" + ", ".join(cel_string(pool.name) for pool in pools) + "]"
    selector = "variables.pool_selectors[p]"
    matched = f"{selector}.all(k, k in {LABELS} && {LABELS}[k] == {selector}[k])"
    return f"{names}.filter(p, {matched})"


OWN_POOL_EXPRESSION = f"{MATCHED}.size() == 1 ? {MATCHED}[0] : ''"
"""The Node's pool: the one pool it matched, '' for none or several. A Node matching two pools
runs both pools' node runtimes, and either could write the labels that leave the other (a
pool label the other selects by, set to its own name): such a Node is no pool's, and neither
runtime may write pool labels there."""


def _mig_labels(mig_keys: dict[str, list[str]]) -> str:
    """The MIG keys of the Node's own pool: each distinct key set once, pools pointing at it."""
    sets: dict[str, int] = {}
    pool_set = {pool: sets.setdefault(key_set(keys), len(sets)) for pool, keys in mig_keys.items()}
    by_pool = _map((pool, str(index)) for pool, index in pool_set.items())
    return f"{OWN_POOL} in {by_pool} ? [{', '.join(sets)}][{by_pool}[{OWN_POOL}]] : {{}}"


def _class_pools(class_keys: dict[str, list[str]]) -> str:
    """Each class label with the pools whose Nodes may write it."""
    return _map((label, key_set(pools)) for label, pools in sorted(class_keys.items()))


def pool_label_variables(
    pools: Sequence[tuple[NodePool, Sequence[str]]], selected: frozenset[str]
) -> list[dict[str, str]]:
    """The policy's variables for its pools: `pool_selectors`, `matched_pools`, `own_pool` (the
    Node's pool, '' for none or several), `class_pools` and, where a pool has MIG keys, `mig_labels` (its own pool's),
    from each pool's keys beyond GFD's (gfd_labels.pool_keys) less the `selected` ones."""
    class_keys: dict[str, list[str]] = {}
    mig_keys: dict[str, list[str]] = {}
    for pool, keys in pools:
        for key in keys:
            if key in selected or key == POOL_LABEL:
                continue
            if key.startswith(CLASS_LABEL_PREFIX):
                class_keys.setdefault(key, []).append(pool.name)
            else:
                mig_keys.setdefault(pool.name, []).append(key)
    names = [pool for pool, _ in pools]
    variables = [
        {"name": "pool_selectors", "expression": _selectors(names)},
        {"name": "matched_pools", "expression": _matched_pools(names)},
        {"name": "own_pool", "expression": OWN_POOL_EXPRESSION},
        {"name": "class_pools", "expression": _class_pools(class_keys)},
    ]
    if mig_keys:
        variables.append({"name": "mig_labels", "expression": _mig_labels(mig_keys)})
    return variables


def pool_label_admitted(mig: bool) -> str:
    """CEL: k is a key the Node's own pool publishes (pool_label_variables); `mig`: the policy
    has `mig_labels`."""
    own = [
        f"k == {cel_string(POOL_LABEL)}",
        f"(k in variables.class_pools && {OWN_POOL} in variables.class_pools[k])",
    ]
    if mig:
        own.append("k in variables.mig_labels")
    return f"({OWN_POOL} != '' && ({' || '.join(own)}))"


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
admit; removing it gains the Node nothing, since no pool selects by a class label
(rules/node_labels.py refuses that)."""
