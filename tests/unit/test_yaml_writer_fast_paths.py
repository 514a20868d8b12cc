"""The YAML writer's fast paths (lines written in `_mapping` and `_sequence` themselves,
remembered spellings, the ASCII block check, the plain-replace block indent) give the bytes
the plain recursive writing gives."""

from __future__ import annotations

import re
import string
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpuconf.formats import yaml_writer
from gpuconf.formats.yaml_writer import (
    _LINE_START,
    _PLAIN,
    Hole,
    _literal_block,
    _scalar,
    _unfit_for_block,
    _unfit_unicode,
    dump,
    written_with_holes,
)


def _plainly_written(value: Any) -> str:
    """`dump`'s canonical form, each entry written by one rule, nothing remembered."""
    out: list[str] = []

    def entry(head: str, item: Any, child: str, list_indent: str) -> None:
        block = _literal_block(item, child) if isinstance(item, str) else None
        if block is not None:
            out.append(f"{head} {block}")
        elif isinstance(item, dict) and item:
            out.append(head)
            mapping(item, child, child)
        elif isinstance(item, list) and item:
            out.append(head)
            sequence(item, list_indent)
        elif isinstance(item, (dict, list)):
            out.append(f"{head} {'{}' if isinstance(item, dict) else '[]'}")
        else:
            out.append(f"{head} {_scalar(item)}")

    def mapping(items: dict[Any, Any], first: str, indent: str) -> None:
        for number, key in enumerate(sorted(items)):
            head = f"{first if number == 0 else indent}{_scalar(str(key))}:"
            entry(head, items[key], indent + "  ", indent)

    def sequence(items: list[Any], indent: str) -> None:
        for item in items:
            if isinstance(item, dict) and item:
                mapping(item, f"{indent}- ", indent + "  ")
            else:
                entry(f"{indent}-", item, indent + "  ", indent + "  ")

    if isinstance(value, dict) and value:
        mapping(value, "", "")
    elif isinstance(value, list) and value:
        sequence(value, "")
    else:
        entry("---", value, "  ", "")
    return "\n".join(out) + "\n"


_TEXT = st.text(alphabet=" \n-:#'\"aZ0._/é\x7f\x00\u2028", max_size=20)
_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(),
    _TEXT,
    st.sampled_from(["yes", "null", "a/b.c", "app.kubernetes.io/name", "1", "x\ny\n"]),
)
_DOCUMENTS = st.recursive(
    _SCALARS,
    lambda children: st.one_of(
        st.lists(children, max_size=4),
        st.dictionaries(_TEXT, children, max_size=4),
        # Keys sort, so never text and numbers in one mapping; 1, True and 1.0 are equal keys
        # written differently.
        st.dictionaries(
            st.one_of(st.integers(-2, 2), st.booleans(), st.floats(-2, 2)), children, max_size=3
        ),
    ),
    max_leaves=30,
)


@settings(max_examples=400, deadline=None)
@given(_DOCUMENTS)
def test_the_writer_gives_the_bytes_of_the_plain_writing(document: Any) -> None:
    assert dump(document) == _plainly_written(document)


@settings(max_examples=100, deadline=None)
@given(st.lists(_DOCUMENTS, min_size=2, max_size=6))
def test_spellings_remembered_past_their_bound_stay_right(
    documents: list[Any],
) -> None:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(yaml_writer, "_SPELLINGS_KEPT", 3)
        for document in documents:
            assert dump(document) == _plainly_written(document)


def test_equal_keys_of_other_types_are_written_as_their_own_text() -> None:
    assert [dump({key: 0}) for key in (1, True, 1.0, "1")] == [
        '"1": 0\n',
        '"True": 0\n',
        '"1.0": 0\n',
        '"1": 0\n',
    ]


_ASCII_BUT_TAB_AND_CR = "".join(chr(code) for code in range(128) if chr(code) not in "\t\r")


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet=st.sampled_from(_ASCII_BUT_TAB_AND_CR), max_size=12))
def test_the_ascii_block_check_refuses_what_the_unicode_one_refuses(body: str) -> None:
    # Tabs and carriage returns never reach the check: `_literal_block` refuses them first.
    assert _unfit_for_block(body) == _unfit_unicode(body)


@pytest.mark.parametrize("code", [*range(0x20), 0x7F])
def test_every_ascii_control_character_keeps_text_out_of_a_block(code: int) -> None:
    if chr(code) not in "\t\n\r":
        assert _unfit_for_block(f"a{chr(code)}b")


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=string.ascii_letters[:3] + " \né", max_size=30))
def test_a_block_indents_each_line_and_leaves_empty_lines_empty(text: str) -> None:
    value = f"x\n{text}"
    block = _literal_block(value, "    ")
    if block is not None:
        body = value.rstrip("\n")
        expected = _LINE_START.sub("\n    ", "\n" + body)
        assert block.split("\n", 1)[1].startswith(expected[1:])


