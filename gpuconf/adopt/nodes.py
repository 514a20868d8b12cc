"""`gpuconf nodes add|remove`: declare nodes (and their GPU UUIDs) in a pool, or retire them.

A new node is written like the README's: `- name: N` then `gpus:` as one flow list of
`{index: i}` when no UUID is known, one `{index: i, uuid: U}` per line when they are."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.error import CommentMark
from ruamel.yaml.tokens import CommentToken

from gpuconf.adopt.cluster_file import ClusterFile, Edited, edited
from gpuconf.diagnostics import Diagnostic, InvalidInput
from gpuconf.formats import round_trip_yaml

NODES_KEY = "nodes"
NodePath = tuple[str, str, int, str, int]
# Where a pool without `nodes:` gets it: after the last of these it has, else at its end.
_NODES_AFTER = ("gpus", "size", "driver", "runtime")


class Added(NamedTuple):
    edit: Edited
    new: list[str]
    """The nodes declared now."""
    unchanged: list[str]
    """The nodes already declared as they would have been: a rerun of the same `add`."""


def add(
    file: ClusterFile,
    pool_name: str,
    node_names: Sequence[str],
    gpu_count: int | None,
    uuids: Sequence[str],
) -> Added:
    pool_index, pool = _pool(file, pool_name)
    count = gpu_count if gpu_count is not None else _pool_gpu_count(pool)
    if uuids and count is not None and len(uuids) != count:
        raise _refused(
            file,
            ("spec", "nodePools", pool_index, "gpus", "count"),
            f"{len(uuids)} UUID(s) given for a node of {count} GPU(s)",
            "give one --uuid per GPU, in index order, or --gpus N",
        )
    count = count if count is not None else len(uuids)
    if not count:
        raise _refused(
            file,
            ("spec", "nodePools", pool_index),
            f"pool {pool_name!r} has no gpus.count to give its new nodes",
            "say how many GPUs each has: --gpus N",
        )
    declared = _declared_nodes(file)
    for name in node_names:
        if name in declared:
            difference = _declared_otherwise(file, declared[name], pool_name, count, uuids)
            if difference:
                raise _refused(
                    file,
                    declared[name],
                    f"node {name!r} is already declared {difference}",
                    f"remove it first (gpuconf nodes remove {file.shown} {name}) to declare it anew",
                )
    new_names = [name for name in node_names if name not in declared]
    if new_names:
        nodes = pool.get(NODES_KEY)
        if not isinstance(nodes, CommentedSeq):
            nodes = round_trip_yaml.sequence([], flow=False)
            pool.insert(_nodes_position(pool), NODES_KEY, nodes)
        for name in new_names:
            nodes.append(round_trip_yaml.block_mapping({"name": name, "gpus": _gpus(count, uuids)}))
    return Added(edited(file), new_names, [name for name in node_names if name in declared])


def _declared_otherwise(
    file: ClusterFile, path: NodePath, pool_name: str, count: int, uuids: Sequence[str]
) -> str:
    """How the node declared at `path` differs from the one `add` would declare; "" when it does
    not. UUIDs not given ask for none in particular: the declared ones stay."""
    _, _, pool_index, _, node_index = path
    pool = _pools(file)[pool_index]
    if pool.get("name") != pool_name:
        return f"in pool {pool.get('name')!r}, not {pool_name!r}"
    gpus = pool[NODES_KEY][node_index].get("gpus")
    gpus = list(gpus) if isinstance(gpus, CommentedSeq) else []
    if len(gpus) != count:
        return f"with {len(gpus)} GPU(s), not {count}"
    # The GPUs as index → UUID: a list in another order (validate accepts it) is the same node.
    by_index = {g.get("index"): g.get("uuid") for g in gpus if isinstance(g, CommentedMap)}
    if len(by_index) != count or set(by_index) != set(range(count)):
        indices = [g.get("index") if isinstance(g, CommentedMap) else None for g in gpus]
        return f"with GPU indices {', '.join(map(str, indices))}, not 0 to {count - 1}"
    for index, uuid in enumerate(uuids):
        if by_index[index] != uuid:
            return (
                f"with other GPUs: GPU {index} is {by_index[index] or 'without a UUID'}, not {uuid}"
            )
    return ""


def remove(file: ClusterFile, node_names: Sequence[str]) -> Edited:
    declared = _declared_nodes(file)
    unknown = [name for name in node_names if name not in declared]
    if unknown:
        known = ", ".join(sorted(declared)) or "none"
        raise _refused(
            file,
            ("spec", "nodePools"),
            f"no node {', '.join(map(repr, unknown))} declared here",
            f"declared nodes: {known}",
        )
    # Each once (a name given twice would delete another node at its index), last first, so
    # the indices of the ones still to go stay right.
    for name in sorted(set(node_names), key=lambda n: declared[n], reverse=True):
        _, _, pool_index, _, node_index = declared[name]
        pool = file.document["spec"]["nodePools"][pool_index]
        del pool[NODES_KEY][node_index]
        if not pool[NODES_KEY]:
            # The list goes with its last node, as `nodes add` made it for its first; an empty
            # one keeps the comments above its old items and is written as a bare `[]` under them.
            # What follows the list (a comment above the next pool) now follows the pool.
            following = getattr(pool[NODES_KEY].ca, "end", None) or []
            del pool[NODES_KEY]
            _comment_after(pool, following)
    return edited(file)


def _comment_after(pool: CommentedMap, comments: Sequence[CommentToken]) -> None:
    """Comment lines written after the pool's last line, where ruamel reads such lines: after
    the last scalar or flow value of the pool, however deep in block mappings and lists."""
    if not comments or not pool:
        return
    holder: CommentedMap | CommentedSeq = pool
    while True:
        key: Any = list(holder)[-1] if isinstance(holder, CommentedMap) else len(holder) - 1
        value = holder[key]
        if not isinstance(value, CommentedMap | CommentedSeq) or value.fa.flow_style() or not value:
            break
        holder = value
    text = "".join(" " * _column(c) + c.value for c in comments)
    slot = holder.ca.items.setdefault(key, [None, None, None, None])
    after = 2 if isinstance(holder, CommentedMap) else 0  # ruamel's slot for what follows
    if slot[after] is None:
        slot[after] = CommentToken("\n" + text, CommentMark(0))
    else:
        slot[after].value += text


def _column(comment: CommentToken) -> int:
    mark = comment.start_mark
    return int(mark.column) if mark is not None else 0


def _pool(file: ClusterFile, name: str) -> tuple[int, CommentedMap]:
    pools = _pools(file)
    for index, pool in enumerate(pools):
        if isinstance(pool, CommentedMap) and pool.get("name") == name:
            return index, pool
    known = ", ".join(str(p.get("name")) for p in pools if isinstance(p, CommentedMap))
    raise _refused(
        file, ("spec", "nodePools"), f"no pool named {name!r}", f"pools here: {known or 'none'}"
    )


def _pools(file: ClusterFile) -> list[Any]:
    spec = file.document.get("spec")
    pools = spec.get("nodePools") if isinstance(spec, CommentedMap) else None
    return list(pools) if isinstance(pools, CommentedSeq) else []


def _declared_nodes(file: ClusterFile) -> dict[str, NodePath]:
    """Every declared node's name → its key path."""
    out: dict[str, NodePath] = {}
    for pool_index, pool in enumerate(_pools(file)):
        nodes = pool.get(NODES_KEY) if isinstance(pool, CommentedMap) else None
        for node_index, node in enumerate(nodes if isinstance(nodes, CommentedSeq) else []):
            if isinstance(node, CommentedMap) and isinstance(node.get("name"), str):
                path = ("spec", "nodePools", pool_index, NODES_KEY, node_index)
                out.setdefault(node["name"], path)
    return out


def _pool_gpu_count(pool: CommentedMap) -> int | None:
    gpus = pool.get("gpus")
    count = gpus.get("count") if isinstance(gpus, CommentedMap) else None
    return count if isinstance(count, int) and not isinstance(count, bool) else None


def _nodes_position(pool: CommentedMap) -> int:
    keys = list(pool)
    after = [keys.index(k) for k in _NODES_AFTER if k in pool]
    return max(after) + 1 if after else len(keys)


def _gpus(count: int, uuids: Sequence[str]) -> CommentedSeq:
    gpus = [
        round_trip_yaml.flow_mapping({"index": i, "uuid": uuids[i]} if uuids else {"index": i})
        for i in range(count)
    ]
    return round_trip_yaml.sequence(gpus, flow=not uuids)


def _refused(file: ClusterFile, path: tuple[str | int, ...], message: str, hint: str) -> Exception:
    diagnostic: Diagnostic = file.located.diagnostic(path, message, hint)
    return InvalidInput([diagnostic])
