"""The core schema validation runs on is the one pydantic generates from the records today,
and it validates as pydantic would: strict scalars, unknown keys refused, defaults filled."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from builders import REPO, cluster, configmap_data, pool
from pydantic import TypeAdapter, ValidationError

from gpuconf.api.cluster import Cluster
from gpuconf.api.freeze_schema import FROZEN, frozen_texts
from gpuconf.api.node_config import NodeConfig
from gpuconf.api.record import Record
from gpuconf.api.validators import validate_cluster, validate_node_config

NODE_CONFIG_MAP = "pools/t4/configmap-node-config.yaml"


def _pool(**fields: object) -> dict[str, object]:
    return pool("a", "Tesla-T4", 4, **fields)


def _cluster(*pools: dict[str, object], **spec: object) -> dict[str, object]:
    return cluster(list(pools) or [_pool()], [], **spec)


def test_committed_frozen_schemas_equal_the_generated_ones() -> None:
    texts = frozen_texts()
    assert sorted(p.name for p in FROZEN.glob("*.py")) == sorted(texts)
    for name, text in texts.items():
        assert (FROZEN / name).read_text(encoding="utf-8") == text, (
            f"gpuconf/api/frozen/{name} is stale: run `python -m gpuconf.api.freeze_schema`"
        )


def _errors(data: object) -> list[tuple[str, tuple[int | str, ...]]]:
    with pytest.raises(ValidationError) as raised:
        validate_cluster(data)
    return [(e["type"], tuple(e["loc"])) for e in raised.value.errors()]


def _agree(record: type[Record], frozen: Callable[[Any], Any], documents: list[Any]) -> None:
    built = TypeAdapter(record).validator
    for document in documents:
        try:
            expected: object = built.validate_python(document)
        except ValidationError as error:
            expected = error.errors(include_url=False)
        try:
            got: object = frozen(document)
        except ValidationError as error:
            got = error.errors(include_url=False)
        assert got == expected


def test_frozen_and_pydantic_built_validators_agree_on_good_and_bad_cluster_files() -> None:
    documents = [
        _cluster(),
        _cluster(_pool(size="3")),
        _cluster(_pool(unknown=1)),
        _cluster({**_pool(), "runtime": {"engine": "podman"}}),
        cluster([_pool()], [{"name": "shared", "select": {}, "sharing": {"strategy": "mig"}}]),
        {"kind": "Cluster"},
        [],
    ]
    _agree(Cluster, validate_cluster, documents)


def test_frozen_and_pydantic_built_validators_agree_on_good_and_bad_node_configs() -> None:
    path = REPO / "rendered" / "lab" / NODE_CONFIG_MAP
    rendered = configmap_data(
        {NODE_CONFIG_MAP: path.read_bytes()}, NODE_CONFIG_MAP, "node-config.yaml"
    )
    resource = rendered["resources"][0]
    documents = [
        rendered,
        {**rendered, "metricsPort": "9402"},
        {**rendered, "resources": [{**resource, "class": None, "sharing": {"strategy": "mig"}}]},
        {**rendered, "inventory": {"default": [{"index": -1}]}},
        {**rendered, "runtime": {**rendered["runtime"], "engine": "podman", "extra": 1}},
    ]
    _agree(NodeConfig, validate_node_config, documents)


def test_a_number_where_a_string_belongs_is_refused_not_converted() -> None:
    assert ("string_type", ("spec", "nodePools", 0, "name")) in _errors(
        _cluster({**_pool(), "name": 7})
    )
    assert ("int_type", ("spec", "nodePools", 0, "size")) in _errors(_cluster(_pool(size="3")))


def test_an_unknown_key_is_refused_where_it_is() -> None:
    assert _errors(_cluster(_pool(sise=3))) == [
        ("extra_forbidden", ("spec", "nodePools", 0, "sise"))
    ]


def test_absent_keys_take_their_defaults_and_are_not_counted_as_given() -> None:
    validated = validate_cluster(_cluster())
    assert validated.spec.node.monitoring.scraper_namespaces == ["monitoring"]
    assert validated.spec.nvidia_plugin.version == "v0.20.0"
    assert "version" not in validated.spec.nvidia_plugin.fields_given
    assert "node_pools" in validated.spec.fields_given