_LABELS = st.one_of(
    st.dictionaries(st.sampled_from(["app", "b/c", "yes"]), st.sampled_from(["x", "1", "", "on"])),
    st.dictionaries(st.sampled_from(["app", "1"]), st.sampled_from([1, True, 1.0, "1", None])),
    st.dictionaries(st.sampled_from(["app", "b"]), st.sampled_from([[], ["x"], {"k": "v"}])),
    st.sampled_from(["x", "a\nb\n", 1, True, [], {}]),
)
# Lists and mappings equal but for their items' types (1 == True == 1.0, 0.0 == -0.0), which
# a hole writes entry by entry, each kept by its data.
_EQUAL_BUT_TYPES = st.sampled_from([1, True, 1.0, "1", 0.0, -0.0, None, "a\nb\n"])
_POD_SPECS = st.dictionaries(
    st.sampled_from(["containers", "nodeSelector", "b/c", "yes"]),
    st.one_of(
        _EQUAL_BUT_TYPES,
        st.lists(_EQUAL_BUT_TYPES, max_size=2),
        st.dictionaries(st.sampled_from(["k", "1"]), _EQUAL_BUT_TYPES, max_size=2),
        st.lists(st.dictionaries(st.sampled_from(["k", "on"]), _EQUAL_BUT_TYPES), max_size=2),
    ),
)


def _refilled_as_dump_writes(
    layout: Callable[[Any, Any], dict[str, Any]], fillings: list[tuple[Any, Any]]
) -> None:
    """`layout` with two holes, written once and filled with each pair in turn (repeats, and
    values equal but for their items' types), gives what `dump` writes for that pair."""
    first, second = Hole(), Hole()
    holed = written_with_holes(layout(first, second), [first, second])
    for filling in fillings:
        assert holed.filled(list(filling)) == dump(layout(*filling))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(_LABELS, _LABELS), min_size=1, max_size=12))
def test_a_hole_filled_again_with_equal_mappings_gives_what_dump_gives(
    fillings: list[tuple[Any, Any]],
) -> None:
    _refilled_as_dump_writes(
        lambda labels, item: {"metadata": {"labels": labels, "name": "n"}, "spec": [item, "z"]},
        fillings,
    )


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(_POD_SPECS, _POD_SPECS), min_size=1, max_size=12))
def test_a_hole_filled_with_mappings_of_lists_writes_each_kept_entry_as_dump_does(
    fillings: list[tuple[Any, Any]],
) -> None:
    _refilled_as_dump_writes(
        lambda spec, item: {"template": {"spec": spec}, "items": ["z", item]}, fillings
    )


def test_a_hole_keeps_the_text_of_an_entry_holding_a_list() -> None:
    spec = Hole()
    holed = written_with_holes({"spec": spec}, [spec])
    for pool in ("a", "b"):
        filled = {"containers": [{"name": "c"}], "nodeSelector": {"pool": pool}}
        assert holed.filled([filled]) == dump({"spec": filled})
    # The containers once, each pool's node selector once.
    assert sorted(key for _, key, _ in spec.entries) == [
        "containers",
        "nodeSelector",
        "nodeSelector",
    ]


def test_a_hole_writes_equal_entries_alike_whether_their_objects_are_shared_or_not() -> None:
    spec = Hole()
    holed = written_with_holes({"spec": spec}, [spec])
    mount = {"name": "m", "readOnly": True}
    for mounts in ([mount, mount], [dict(mount), dict(mount)], [mount, {**mount, "readOnly": 1}]):
        filled = {"containers": [{"volumeMounts": mounts}]}
        assert holed.filled([filled]) == dump({"spec": filled})


def test_a_hole_refuses_what_dump_refuses_inside_a_kept_entry() -> None:
    spec = Hole()
    holed = written_with_holes({"spec": spec}, [spec])
    with pytest.raises(TypeError, match="cannot write object"):
        holed.filled([{"containers": [object()]}])


# The plain-scalar rule as two patterns, the way it was first written: the alphabet, then
# YAML 1.1's reserved words in any case.
_ALPHABET = re.compile(r"^[A-Za-z_][A-Za-z0-9_./-]*$")
_RESERVED = re.compile(r"^(y|n|yes|no|on|off|true|false|null|nan|inf)$", re.IGNORECASE)
_RESERVED_WORDS = ["y", "n", "yes", "no", "on", "off", "true", "false", "null", "nan", "inf"]


@settings(max_examples=600, deadline=None)
@given(
    st.one_of(
        st.text(alphabet="yesnoftrualINFYE_.-/0\n \u017f\u212a\u0130\u0131", max_size=7),
        st.sampled_from(_RESERVED_WORDS).flatmap(
            lambda word: st.tuples(
                st.lists(st.booleans(), min_size=len(word), max_size=len(word)),
                st.sampled_from(["", "\n", "x", "_", " "]),
            ).map(
                lambda drawn: (
                    "".join(c.upper() if up else c for c, up in zip(word, drawn[0], strict=True))
                    + drawn[1]
                )
            )
        ),
    )
)
def test_one_pattern_tells_plain_scalars_as_the_alphabet_and_reserved_words_did(
    value: str,
) -> None:
    plain = bool(_ALPHABET.fullmatch(value)) and not _RESERVED.fullmatch(value)
    assert bool(_PLAIN.fullmatch(value)) == plain
    assert (_scalar(value) == value) == plain


@pytest.mark.parametrize("word", _RESERVED_WORDS)
def test_every_reserved_word_in_any_case_is_quoted(word: str) -> None:
    for spelling in (word, word.upper(), word.title()):
        assert dump(spelling) == f'--- "{spelling}"\n'
