"""Deterministic YAML from plain data: sorted keys, block style, strings quoted unless plainly safe.

Values are never pasted into YAML text: every string is either a plain scalar of a small,
unambiguous alphabet or a JSON-quoted (valid YAML) double-quoted scalar.
"""

from __future__ import annotations

import json
import marshal
import math
import re
from functools import cache
from typing import Any, NamedTuple

# A plain scalar: a small ASCII alphabet, and no word YAML 1.1 reads as a bool, null or number,
# in any case. One pattern, so a new string is spelled with one match. The ignored case is the
# lookahead's alone: ASCII letters' other cases (long s, the Kelvin sign) are no plain letters.
_PLAIN = re.compile(
    r"(?!(?i:y|n|yes|no|on|off|true|false|null|nan|inf)\Z)[A-Za-z_][A-Za-z0-9_./-]*"
)


@cache
def _unprintable() -> re.Pattern[str]:
    """Characters YAML does not allow raw in a stream (or that parsers treat as line breaks).

    Compiled on first use: its Unicode ranges take milliseconds to compile, and ASCII text,
    nearly all of a rendered tree, never needs it."""
    return re.compile(
        "[^\x09\x0a\x0d\x20-\x7e\xa0-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]|[\u2028\u2029\ufeff]"
    )


def _quoted(value: str) -> str:
    text = json.dumps(value, ensure_ascii=False)
    if text.isascii():
        return text.replace("\x7f", "\\u007f")  # JSON escaped the other control characters
    return _unprintable().sub(lambda m: f"\\u{ord(m.group()):04x}", text)


class _Spellings(dict[str, str]):
    """Strings' scalar forms, remembered: a rendered tree repeats its keys and labels thousands
    of times over. A dict read by subscript (the form computed only when missing) costs less
    per line than a cached function's call; emptied when full, so a huge tree of distinct
    values stays in memory bounds."""

    __slots__ = ()

    def __missing__(self, value: Any) -> str:
        if type(value) is not str:
            # A mapping's key is written as its text; not kept, since 1 == True == 1.0.
            return _string(str(value))
        if len(self) >= _SPELLINGS_KEPT:
            self.clear()
        spelled = self[value] = _string(value)
        return spelled


_SPELLINGS_KEPT = 1 << 16
_TEXT = _Spellings()


def _string(value: str) -> str:
    return value if _PLAIN.fullmatch(value) else _quoted(value)


