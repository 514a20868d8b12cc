"""The located YAML loader: YAML 1.2 core-schema data with positions, or one located diagnostic."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gpuconf.diagnostics import Diagnostic
from gpuconf.formats.located_yaml import (
    INT64_MAX,
    INT64_MIN,
    MAX_ALIASED_VALUES,
    MAX_FILE_BYTES,
    LoadFailed,
    load_file,
    parse_text,
)


def _refused(text: str) -> Diagnostic:
    with pytest.raises(LoadFailed) as failed:
        parse_text(text, "f.yaml")
    return failed.value.diagnostic


def test_every_key_and_list_item_has_its_line_and_column() -> None:
    located = parse_text("a:\n  b: [x, {c: 1}]\n  d:\n    - e\n", "f.yaml")
    assert located.data == {"a": {"b": ["x", {"c": 1}], "d": ["e"]}}
    assert located.positions == {
        (): (1, 1),
        ("a",): (1, 1),
        ("a", "b"): (2, 3),
        ("a", "b", 0): (2, 7),
        ("a", "b", 1): (2, 10),
        ("a", "b", 1, "c"): (2, 11),
        ("a", "d"): (3, 3),
        ("a", "d", 0): (4, 7),
    }


def test_positions_read_as_a_plain_mapping_of_lines_and_columns() -> None:
    positions = parse_text("a:\n  - b: 1\n", "f.yaml").positions
    expected = {(): (1, 1), ("a",): (1, 1), ("a", 0): (2, 5), ("a", 0, "b"): (2, 5)}
    assert dict(positions) == expected
    assert (len(positions), list(positions)) == (4, list(expected))
    assert ("a", 0) in positions
    assert ("a", 1) not in positions
    assert positions.get(("a", 1)) is None
    assert positions[("a", 0, "b")] == (2, 5)


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("1.34", 1.34),
        ("1.30", 1.3),
        ('"1.34"', "1.34"),
        ("42", 42),
        ("-7", -7),
        ("0x1F", 31),
        ("0o17", 15),
        ("017", 17),
        ("1e3", 1000.0),
        ("true", True),
        ("False", False),
        ("yes", "yes"),
        ("on", "on"),
        ("~", None),
        ("null", None),
        ("", None),
        ("2001-12-14", "2001-12-14"),
        ("1_000", "1_000"),
        ("'5'", "5"),
        ("! 5", "5"),
        ("!!str 5", "5"),
        ("!!float 3", 3.0),
        ("!!int 3", 3),
        ("!!bool true", True),
        ("!!null ~", None),
        (str(INT64_MAX), INT64_MAX),
        (str(INT64_MIN), INT64_MIN),
    ],
    ids=lambda v: repr(v),
)
def test_scalars_follow_the_yaml_1_2_core_schema(text: str, value: object) -> None:
    assert parse_text(f"v: {text}\n", "f.yaml").data == {"v": value}


def _core_schema(text: str) -> object:
    """YAML 1.2.2 §10.3.2's resolution of a plain scalar, written out from the spec with no
    short cut: what the loader's own (which skips names that cannot be numbers) must equal."""
    if text in ("", "~", "null", "Null", "NULL"):
        return None
    if text in ("true", "True", "TRUE", "false", "False", "FALSE"):
        return text[0] in "tT"
    if re.fullmatch(r"[-+]?[0-9]+", text):
        return int(text)
    if re.fullmatch(r"0o[0-7]+", text):
        return int(text[2:], 8)
    if re.fullmatch(r"0x[0-9a-fA-F]+", text):
        return int(text[2:], 16)
    if re.fullmatch(r"[-+]?(\.inf|\.Inf|\.INF)", text):
        return -math.inf if text[0] == "-" else math.inf
    if re.fullmatch(r"\.nan|\.NaN|\.NAN", text):
        return "nan"
    if re.fullmatch(r"[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?", text):
        return float(text)
    return text


