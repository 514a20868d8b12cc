"""The node config's inventory: each node reads back exactly the GPUs and indices declared for it,
while GPUs that declared nodes share are written once."""

from __future__ import annotations

from typing import Any

import pytest
from builders import EXAMPLES, cluster, configmap_data, gpu_uuid, pool, read_node_config, valid

from gpuconf.api.node_config import NodeConfig
from gpuconf.compiler.plan import plan
from gpuconf.compiler.render import render
from gpuconf.compiler.templating.engine import Templates
from gpuconf.compiler.validate import Validated


def _node(name: str, gpus: int, first_uuid: int, **per_gpu: Any) -> dict[str, Any]:
    return {
        "name": name,
        "gpus": [{"index": g, "uuid": gpu_uuid(first_uuid + g), **per_gpu} for g in range(gpus)],
    }


def _mixed_pool() -> dict[str, Any]:
    """Three nodes alike, one with fewer GPUs, one of another model, one without UUIDs, and
    two more nodes of the pool that are not declared."""
    declared = pool("a100", "A100-SXM4-80GB", 4, size=8)
    declared["nodes"] = [
        _node("node-a", 4, 0),
        _node("node-b", 4, 10),
        _node("node-c", 4, 20),
        _node("node-short", 2, 30),
        _node("node-other", 4, 40, model="A100-PCIE-80GB"),
        {"name": "node-anonymous", "gpus": [{"index": g} for g in range(4)]},
    ]
    declared["sharing"] = [{"strategy": "mig", "layout": "all-3g.40gb", "indices": [3]}]
    return declared


CLASSES = [
    {"name": "low", "select": {"pools": ["a100"], "indices": [0, 1]}},
    {"name": "node-b-high", "select": {"nodes": ["node-b"], "indices": [2]}},
    {"name": "slices", "select": {"pools": ["a100"], "migProfile": "3g.40gb"}},
    # Nodes alike offer GPU 2 here and undeclared nodes do not: `common` is not `default`.
    {
        "name": "alike-high",
        "select": {"nodes": ["node-a", "node-c", "node-anonymous"], "indices": [2]},
    },
]


def _node_config(validated: Validated, pool_name: str) -> NodeConfig:
    tree = render(plan(validated, "cluster.yaml"), Templates())
    data = configmap_data(tree, f"pools/{pool_name}/configmap-node-config.yaml", "node-config.yaml")
    return read_node_config(data)


def _declared_as_read(validated: Validated, pool_name: str) -> None:
    """Every node group of the pool, read back from its node config, is what was declared."""
    config = _node_config(validated, pool_name)
    for group in validated.inventory.by_pool(pool_name):
        name = group.node or "a node the pool does not declare"
        read = [
            (g.index, g.model, g.memory_mi_b, g.uuid, g.mig)
            for g in config.inventory.for_node(name)
        ]
        declared = [
            (g.index, g.model.name, g.model.memory_mib, g.uuid, dict(g.mig) if g.mig else None)
            for g in group.gpus
        ]
        assert read == declared, name
        for resolved in validated.classes:
            resource = next((r for r in config.resources if r.class_name == resolved.name), None)
            members = sorted(
                m.gpu.index for m in resolved.members_in(pool_name) if m.group is group
            )
            offered = config.gpu_indices(resource, name) if resource else []
            assert offered == members, (name, resolved.name)


def test_every_node_of_a_mixed_pool_reads_back_its_own_gpus_and_indices() -> None:
    _declared_as_read(valid(cluster([_mixed_pool()], CLASSES)), "a100")


def test_nodes_alike_share_one_gpu_list_and_each_lists_only_its_uuids() -> None:
    config = _node_config(valid(cluster([_mixed_pool()], CLASSES)), "a100")
    inventory = config.inventory
    assert [g.index for g in inventory.common] == [0, 1, 2, 3]
    assert all(g.uuid is None for g in inventory.common)
    assert inventory.uuids == {
        "node-a": [gpu_uuid(n) for n in range(4)],
        "node-b": [gpu_uuid(n) for n in range(10, 14)],
        "node-c": [gpu_uuid(n) for n in range(20, 24)],
        "node-anonymous": [None] * 4,
    }
    assert sorted(inventory.nodes) == ["node-other", "node-short"]
    gpus = {r.class_name: r.gpus for r in config.resources}
    # Declared nodes are listed only where neither `common` nor `default` gives their indices.
    assert (gpus["low"].default, gpus["low"].common, gpus["low"].nodes) == ([0, 1], [0, 1], {})
    assert (gpus["alike-high"].default, gpus["alike-high"].common) == ([], [2])
    assert gpus["alike-high"].nodes == {"node-b": []}


def test_a_declared_node_like_no_other_keeps_its_full_listing() -> None:
    declared = pool("t4", "Tesla-T4", 2)
    del declared["size"]
    declared["nodes"] = [_node("only", 2, 0)]
    config = _node_config(valid(cluster([declared], [])), "t4")
    assert (config.inventory.common, config.inventory.uuids) == ([], {})
    assert [g.uuid for g in config.inventory.nodes["only"]] == [gpu_uuid(0), gpu_uuid(1)]


@pytest.mark.parametrize("name", EXAMPLES)
def test_every_example_pool_reads_back_as_declared(name: str, compiled_examples) -> None:  # type: ignore[no-untyped-def]
    validated = compiled_examples.validated[name]
    for declared in validated.cluster.spec.node_pools:
        _declared_as_read(validated, declared.name)
