"""YAML edited in place: ruamel.yaml's round-trip mode keeps comments, key order, quoting,
anchors and blank lines, so an edit changes only the lines it must.

The located loader (located_yaml.py) reads a file first: it reports bad YAML and whatever
lies outside the core schema with a position; only text it accepted reaches ruamel."""

from __future__ import annotations

import io
import re
import warnings
from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq

# Wide enough that no line is ever folded: a round trip must not re-wrap the user's lines.
_NEVER_FOLD = 1 << 16
_KEY_LINE = re.compile(r"^( *)(?:- +)*[^#\s-][^:#]*:\s*(?:#.*)?$")
_DASH = re.compile(r"^( *)- ")


class Indentation(NamedTuple):
    """How a file indents: ruamel's `indent(mapping, sequence, offset)`."""

    mapping: int = 2
    sequence: int = 4
    """Columns from a sequence's parent key to its items' content."""
    offset: int = 2
    """Columns from a sequence's parent key to its dashes."""


CANONICAL = Indentation()
"""gpuconf's own style: the examples in clusters/ are written in it."""


def guess_indentation(text: str) -> Indentation:
    """The indentation the file already uses (its first nested mapping, its first block
    sequence), so an edit writes new lines the way the old ones are written."""
    mapping: int | None = None
    sequence: tuple[int, int] | None = None
    parent: int | None = None
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        indent = len(line) - len(line.lstrip(" "))
        dash = _DASH.match(line)
        if parent is not None and dash and indent >= parent and sequence is None:
            content = indent + len(dash.group(0)) - len(dash.group(1))
            sequence = (content - parent, indent - parent)
        elif parent is not None and not dash and indent > parent and mapping is None:
            mapping = indent - parent
        key = _KEY_LINE.match(line)
        parent = _content_column(line) if key else None
        if mapping is not None and sequence is not None:
            break
    seq, offset = sequence or (CANONICAL.sequence, CANONICAL.offset)
    return Indentation(mapping or CANONICAL.mapping, seq, offset)


def _content_column(line: str) -> int:
    """The column where a key starts, after any dashes of sequence items before it."""
    column = len(line) - len(line.lstrip(" "))
    while line.startswith("- ", column):
        column += 2
        while line.startswith(" ", column):
            column += 1
    return column


def _yaml(indentation: Indentation) -> YAML:
    yaml = YAML(typ="rt")
    yaml.preserve_quotes = True
    yaml.width = _NEVER_FOLD
    yaml.indent(
        mapping=indentation.mapping, sequence=indentation.sequence, offset=indentation.offset
    )
    # `[{index: 0}]` stays so; ruamel would otherwise write `[index: 0]`.
    yaml.brace_single_entry_mapping_in_flow_sequence = True
    return yaml


def load(text: str) -> CommentedMap:
    """The document as ruamel's commented data; `text` is one the located loader accepted."""
    with warnings.catch_warnings():
        # A re-used anchor name is legal YAML (the later one wins) and stays as written.
        warnings.simplefilter("ignore")
        document = _yaml(CANONICAL).load(text)
    if not isinstance(document, CommentedMap):
        raise TypeError("the located loader accepts only mappings")
    _keep_anchors(document, set())
    return document


def _keep_anchors(node: Any, seen: set[int]) -> None:
    """ruamel writes back only the anchors an alias names; the user's others stay too."""
    if id(node) in seen:
        return
    seen.add(id(node))
    anchor = getattr(node, "anchor", None)
    if anchor is not None and getattr(anchor, "value", None) is not None:
        anchor.always_dump = True
    if isinstance(node, Mapping):
        for value in node.values():
            _keep_anchors(value, seen)
    elif isinstance(node, list):
        for item in node:
            _keep_anchors(item, seen)


def dump(document: CommentedMap, indentation: Indentation) -> str:
    out = io.StringIO()
    _yaml(indentation).dump(document, out)
    return out.getvalue()


def flow_mapping(items: Mapping[str, Any]) -> CommentedMap:
    """A mapping written on one line, `{index: 0, uuid: GPU-…}`."""
    mapping = CommentedMap(items)
    mapping.fa.set_flow_style()
    return mapping


def sequence(items: Iterable[Any], *, flow: bool) -> CommentedSeq:
    out = CommentedSeq(items)
    if flow:
        out.fa.set_flow_style()
    else:
        out.fa.set_block_style()
    return out


def block_mapping(items: Mapping[str, Any]) -> CommentedMap:
    mapping = CommentedMap(items)
    mapping.fa.set_block_style()
    return mapping