@given(st.text(alphabet="+-.0123456789eExXoabfnINFAtrueTRUEl~_G", min_size=1, max_size=12))
def test_every_plain_scalar_resolves_as_the_core_schema_says(text: str) -> None:
    try:
        value = parse_text(f"v: {text}\n", "f.yaml").data["v"]
    except LoadFailed:
        return  # not a plain scalar there (`v: -`), or an integer past 64 bits
    expected = _core_schema(text)
    if expected == "nan":
        assert isinstance(value, float)
        assert math.isnan(value)
    else:
        assert (type(value), value) == (type(expected), expected)


def test_infinity_and_nan_are_floats() -> None:
    data = parse_text("a: .inf\nb: -.Inf\nc: .nan\n", "f.yaml").data
    assert data["a"] == math.inf
    assert data["b"] == -math.inf
    assert math.isnan(data["c"])


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("v: !!omap [a: 1]\n", "!!omap"),
        ("v: !!pairs [a: 1]\n", "!!pairs"),
        ("v: !!set {a}\n", "!!set"),
        ("v: !!python/tuple [1, 2]\n", "!!python/tuple"),
        ("v: !!python/object/apply:os.system [echo]\n", "!!python/object/apply:os.system"),
        ("v: !!binary aGk=\n", "!!binary"),
        ("v: !!timestamp 2001-12-14\n", "!!timestamp"),
        ("v: !gpu T4\n", "!gpu"),
        ("v: !<tag:example.com,2024:x> 1\n", "tag:example.com,2024:x"),
        ("v: !!map [1]\n", "!!map"),
        ("v: !!seq {a: 1}\n", "!!seq"),
    ],
    ids=lambda v: v if v.startswith("!") or ":" in v else None,
)
def test_every_tag_outside_the_core_schema_is_refused_where_it_stands(
    text: str, shown: str
) -> None:
    assert _refused(text) == Diagnostic(
        "f.yaml",
        1,
        4,
        ("v",),
        f"the tag {shown} is not supported",
        "remove the tag: gpuconf reads plain YAML (strings, numbers, true/false, null, lists "
        "and mappings)",
    )


def test_a_tagged_value_must_be_of_its_tag() -> None:
    diagnostic = _refused("v: !!int seven\n")
    assert (diagnostic.line, diagnostic.column, diagnostic.message) == (
        1,
        4,
        "'seven' is not a value of tag !!int",
    )


def test_merge_keys_are_refused_at_the_key() -> None:
    diagnostic = _refused("base: &b {x: 1}\nuse:\n  <<: *b\n")
    assert (diagnostic.line, diagnostic.column, diagnostic.path) == (3, 3, ("use", "<<"))
    assert diagnostic.message == "merge keys (<<) are not supported"


def test_a_quoted_double_angle_key_is_an_ordinary_key() -> None:
    assert parse_text('"<<": 1\n', "f.yaml").data == {"<<": 1}


@pytest.mark.parametrize(
    "number", [str(INT64_MAX + 1), str(INT64_MIN - 1), "9" * 5000, "0x" + "f" * 17]
)
def test_integers_beyond_64_bits_are_refused(number: str) -> None:
    diagnostic = _refused(f"v: {number}\n")
    assert (diagnostic.line, diagnostic.column, diagnostic.path) == (1, 4, ("v",))
    assert diagnostic.message == "this integer does not fit in 64 bits"


def test_a_nul_byte_is_located_at_its_own_line_and_column() -> None:
    diagnostic = _refused("a: ü\nb: x\x00y\n")
    assert diagnostic.as_text() == (
        "f.yaml:2:5: (document): the character U+0000 is not allowed in YAML "
        "(hint: remove it; inside double quotes it may be written as an escape such as \\x00)"
    )


def test_a_key_holding_a_line_break_stays_on_one_report_line() -> None:
    located = parse_text('"a\\nb": 1\n', "f.yaml")
    text = located.diagnostic(("a\nb",), "unknown key 'a\\nb'").as_text()
    assert text == "f.yaml:1:1: [\"a\\nb\"]: unknown key 'a\\nb'"
    assert "\n" not in Diagnostic("f", 1, 1, (), "two\nlines", "and\rmore").as_text()