def _scalar(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isfinite(value):
            return json.dumps(value)
        # YAML's own spellings: JSON's Infinity and NaN would read back as strings.
        return ".nan" if math.isnan(value) else (".inf" if value > 0 else "-.inf")
    if isinstance(value, str):
        return _string(value)
    raise TypeError(f"cannot write {type(value).__name__} as YAML")


# Whitespace ending a line of a block: a literal block would not keep it.
_TRAILING_SPACE = re.compile(r"[^\S\n](?:\n|\Z)")
_LINE_START = re.compile(r"\n(?=[^\n])")
# The ASCII characters _unprintable() lets through: tab, line breaks and the printable ones.
# What is left of ASCII text once they are deleted (bytes.translate, far cheaper than a
# regular expression's search over a node config) is what a block may not hold.
_ASCII_PRINTABLE = bytes([0x09, 0x0A, 0x0D, *range(0x20, 0x7F)])


def _unfit_for_block(body: str) -> bool:
    if body.isascii():
        # ASCII's whitespace other than space and line breaks are control characters, which
        # are unprintable anyway (tabs and carriage returns were refused before).
        return (
            " \n" in body
            or body.endswith(" ")
            or bool(body.encode("ascii").translate(None, _ASCII_PRINTABLE))
        )
    return _unfit_unicode(body)


def _unfit_unicode(body: str) -> bool:
    return bool(_TRAILING_SPACE.search(body) or _unprintable().search(body))


def _literal_block(value: str, indent: str) -> str | None:
    """A `|` block for multi-line text that round-trips exactly, else None."""
    if "\n" not in value or value.startswith((" ", "\n")) or "\t" in value or "\r" in value:
        return None
    body = value.rstrip("\n")
    if _unfit_for_block(body):
        return None
    trailing = len(value) - len(body)
    chomp = {0: "-", 1: ""}.get(trailing, "+")
    # Every line indented, empty lines left empty (a plain replace where there are none).
    text = "\n" + body
    if "\n\n" in body:
        text = _LINE_START.sub("\n" + indent, text)
    else:
        text = text.replace("\n", "\n" + indent)
    if trailing > 1:
        text += "\n" * (trailing - 1)
    return f"|{chomp}{text}"


# One recursive walk writes a whole document; a rendered tree holds ~50,000 entries, so the
# common case (a string under a key) is decided without a further call.


def _entry(head: str, item: Any, child: str, list_indent: str, out: list[str]) -> None:
    """`head` (``key:`` or ``-``) followed by `item`: inline if a scalar, else on the lines
    below, a mapping indented to `child` and a list to `list_indent`."""
    if type(item) is str:
        if "\n" in item:
            block = _literal_block(item, child)
            if block is not None:
                out.append(f"{head} {block}")
                return
        out.append(f"{head} {_TEXT[item]}")
    elif isinstance(item, dict):
        if item:
            out.append(head)
            _mapping(item, child, child, out)
        else:
            out.append(f"{head} {{}}")
    elif isinstance(item, list):
        if item:
            out.append(head)
            _sequence(item, list_indent, out)
        else:
            out.append(f"{head} []")
    elif type(item) is Hole:
        item.place(head, child, list_indent)
        out.append(item.marker)  # type: ignore[arg-type]
    else:
        out.append(f"{head} {_scalar(item)}")


def _mapping(mapping: dict[Any, Any], first: str, indent: str, out: list[str]) -> None:
    """The entries of a non-empty mapping at `indent`; the first line starts with `first`
    instead (``- `` when the mapping is a list item). What `_entry` would write, with its
    commonest cases (a one-line string, a non-empty mapping or list, an int, a bool) written
    here."""
    child = indent + "  "
    prefix = first
    text = _TEXT
    for key in sorted(mapping):
        item = mapping[key]
        name = text[key]
        kind = type(item)
        if kind is str and "\n" not in item:
            out.append(f"{prefix}{name}: {text[item]}")
        elif kind is dict and item:
            out.append(f"{prefix}{name}:")
            _mapping(item, child, child, out)
        elif kind is list and item:
            out.append(f"{prefix}{name}:")
            _sequence(item, indent, out)
        elif kind is int:
            out.append(f"{prefix}{name}: {item}")
        elif kind is bool:
            out.append(f"{prefix}{name}: {'true' if item else 'false'}")
        else:
            _entry(f"{prefix}{name}:", item, child, indent, out)
        prefix = indent


def _sequence(items: list[Any], indent: str, out: list[str]) -> None:
    inner = indent + "  "
    dash = indent + "- "
    for item in items:
        kind = type(item)
        if kind is str and "\n" not in item:
            out.append(f"{dash}{_TEXT[item]}")  # `_entry`'s line for it
        elif isinstance(item, dict) and item:
            _mapping(item, dash, inner, out)
        else:
            _entry(f"{indent}-", item, inner, inner, out)


class Hole:
    """Stands for a value in a mapping written once (`written_with_holes`): where the writer
    meets it, it notes the line's head and indentation, so that a value written there later
    is written exactly as if it had stood in the mapping."""

    __slots__ = ("child", "entries", "head", "list_indent", "marker", "texts")

    def __init__(self) -> None:
        self.head = ""
        self.child = ""
        self.list_indent = ""
        self.marker: str | None = None
        self.texts: dict[tuple[tuple[str, str], ...], str] = {}
        """Mappings of strings written here, by their entries: an output's labels and
        annotations, written into each of hundreds of outputs of one skeleton."""
        self.entries: dict[tuple[bool, str, bytes], str] = {}
        """Entries of mappings written here whose value is a list or mapping, by whether the
        entry came first, its key and its value's marshal bytes: a DaemonSet's pod spec is
        one hole, and a pool's pod specs share their containers, affinity and tolerations."""

    def place(self, head: str, child: str, list_indent: str) -> None:
        if self.marker is not None:
            raise ValueError("a hole stands in one place")
        self.head, self.child, self.list_indent = head, child, list_indent
        self.marker = f"{head} <hole>"  # a line object of its own: found by identity

    def write(self, value: Any, out: list[str]) -> None:
        """`value`'s lines as the writer writes them in this hole's place, appended to `out`."""
        kind = type(value)
        if kind is str and "\n" not in value:
            out.append(f"{self.head} {_TEXT[value]}")  # `_entry`'s line, as a key's or an item's
        elif kind is dict:
            entries = tuple(value.items())
            try:
                text = self.texts.get(entries)
            except TypeError:  # a list or a mapping among the values: written entry by entry
                if self.head.endswith(":"):
                    out.append(self.head)
                    _mapping_kept(value, self.child, self.child, out, self.entries)
                else:  # a list item: the mapping starts on the item's own line
                    indent = self.head[:-1]
                    _mapping_kept(value, indent + "- ", indent + "  ", out, self.entries)
                return
            if text is None:
                lines: list[str] = []
                self._write(value, lines)
                text = "\n".join(lines)
                # Kept only for strings, so entries equal to kept ones are strings too: equal
                # entries of other types may be written otherwise (1 == True == 1.0).
                if len(self.texts) < _TEXTS_KEPT and _only_strings(value):
                    self.texts[entries] = text
            out.append(text)
        else:
            self._write(value, out)

    def _write(self, value: Any, out: list[str]) -> None:
        if self.head.endswith(":"):
            _entry(self.head, value, self.child, self.list_indent, out)
        else:  # a list item: a mapping starts on the item's own line
            _sequence([value], self.head[:-1], out)


def _mapping_kept(
    mapping: dict[Any, Any],
    first: str,
    indent: str,
    out: list[str],
    kept: dict[tuple[bool, str, bytes], str],
) -> None:
    """`_mapping` for a non-empty mapping, each entry whose key is a string and whose value a
    list or mapping written once for all entries equal to it, types included: marshal's bytes
    load back to the same data, so equal bytes are written alike. Version 4 writes ASCII text as
    it is (a quarter cheaper than version 2 on a pod's containers); its marks for shared and
    interned objects may set equal data apart, which costs a write, never a wrong text."""
    prefix = first
    for key in sorted(mapping):
        item = mapping[key]
        kind = type(item)
        if (kind is dict or kind is list) and item and type(key) is str:
            try:
                data = marshal.dumps(item, 4)
            except ValueError:  # not plain data: the writer says what it cannot write
                data = b""
            if data:
                found = prefix is first, key, data
                text = kept.get(found)
                if text is None:
                    lines: list[str] = []
                    _mapping({key: item}, prefix, indent, lines)
                    text = "\n".join(lines)
                    if len(kept) < _TEXTS_KEPT:
                        kept[found] = text
                out.append(text)
                prefix = indent
                continue
        _mapping({key: item}, prefix, indent, out)
        prefix = indent


def _only_strings(mapping: dict[Any, Any]) -> bool:
    return {*map(type, mapping), *map(type, mapping.values())} == _JUST_STR


_JUST_STR = {str}
_TEXTS_KEPT = 1 << 10


class Holed(NamedTuple):
    """A mapping's text as `dump` writes it, with holes for values written later."""

    parts: list[str | int]
    """Runs of whole lines, and between them the index of the hole that stands there."""
    holes: list[Hole]

    def filled(self, values: list[Any]) -> str:
        """The text `dump` writes for the mapping with `values[i]` in `holes[i]`'s place."""
        out: list[str] = []
        holes = self.holes
        for part in self.parts:
            if type(part) is str:
                out.append(part)
            else:
                holes[part].write(values[part], out)  # type: ignore[index]
        out.append("")  # the trailing newline, without copying the text once more
        return "\n".join(out)


def written_with_holes(mapping: dict[Any, Any], holes: list[Hole]) -> Holed:
    """`mapping` (holding each of `holes` once, as a value, never as a key: keys are sorted by
    their text) written as `dump` would, its holes left open for `Holed.filled`."""
    out: list[str] = []
    _mapping(mapping, "", "", out)
    at = {id(hole.marker): number for number, hole in enumerate(holes) if hole.marker is not None}
    parts: list[str | int] = []
    run: list[str] = []
    for line in out:
        number = at.get(id(line))
        if number is None or line is not holes[number].marker:
            run.append(line)
            continue
        if run:
            parts.append("\n".join(run))
            run = []
        parts.append(number)
    if run:
        parts.append("\n".join(run))
    return Holed(parts, holes)


def dump(value: Any) -> str:
    """One YAML document, LF line ends and a trailing newline."""
    out: list[str] = []
    if isinstance(value, dict) and value:
        _mapping(value, "", "", out)
    elif isinstance(value, list) and value:
        _sequence(value, "", out)
    else:
        _entry("---", value, "  ", "", out)
    out.append("")
    return "\n".join(out)
