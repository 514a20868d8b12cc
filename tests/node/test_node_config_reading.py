"""What the node config's schema cannot say is checked when the node reads it, located."""

from __future__ import annotations

import json
from typing import Any

import pytest
from builders import node_config

from gpuconf.node.config_watch import ConfigInvalid, parse_config

GPU = {"index": 0, "model": "H100-80GB", "nvmlName": "NVIDIA H100 80GB HBM3", "memoryMiB": 81559}


def _problems(inventory: dict[str, Any]) -> list[str]:
    text = json.dumps(node_config([], inventory=inventory), indent=1)
    with pytest.raises(ConfigInvalid) as refused:
        parse_config(text, "node-config.yaml")
    return [d.as_text() for d in refused.value.diagnostics]


def test_uuids_fewer_than_the_common_gpus_are_refused_at_the_node() -> None:
    common = [GPU, {**GPU, "index": 1}]
    problems = _problems({"default": [], "common": common, "uuids": {"node-a": ["GPU-a0"]}})
    assert len(problems) == 1
    assert problems[0].startswith("node-config.yaml:")
    assert problems[0].endswith(
        ": inventory.uuids.node-a: 1 UUID(s) for the 2 common GPU(s) "
        "(hint: render the node config again)"
    )


def test_a_node_listed_both_with_uuids_and_with_gpus_of_its_own_is_refused() -> None:
    problems = _problems(
        {
            "default": [],
            "common": [GPU],
            "uuids": {"node-a": ["GPU-a0"]},
            "nodes": {"node-a": [GPU]},
        }
    )
    assert [p.split(": ", 1)[1] for p in problems] == [
        "inventory.uuids.node-a: the node is also listed in nodes "
        "(hint: render the node config again)"
    ]


def test_a_common_gpu_with_a_uuid_of_its_own_is_refused() -> None:
    problems = _problems(
        {"default": [], "common": [{**GPU, "uuid": "GPU-x"}], "uuids": {"node-a": [None]}}
    )
    assert [p.split(": ", 1)[1] for p in problems] == [
        "inventory.common[0].uuid: common GPUs take their UUIDs from uuids "
        "(hint: render the node config again)"
    ]


def test_a_consistent_inventory_reads_each_node_with_its_uuids() -> None:
    text = json.dumps(
        node_config(
            [],
            inventory={
                "default": [GPU],
                "common": [GPU],
                "uuids": {"node-a": ["GPU-a0"], "node-b": [None]},
            },
        )
    )
    inventory = parse_config(text, "node-config.yaml").inventory
    assert [g.uuid for g in inventory.for_node("node-a")] == ["GPU-a0"]
    assert [g.uuid for g in inventory.for_node("node-b")] == [None]
    assert inventory.for_node("node-z") == inventory.default