def test_a_reused_anchor_name_refers_to_its_latest_value_without_a_warning(
    capfd: pytest.CaptureFixture[str],
) -> None:
    data = parse_text("a: &x 1\nb: &x 2\nc: *x\n", "f.yaml").data
    assert data == {"a": 1, "b": 2, "c": 2}
    assert capfd.readouterr() == ("", "")


def test_aliases_expanding_too_far_are_an_alias_bomb() -> None:
    lines = ["a: &a [" + ", ".join(["x"] * 10) + "]"]
    for previous, name in zip("abcdef", "bcdefg", strict=True):
        lines.append(f"{name}: &{name} [" + ", ".join([f"*{previous}"] * 10) + "]")
    diagnostic = _refused("\n".join(lines) + "\n")
    assert diagnostic.message == f"aliases expand to more than {MAX_ALIASED_VALUES:,} values"
    assert (diagnostic.line, diagnostic.path) == (5, ("e", 7))


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("a: &a [*a]\n", "an alias refers to a value that contains it"),
        ("a: *nowhere\n", "the alias *nowhere names no anchor defined before it"),
        ("? [a]\n: 1\n", "a key must be a plain value, not a list"),
        ("{a: 1}: 2\n", "a key must be a plain value, not a mapping"),
        ("a: 1\na: 2\n", "duplicate key 'a'"),
    ],
)
def test_structures_plain_data_cannot_hold_are_refused(text: str, message: str) -> None:
    assert _refused(text).message == message


_NESTED_FORMS = {
    "flow-list": lambda depth: "a: " + "[" * depth + "]" * depth + "\n",
    "flow-mapping": lambda depth: "a: " + "{k: " * depth + "v" + "}" * depth + "\n",
    "block-list": lambda depth: "a:\n" + "- " * depth + "v\n",
}


# libyaml 0.2.6 (PyYAML 6.0.4) refuses past 1,000 levels itself and reads up to 1,024
# characters ahead, so a run of `[` reaches its refusal before gpuconf sees level 65: the
# diagnostic must still be gpuconf's, at the 65th level, whatever the installed libyaml.
@pytest.mark.parametrize("form", sorted(_NESTED_FORMS))
@pytest.mark.parametrize("depth", [65, 1_000, 1_001, 1_000_000])
def test_deep_nesting_is_refused_whatever_the_depth(form: str, depth: int) -> None:
    diagnostic = _refused(_NESTED_FORMS[form](depth))
    assert diagnostic.message == "YAML nesting is deeper than 64 levels"
    assert len(diagnostic.path) <= 8
    at_level_65 = _refused(_NESTED_FORMS[form](65))
    assert (diagnostic.line, diagnostic.column) == (at_level_65.line, at_level_65.column)


def test_a_syntax_error_past_gpuconfs_limits_is_still_libyamls() -> None:
    diagnostic = _refused("a: [1, 2\nb: 3\n")
    assert diagnostic.message.startswith("YAML syntax error: ")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "the file is empty"),
        ("# only a comment\n", "the file is empty"),
        ("~\n", "the file is empty"),
        ("- a\n", "the document is a list, not a mapping"),
        ("text\n", "the document is a string, not a mapping"),
        ("a: 1\n---\nb: 2\n---\nc: 3\n", "the file holds 3 YAML documents"),
    ],
)
def test_a_file_holds_one_mapping(text: str, message: str) -> None:
    assert _refused(text).message == message


def test_a_second_document_is_located_where_it_starts() -> None:
    diagnostic = _refused("a: 1\n---\nb: 2\n")
    assert (diagnostic.line, diagnostic.column) == (2, 1)


def test_a_file_over_the_size_cap_is_refused_unread(tmp_path: Path) -> None:
    big = tmp_path / "big.yaml"
    big.write_bytes(b"a: 1\n" + b"#" * MAX_FILE_BYTES)
    with pytest.raises(LoadFailed) as failed:
        load_file(big, "big.yaml")
    assert failed.value.diagnostic.as_text() == (
        "big.yaml:1:1: (document): the file is 16.0 MiB; gpuconf reads files up to 16 MiB "
        "(hint: split it into several files, or describe nodes by pool size instead of one "
        "by one)"
    )


