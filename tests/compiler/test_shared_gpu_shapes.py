"""The inventory resolves each pool's alike GPUs once and shares them between its nodes (a group's
`shape`), and class selection decides a selector's GPU terms once per shape: both must give
exactly what resolving every GPU, and asking units_selected of every GPU, gives."""

from __future__ import annotations

from typing import Any

from builders import CATALOG, cluster, gpu_uuid, pool, valid

from gpuconf.api.validators import validate_cluster
from gpuconf.compiler.plan.pool_node_config import build_node_config
from gpuconf.compiler.resolve.class_selection import Member, units_selected
from gpuconf.compiler.resolve.declared_inventory import Gpu, NodeGroup, build_inventory
from gpuconf.compiler.validate import Validated
from gpuconf.gpus.mig import resolve_layout


def _node(name: str, gpus: int, first_uuid: int | None, **per_gpu: Any) -> dict[str, Any]:
    return {
        "name": name,
        "gpus": [
            {"index": g, **({} if first_uuid is None else {"uuid": gpu_uuid(first_uuid + g)})}
            | per_gpu
            for g in range(gpus)
        ],
    }


def _fleet(classes: list[dict[str, Any]]) -> dict[str, Any]:
    declared = pool("a100", "A100-SXM4-80GB", 4, size=8, driver={"version": "550.90.07"})
    declared["nodes"] = [
        _node("node-a", 4, 0),
        _node("node-b", 4, 10),
        _node("node-short", 2, 30),
        _node("node-other", 4, 40, model="A100-PCIE-80GB"),
        _node("node-named", 4, 50, model="A100-SXM4-80GB"),
        _node("node-anonymous", 4, None),
    ]
    declared["sharing"] = [{"strategy": "mig", "layout": "all-3g.40gb", "indices": [3]}]
    return cluster([declared, pool("l4", "L4", 2, size=3)], classes)


CLASSES = [
    {"name": "whole", "select": {"pools": ["a100"], "indices": [0]}},
    {"name": "mig", "select": {"migProfile": "3g.40gb"}},
    {"name": "pcie", "select": {"model": "A100-PCIE-80GB", "indices": [2]}},
    {"name": "named", "select": {"nodes": ["node-b", "node-named"], "indices": [2]}},
    {
        "name": "newer",
        "select": {"driverVersionAtLeast": "550.54", "pools": ["a100"], "indices": [1]},
    },
    {"name": "l4", "select": {"pools": ["l4"]}},
]


def _every_gpu_asked(validated: Validated) -> dict[str, list[Member]]:
    """Each class's members as units_selected says of every GPU of the fleet, in inventory order."""
    drivers = validated.cluster.spec.driver_versions()
    return {
        c.name: [
            Member(group, gpu, units)
            for group in validated.inventory.groups
            for gpu in group.gpus
            if (units := units_selected(c.select, group, gpu, drivers[group.pool]))
        ]
        for c in validated.cluster.spec.resource_classes
    }


def test_class_members_are_what_units_selected_takes_of_every_gpu() -> None:
    validated = valid(_fleet(CLASSES))
    members = {c.name: list(c.members) for c in validated.classes}
    assert members == _every_gpu_asked(validated)
    assert all(members.values())
    # …the GPUs themselves, UUIDs and all, not their shapes.
    assert {m.gpu.uuid for m in members["named"]} == {gpu_uuid(12), gpu_uuid(52)}


def test_counts_and_pools_from_what_a_class_takes_are_its_members_counts() -> None:
    # ResolvedClass counts its devices from its groups (taken) and builds its members only
    # when asked: what it says must be what its members say.
    validated = valid(_fleet(CLASSES))
    for resolved in validated.classes:
        assert resolved.members_in("no-such-pool") == ()
        members = _every_gpu_asked(validated)[resolved.name]
        assert resolved.devices == sum(m.group.size * m.units for m in members)
        assert resolved.pools == sorted({m.group.pool for m in members})
        taken = [id(t.group) for t in resolved.taken]
        assert taken == list(dict.fromkeys(id(m.group) for m in members))
        for pool_name in ("a100", "l4"):
            in_pool = [m for m in members if m.group.pool == pool_name]
            assert list(resolved.members_in(pool_name)) == in_pool
            devices = sum(m.group.size * m.units for m in in_pool)
            assert resolved.capacity_in(pool_name) == devices * resolved.replicas


