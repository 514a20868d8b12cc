"""Records, the cluster file's types: frozen values with their file keys, built by pydantic-core."""

from __future__ import annotations

import pickle
from typing import Literal

import pytest
from pydantic import TypeAdapter

from gpuconf.api.cluster.document import Images, Monitoring
from gpuconf.api.cluster.pool import Toleration
from gpuconf.api.freeze_schema import _Source
from gpuconf.api.gpu_model import MigProfile
from gpuconf.api.record import Record, field


def test_a_record_cannot_be_changed() -> None:
    images = Images()
    with pytest.raises(AttributeError, match="frozen"):
        images.gpuconf = "elsewhere"  # type: ignore[misc]
    with pytest.raises(AttributeError, match="frozen"):
        del images.driver


class _Left(Record):
    x: int = 0


class _Right(Record):
    x: int = 0


def test_records_are_equal_and_hash_alike_by_value_and_type() -> None:
    assert Toleration(key="gpu") == Toleration(key="gpu")
    assert hash(Toleration(key="gpu")) == hash(Toleration(key="gpu"))
    assert Toleration(key="gpu") != Toleration(key="cpu")
    # Same fields, same values, different records.
    assert _Left() != _Right()


def test_keywords_fill_a_record_and_each_record_gets_its_own_default_list() -> None:
    first, second = Monitoring(), Monitoring()
    assert first.scraper_namespaces == ["monitoring"]
    assert first.scraper_namespaces is not second.scraper_namespaces
    assert Monitoring(pod_monitor=True).fields_given == {"pod_monitor"}
    with pytest.raises(TypeError, match="has no field colour"):
        Monitoring(colour="red")
    with pytest.raises(TypeError, match="needs compute"):
        MigProfile(memory=1, max=1, memory_mib=5)


def test_plain_data_uses_the_file_keys_and_leaves_out_what_is_unset() -> None:
    toleration = Toleration(key="nvidia.com/gpu", operator="Exists", effect="NoSchedule")
    assert toleration.as_data() == {
        "key": "nvidia.com/gpu",
        "operator": "Exists",
        "effect": "NoSchedule",
    }
    assert MigProfile(compute=1, memory=1, max=7, memory_mib=9984).as_data() == {
        "compute": 1,
        "memory": 1,
        "max": 7,
        "memoryMiB": 9984,
    }


class _Nested(Record):
    items: list[object]
    by_key: dict[str, object]


def test_plain_data_converts_records_inside_lists_and_mappings_and_keeps_plain_items() -> None:
    toleration = Toleration(key="gpu")
    plain = toleration.as_data()
    nested = _Nested(
        items=["a", 1, True, 2.5, None, toleration, [toleration, "b"], {"k": toleration}],
        by_key={"s": "a", "n": None, "t": toleration, "l": [1, toleration]},
    )
    data = nested.as_data()
    assert data == {
        "items": ["a", 1, True, 2.5, None, plain, [plain, "b"], {"k": plain}],
        "byKey": {"s": "a", "n": None, "t": plain, "l": [1, plain]},
    }
    # Copies, never the record's own lists and mappings.
    assert data["items"] is not nested.items
    assert data["byKey"] is not nested.by_key


def test_a_record_survives_pickling() -> None:
    toleration = Toleration(key="gpu", toleration_seconds=30)
    copied = pickle.loads(pickle.dumps(toleration))
    assert copied == toleration
    assert copied.fields_given == toleration.fields_given


class _LambdaDefault(Record):
    tags: list[str] = field(default_factory=lambda: ["x"])


class _NamedDefault(Record):
    tags: list[str] = field(default_factory=list)


def test_the_frozen_schema_refuses_a_default_it_cannot_name() -> None:
    assert "'default_factory': list," in _Source().of(TypeAdapter(_NamedDefault).core_schema)
    with pytest.raises(ValueError, match=r"_LambdaDefault\.<lambda> cannot be imported"):
        _Source().of(TypeAdapter(_LambdaDefault).core_schema)


class _Endpoint(Record):
    address: str = "0.0.0.0:9400"
    mode: Literal["a:1", "b"] = "a:1"


def test_the_frozen_schema_keeps_every_string_as_written() -> None:
    text = _Source().of(TypeAdapter(_Endpoint).core_schema)
    assert "'0.0.0.0:9400'" in text
    assert "'a:1'" in text