def test_a_stream_over_the_size_cap_is_refused_without_a_size_it_cannot_know() -> None:
    # /dev/zero stands for a pipe (/dev/stdin, a shell's <(…)): nothing to seek to.
    with pytest.raises(LoadFailed) as failed:
        load_file(Path("/dev/zero"), "/dev/zero")
    assert failed.value.diagnostic.message == (
        "the file is more than 16 MiB; gpuconf reads files up to 16 MiB"
    )


def test_a_file_that_is_not_utf8_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "latin1.yaml"
    path.write_bytes(b"a: \xe9\n")
    with pytest.raises(LoadFailed, match="not UTF-8"):
        load_file(path)


def test_a_document_without_some_items_still_names_where_the_rest_is_in_the_file() -> None:
    located = parse_text("a: [x, y, z]\nb:\n  c: [1, 2, 3]\n", "f.yaml")
    rest = located.without([("a", 0), ("b", "c", 1)])
    assert rest.data == {"a": ["y", "z"], "b": {"c": [1, 3]}}
    assert located.data == {"a": ["x", "y", "z"], "b": {"c": [1, 2, 3]}}
    assert rest.value_at(("a", 1)) == "z"
    assert rest.original(("a", 1)) == ("a", 2)
    assert rest.position(("b", "c", 1)) == located.position(("b", "c", 2))
    assert rest.diagnostic(("a", 0), "m").as_text() == "f.yaml:1:8: a[1]: m"


def test_items_taken_out_of_a_list_inside_a_list_item_are_renumbered_through_both() -> None:
    located = parse_text("p:\n  - n: [a, b]\n  - n: [c, d, e]\n", "f.yaml")
    rest = located.without([("p", 0), ("p", 1, "n", 0)])
    assert rest.data == {"p": [{"n": ["d", "e"]}]}
    assert rest.original(("p", 0, "n", 1)) == ("p", 1, "n", 2)
    again = rest.without([("p", 0, "n", 0)])
    assert again.data == {"p": [{"n": ["e"]}]}
    assert again.original(("p", 0, "n", 0)) == ("p", 1, "n", 2)


def test_a_value_read_as_a_list_of_one_is_still_named_where_the_file_has_it() -> None:
    located = parse_text("p:\n  - s:\n      k: 1\n      j: [a, b]\n", "f.yaml")
    listed = located.with_listed([("p", 0, "s")])
    assert listed.data == {"p": [{"s": [{"k": 1, "j": ["a", "b"]}]}]}
    assert located.data == {"p": [{"s": {"k": 1, "j": ["a", "b"]}}]}
    assert listed.original(("p", 0, "s", 0, "j", 1)) == ("p", 0, "s", "j", 1)
    assert listed.diagnostic(("p", 0, "s", 0, "k"), "m").as_text() == "f.yaml:3:7: p[0].s.k: m"
    assert listed.diagnostic(("p", 0, "s", 0), "m").as_text() == "f.yaml:2:5: p[0].s: m"


def test_items_taken_out_of_a_list_of_one_keep_the_files_names() -> None:
    located = parse_text("s:\n  j: [a, b, c]\n", "f.yaml").with_listed([("s",)])
    rest = located.without([("s", 0, "j", 0)])
    assert rest.data == {"s": [{"j": ["b", "c"]}]}
    assert rest.diagnostic(("s", 0, "j", 1), "m").as_text() == "f.yaml:2:13: s.j[2]: m"


def test_a_replaced_value_keeps_its_position() -> None:
    located = parse_text("a: old\nb: 1\n", "f.yaml")
    changed = located.with_value(("a",), "new")
    assert (changed.data, located.data["a"]) == ({"a": "new", "b": 1}, "old")
    assert changed.diagnostic(("a",), "m").as_text() == "f.yaml:1:1: a: m"