def test_validating_a_fleet_builds_no_class_member() -> None:
    # A fleet's members are thousands of tuples that no rule of this cluster reads.
    validated = valid(_fleet(CLASSES))
    assert all(c._members is None for c in validated.classes)


def test_alike_nodes_share_one_shape_and_keep_their_own_uuids() -> None:
    groups = {g.node: g for g in valid(_fleet(CLASSES)).inventory.groups}
    # node-named spells out the pool's model: the same GPUs, so the same shape.
    assert groups["node-a"].shape is groups["node-b"].shape is groups["node-named"].shape
    assert groups["node-a"].shape is groups["node-anonymous"].shape
    assert groups["node-short"].shape is not groups["node-a"].shape
    assert groups["node-other"].shape is not groups["node-a"].shape
    for group in groups.values():
        assert group.shape == tuple(gpu._replace(uuid=None) for gpu in group.gpus)
    assert [g.uuid for g in groups["node-b"].gpus] == [gpu_uuid(10 + i) for i in range(4)]


def test_a_node_s_uuids_are_its_gpus_uuids_and_its_gpus_are_built_when_asked() -> None:
    validated = valid(_fleet(CLASSES))
    by_pool = {
        p.name: [c for c in validated.classes if p.name in c.pools]
        for p in validated.cluster.spec.node_pools
    }
    configs = [
        build_node_config(validated.cluster, p, validated.inventory, tuple(by_pool[p.name]))
        for p in validated.cluster.spec.node_pools
    ]
    listed = {node for config in configs for node in config.inventory.uuids}
    assert listed >= {"node-a", "node-b", "node-named", "node-anonymous"}
    groups = validated.inventory.groups
    # Node configs list the common GPUs' UUIDs without building those nodes' GPUs.
    assert all(g._gpus is None for g in groups if g.node in listed)
    for group in groups:
        assert group.gpu_uuids() == [gpu.uuid for gpu in group.gpus]
        assert [gpu._replace(uuid=None) for gpu in group.gpus] == list(group.shape)


def _resolved_one_by_one(document: dict[str, Any]) -> list[tuple[str | None, list[Gpu]]]:
    """What resolving every declared GPU on its own gives: the catalog's model, the pool's layout."""
    found = []
    for p in validate_cluster(document).spec.node_pools:
        for node in p.nodes:
            gpus = []
            for declared in node.gpus:
                model = CATALOG.get(declared.model or (p.gpus.model if p.gpus else ""))
                if model is None:
                    continue
                layout = next(
                    (
                        s.layout
                        for s in p.mig_layouts()
                        if s.indices is None or declared.index in s.indices
                    ),
                    None,
                )
                mig = None if layout is None else resolve_layout(layout, model)
                gpus.append(Gpu(declared.index, model, declared.uuid, mig))
            found.append((node.name, gpus))
    return found


def test_a_gpu_of_an_unknown_model_is_left_out_of_its_node_and_its_shape() -> None:
    document = _fleet(CLASSES)
    document["spec"]["nodePools"][0]["nodes"].append(
        {
            "name": "node-unknown",
            "gpus": [
                {"index": 0, "uuid": gpu_uuid(60)},
                {"index": 1, "uuid": gpu_uuid(61), "model": "no-such-gpu"},
                {"index": 2, "uuid": gpu_uuid(62)},
            ],
        }
    )
    inventory = build_inventory(validate_cluster(document), CATALOG)
    declared: list[NodeGroup] = [g for g in inventory.groups if g.node is not None]
    assert [(g.node, list(g.gpus)) for g in declared] == _resolved_one_by_one(document)
    unknown = next(g for g in declared if g.node == "node-unknown")
    assert [gpu.index for gpu in unknown.shape] == [0, 2]
    assert [gpu.uuid for gpu in unknown.gpus] == [gpu_uuid(60), gpu_uuid(62)]
