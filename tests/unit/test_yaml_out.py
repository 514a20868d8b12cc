from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from ruamel.yaml import YAML

from gpuconf.formats.yaml_writer import Hole, dump, written_with_holes


def _load(text: str) -> Any:
    return YAML(typ="safe", pure=True).load(text)


scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**53), max_value=2**53),
    st.floats(allow_nan=False),
    st.text(max_size=40),
)
documents = st.recursive(
    scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=4),
        st.dictionaries(st.text(min_size=1, max_size=12), children, max_size=4),
    ),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(documents)
def test_any_plain_data_round_trips_through_a_yaml_parser(document: Any) -> None:
    assert _load(dump(document)) == document


@pytest.mark.parametrize(
    "hostile",
    [
        "a: b\n  evil: 1",
        "x\n- evil",
        "{{ evil }}",
        "'quoted'",
        '"double"',
        "yes",
        "1.34",
        "~",
        "- item",
        "#c",
        "&anchor",
        "*alias",
    ],
)
def test_a_hostile_string_stays_one_string_value(hostile: str) -> None:
    document = {"metadata": {"name": hostile}, "kind": "ConfigMap"}
    assert _load(dump(document)) == document


def test_keys_are_sorted_and_the_text_ends_with_one_newline() -> None:
    text = dump({"b": 1, "a": {"d": 2, "c": 3}})
    assert text == "a:\n  c: 3\n  d: 2\nb: 1\n"


def test_multi_line_text_is_written_as_a_literal_block() -> None:
    text = dump({"data": {"config.yaml": "version: v1\nflags: {}\n"}})
    assert "config.yaml: |\n    version: v1\n    flags: {}\n" in text


@pytest.mark.parametrize("text", ["x\x7fy", "x\x00y", "é\x7f\u2028", "a\nb\x7f\n", "a \nb\n"])
def test_characters_yaml_forbids_raw_are_escaped_in_ascii_and_unicode_text(text: str) -> None:
    written = dump({"value": text})
    assert not {"\x7f", "\x00", "\u2028"} & set(written)
    assert _load(written) == {"value": text}


@pytest.mark.parametrize(
    "text", ["line \nnext\n", "line\u3000\nnext\n", "a\x0cb\nc\n", "a\nb\x85c\n"]
)
def test_text_a_literal_block_would_alter_is_written_quoted(text: str) -> None:
    written = dump({"value": text})
    assert "|" not in written
    assert _load(written) == {"value": text}


def test_not_a_number_is_written_as_yaml_reads_it() -> None:
    (value,) = _load(dump([math.nan]))
    assert math.isnan(value)


_HOLE = object()
shapes = st.recursive(
    st.one_of(scalars, st.just(_HOLE)),
    lambda children: st.one_of(
        st.lists(children, max_size=4),
        st.dictionaries(st.text(min_size=1, max_size=12), children, max_size=4),
    ),
    max_leaves=12,
)


def _put(shape: Any, found: list[Any]) -> Any:
    """`shape` with its hole marks replaced by `found`'s items in turn (the first of them
    given, the rest taken) ."""
    if shape is _HOLE:
        return found.pop(0)
    if isinstance(shape, dict):
        return {key: _put(item, found) for key, item in shape.items()}
    if isinstance(shape, list):
        return [_put(item, found) for item in shape]
    return shape


def _holes_in(shape: Any) -> int:
    if shape is _HOLE:
        return 1
    if isinstance(shape, dict):
        return sum(map(_holes_in, shape.values()))
    if isinstance(shape, list):
        return sum(map(_holes_in, shape))
    return 0


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.text(min_size=1, max_size=12), shapes, min_size=1, max_size=4), st.data())
def test_values_written_into_holes_give_the_text_dump_gives(
    shape: dict[str, Any], data: st.DataObject
) -> None:
    count = _holes_in(shape)
    holes = [Hole() for _ in range(count)]
    holed = written_with_holes(_put(shape, list(holes)), holes)
    for _ in range(2):  # one text, filled again and again
        values = data.draw(st.lists(documents, min_size=count, max_size=count))
        assert holed.filled(values) == dump(_put(shape, list(values)))


def test_a_hole_stands_in_one_place() -> None:
    hole = Hole()
    with pytest.raises(ValueError, match="one place"):
        written_with_holes({"a": hole, "b": [hole]}, [hole])
