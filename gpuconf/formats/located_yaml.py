"""Load YAML into plain data plus the position of every key, so any later stage can say where.

libyaml's C parser produces the events; one loop here turns them into dicts, lists and YAML
1.2 core-schema scalars while recording each key's and item's line and column. Nothing
outside the core schema is accepted: no tags beyond str/int/float/bool/null/map/seq, no
merge keys, no numbers beyond 64 bits, no complex keys. The loop keeps its own stack, so
no nesting, alias or input makes it recurse.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, BinaryIO, NamedTuple

from yaml import MarkedYAMLError, YAMLError
from yaml._yaml import CParser
from yaml.events import (
    AliasEvent,
    DocumentEndEvent,
    DocumentStartEvent,
    MappingEndEvent,
    MappingStartEvent,
    ScalarEvent,
    SequenceEndEvent,
    SequenceStartEvent,
    StreamEndEvent,
)
from yaml.reader import ReaderError

from gpuconf.diagnostics import Diagnostic, KeyPath

# Values reached again through aliases beyond this many make an alias bomb, not a cluster.
MAX_ALIASED_VALUES = 100_000
# Deeper than any file gpuconf reads; stopping here keeps a hostile file cheap to refuse.
MAX_NESTING = 64
MAX_FILE_BYTES = 16 * 1024 * 1024
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1

DOCUMENT_HINT = "the file holds one YAML mapping"

Position = tuple[int, int]

MISSING: Any = object()
"""What `child` returns where a mapping or list has nothing under the key or index."""


def child(node: Any, part: str | int) -> Any:
    """The value under `part` in a mapping or list, or MISSING."""
    if isinstance(node, dict) and isinstance(part, str):
        return node.get(part, MISSING)
    if isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node):
        return node[part]
    return MISSING


class Located(NamedTuple):
    """One YAML document as plain data, with 1-based positions keyed by key path."""

    file: str
    data: Any
    positions: Mapping[KeyPath, Position]
    renumbered: Mapping[KeyPath, tuple[int, ...]]
    """For each list that `without` took items out of: the file's index of each item kept."""
    listed: frozenset[KeyPath] = frozenset()
    """File paths of values that `data` holds as the one item of a list (`with_listed`)."""

    def position(self, path: KeyPath) -> Position:
        """The position of the deepest part of ``path`` that exists in the document."""
        return self._position(self.original(path))

    def _position(self, path: KeyPath) -> Position:
        for end in range(len(path), -1, -1):
            found = self.positions.get(path[:end])
            if found is not None:
                return found
        return (1, 1)

    def value_at(self, path: KeyPath) -> Any:
        """The value at `path`, or None where the document has none (tells defaults from choices)."""
        node: Any = self.data
        for part in path:
            node = child(node, part)
            if node is MISSING:
                return None
        return node

    def diagnostic(self, path: KeyPath, message: str, hint: str = "", **kwargs: Any) -> Diagnostic:
        path = self.original(path)
        line, column = self._position(path)
        return Diagnostic(self.file, line, column, path, message, hint, **kwargs)

    def original(self, path: KeyPath) -> KeyPath:
        """``path`` (into `data`) as it reads in the file: list indices renumbered back over the
        items `without` took out."""
        if not self.renumbered and not self.listed:
            return path
        out: list[str | int] = []
        for part in path:
            if isinstance(part, int) and tuple(out) in self.listed:
                continue  # the list stands for the value itself in the file
            kept = self.renumbered.get(tuple(out))
            if kept is not None and isinstance(part, int) and 0 <= part < len(kept):
                part = kept[part]
            out.append(part)
        return tuple(out)

    def without(self, items: Iterable[KeyPath]) -> Located:
        """This document with the list items at `items` taken out. Its `data` lacks them (only
        the containers on the way are copied); its diagnostics and positions still name the
        file, so a later stage can look at the rest and say where things are."""
        removed: dict[KeyPath, set[int]] = {}
        for *parent, index in items:
            if isinstance(index, int):
                removed.setdefault(tuple(parent), set()).add(index)
        data, renumbered = self.data, dict(self.renumbered)
        # Deepest lists first, so an outer list's indices still hold when an inner one is cut.
        for list_path in sorted(removed, key=len, reverse=True):
            in_file = self.original(list_path)
            before = renumbered.get(in_file)
            values = data
            for part in list_path:
                values = child(values, part)
            if not isinstance(values, list):
                continue
            kept = [i for i in range(len(values)) if i not in removed[list_path]]
            data = _replaced(data, list_path, [values[i] for i in kept])
            renumbered[in_file] = tuple(before[i] if before else i for i in kept)
        return Located(self.file, data, self.positions, renumbered, self.listed)

    def with_value(self, path: KeyPath, value: Any) -> Located:
        """This document with `value` at `path` (into `data`); positions still name the file's."""
        data = _replaced(self.data, path, value)
        return Located(self.file, data, self.positions, self.renumbered, self.listed)

    def with_listed(self, paths: Iterable[KeyPath]) -> Located:
        """This document with the value at each of `paths` (into `data`) put in a list of one:
        how a newer schema reads a value an older one took alone. Diagnostics and positions
        inside the list still name the value where the file has it."""
        located = self
        for path in paths:
            value = located.value_at(path)
            if value is None:
                continue
            located = Located(
                self.file,
                _replaced(located.data, path, [value]),
                self.positions,
                self.renumbered,
                located.listed | {located.original(path)},
            )
        return located


def _replaced(node: Any, path: KeyPath, value: Any) -> Any:
    """A copy of `node` with `value` at `path`; only the containers along the path are copied."""
    if not path:
        return value
    copy: Any = dict(node) if isinstance(node, dict) else list(node)
    copy[path[0]] = _replaced(node[path[0]], path[1:], value)
    return copy


class LoadFailed(Exception):
    def __init__(self, diagnostic: Diagnostic) -> None:
        super().__init__(diagnostic.message)
        self.diagnostic = diagnostic


# YAML 1.2 core schema (yaml.org/spec/1.2.2 §10.3.2), applied to plain scalars only.
_NULL = frozenset({"", "~", "null", "Null", "NULL"})
_BOOL = {"true": True, "True": True, "TRUE": True, "false": False, "False": False, "FALSE": False}
_INT = re.compile(r"[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+")
_FLOAT = re.compile(r"[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?")
# The characters every integer, float and special float above starts with.
_NUMBER_STARTS = frozenset("+-.0123456789")
_SPECIAL_FLOAT = {
    **{f"{sign}{inf}": sign_value * math.inf for sign, sign_value in (("", 1), ("+", 1), ("-", -1)) for inf in (".inf", ".Inf", ".INF")},
    **dict.fromkeys((".nan", ".NaN", ".NAN"), math.nan),
}  # fmt: skip

_CORE = "tag:yaml.org,2002:"
_TAGGED_TYPES: dict[str, tuple[type, ...]] = {
    f"{_CORE}int": (int,),
    f"{_CORE}float": (int, float),
    f"{_CORE}bool": (bool,),
    f"{_CORE}null": (type(None),),
}
_SCALAR_TAGS = frozenset({"!", f"{_CORE}str", *_TAGGED_TYPES})
_MAPPING_TAGS = frozenset({"!", f"{_CORE}map"})
_SEQUENCE_TAGS = frozenset({"!", f"{_CORE}seq"})
_MERGE_KEY = "<<"
_KEY_HINT = "write the key as a string"
# How much of a too-deep key path a diagnostic shows; the line and column say the rest.
_SHOWN_NESTING = 8
# Longer integer texts are outside 64 bits (or padded with zeros past reason): refused unread.
_LONGEST_INT_TEXT = 32


def _int64(text: str) -> int | None:
    """The integer a core-schema integer text means, or None outside 64 bits."""
    if len(text) > _LONGEST_INT_TEXT:
        return None
    if text.startswith("0x"):
        number = int(text[2:], 16)
    elif text.startswith("0o"):
        number = int(text[2:], 8)
    else:
        number = int(text)
    return number if INT64_MIN <= number <= INT64_MAX else None


def _at(mark: Any) -> Position:
    """libyaml's 0-based mark as the 1-based line and column editors show."""
    return (mark.line + 1, mark.column + 1) if mark is not None else (1, 1)


class Positions(Mapping[KeyPath, Position]):
    """The 1-based line and column of each key and list item, made from libyaml's mark when
    asked: a fleet's file has some 30,000 and a render that finds no problem asks for none."""

    __slots__ = ("_marks",)

    def __init__(self, marks: dict[KeyPath, Any]) -> None:
        self._marks = marks

    def __getitem__(self, path: KeyPath) -> Position:
        return _at(self._marks[path])

    def __contains__(self, path: object) -> bool:
        return path in self._marks

    def __iter__(self) -> Iterator[KeyPath]:
        return iter(self._marks)

    def __len__(self) -> int:
        return len(self._marks)


def _shown_tag(tag: str) -> str:
    return "!!" + tag.removeprefix(_CORE) if tag.startswith(_CORE) else tag


def _kind(value: Any) -> str:
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, bool):
        return "true or false"
    if isinstance(value, int | float):
        return "a number"
    return "a string"


class _Document:
    """Build one document from parser events: plain data, positions, and the anchors seen."""

    def __init__(self, parser: CParser, file: str) -> None:
        self.parser = parser
        self.file = file
        self.marks: dict[KeyPath, Any] = {(): None}
        """Each key's and list item's libyaml mark (None: the document's start)."""
        self.anchors: dict[str, tuple[Any, int]] = {}
        """Anchor name → its value and how many values it holds (aliases count them again)."""
        self.open_anchors: set[str] = set()
        self.aliased_values = 0
        self.plain_values: dict[str, Any] = {}
        """Plain scalars already resolved (a fleet repeats its model names, counts and flags)."""

    def fail(self, mark: Any, path: KeyPath, message: str, hint: str = "") -> LoadFailed:
        return LoadFailed(Diagnostic(self.file, *_at(mark), path, message, hint))

    def build(self) -> Any:
        """The value of the document whose start event was just read."""
        # The hot loop of every load: a fleet file is some 30,000 events. Hence locals for
        # what each event touches, a key's path built once for its key and its value, and the
        # common plain scalar looked up inline; every other case goes through the methods.
        # Paths grow by `path + (part,)`, not `(*path, part)`, which builds a list on the way.
        get_event = self.parser.get_event
        marks = self.marks
        plain_values = self.plain_values
        root: Any = None
        container: Any = None
        in_mapping = False
        path: KeyPath = ()
        key: str | None = None
        key_path: KeyPath = ()
        values = 0  # how many values so far, each alias counting those it stands for
        # Each open container: (itself, its path, its parent, its anchor, the value count when
        # it opened).
        stack: list[tuple[Any, KeyPath, Any, str | None, int]] = []
        while True:
            event: Any = get_event()
            kind = type(event)
            if kind is MappingEndEvent or kind is SequenceEndEvent:
                finished, _, container, anchor, opened = stack.pop()
                in_mapping = type(container) is dict
                path = stack[-1][1] if stack else ()
                if anchor is not None:
                    self.anchors[anchor] = (finished, values - opened + 1)
                    self.open_anchors.discard(anchor)
                key = None
                continue
            if kind is DocumentEndEvent:
                return root
            here: KeyPath
            if in_mapping:
                if key is None:
                    if (
                        kind is ScalarEvent
                        and event.tag is None
                        and event.anchor is None
                        and event.value not in container
                        and event.value != _MERGE_KEY
                    ):
                        # The common key, inline: a plain name seen once in this mapping.
                        key = event.value
                        key_path = path + (key,)  # noqa: RUF005
                        marks[key_path] = event.start_mark
                    else:
                        key = self._key(event, container, path)
                        key_path = path + (key,)  # noqa: RUF005
                    continue
                here = key_path
            elif container is not None:
                here = path + (len(container),)  # noqa: RUF005
                marks[here] = event.start_mark
            else:
                here = ()
            values += 1
            if kind is ScalarEvent:
                if event.tag is None and event.implicit[0]:
                    text: str = event.value
                    value = plain_values.get(text, MISSING)
                    if value is MISSING:
                        value = plain_values[text] = self._plain(event, text, here)
                else:
                    value = self._scalar(event, here)
                if event.anchor is not None:
                    self.anchors[event.anchor] = (value, 1)
            elif kind is AliasEvent:
                value, count = self._alias(event, here)
                values += count - 1
            elif kind is MappingStartEvent or kind is SequenceStartEvent:
                if event.tag is None and event.anchor is None and len(stack) < MAX_NESTING:
                    value = {} if kind is MappingStartEvent else []
                else:
                    value = self._open(event, here, len(stack))
                stack.append((value, here, container, event.anchor, values))
            else:
                raise self.fail(event.start_mark, here, "unexpected YAML structure")
            if in_mapping:
                container[key] = value
                key = None
            elif container is not None:
                container.append(value)
            else:
                root = value
            if kind is MappingStartEvent or kind is SequenceStartEvent:
                container, path, key = value, here, None
                in_mapping = kind is MappingStartEvent

    def _key(self, event: Any, mapping: dict[str, Any], path: KeyPath) -> str:
        mark = event.start_mark
        if type(event) is ScalarEvent:
            if event.tag is not None and event.tag not in _SCALAR_TAGS:
                raise self._tag_refused(event, path)
            name: str = event.value
            if event.implicit[0] and name == _MERGE_KEY:
                raise self.fail(
                    mark,
                    (*path, name),
                    "merge keys (<<) are not supported",
                    "write the keys out in this mapping; an alias (*name) may still stand for "
                    "a whole value",
                )
            if event.anchor is not None:
                self.anchors[event.anchor] = (name, 1)
        elif type(event) is AliasEvent and event.anchor in self.anchors:
            name = self.anchors[event.anchor][0]
            if not isinstance(name, str):
                raise self.fail(
                    mark, path, f"a key must be a plain value, not {_kind(name)}", _KEY_HINT
                )
        elif type(event) is AliasEvent:
            raise self._alias_unknown(event, path)
        else:
            shape = "a mapping" if type(event) is MappingStartEvent else "a list"
            raise self.fail(mark, path, f"a key must be a plain value, not {shape}", _KEY_HINT)
        here = (*path, name)
        if name in mapping:
            raise self.fail(
                mark, here, f"duplicate key {name!r}", "each key may appear once in a mapping"
            )
        self.marks[here] = mark
        return name

    def _scalar(self, event: Any, path: KeyPath) -> Any:
        """A quoted or tagged scalar's value (build resolves the plain ones)."""
        text: str = event.value
        tag = event.tag
        if tag is None or tag == "!" or tag == f"{_CORE}str":
            return text
        accepted = _TAGGED_TYPES.get(tag)
        if accepted is None:
            raise self._tag_refused(event, path)
        value = self._plain(event, text, path)
        if type(value) not in accepted:
            raise self.fail(
                event.start_mark,
                path,
                f"{text!r} is not a value of tag {_shown_tag(tag)}",
                "remove the tag, or quote the value to make it a string",
            )
        return float(value) if tag == f"{_CORE}float" else value

    def _plain(self, event: Any, text: str, path: KeyPath) -> Any:
        if text in _NULL:
            return None
        found = _BOOL.get(text)
        if found is not None:
            return found
        if text[0] not in _NUMBER_STARTS:
            return text  # most plain scalars are names: spare them the two patterns
        if _INT.fullmatch(text):
            number = _int64(text)
            if number is None:
                raise self.fail(
                    event.start_mark,
                    path,
                    "this integer does not fit in 64 bits",
                    # The loader knows no field: the quoting advice holds only for text ones.
                    f"use a value between {INT64_MIN:,} and {INT64_MAX:,}; where the field "
                    "takes text, quote it",
                )
            return number
        special = _SPECIAL_FLOAT.get(text)
        if special is not None:
            return special
        if _FLOAT.fullmatch(text):
            return float(text)
        return text

    def _alias(self, event: Any, path: KeyPath) -> tuple[Any, int]:
        """The value an alias stands for, and how many values it holds."""
        name = event.anchor
        if name in self.open_anchors:
            raise self.fail(
                event.start_mark,
                path,
                "an alias refers to a value that contains it",
                "remove the recursive alias",
            )
        if name not in self.anchors:
            raise self._alias_unknown(event, path)
        value, count = self.anchors[name]
        self.aliased_values += count
        if self.aliased_values > MAX_ALIASED_VALUES:
            raise self.fail(
                event.start_mark,
                path,
                f"aliases expand to more than {MAX_ALIASED_VALUES:,} values",
                "anchors and aliases that refer to each other repeatedly make an alias bomb; "
                "write the values out",
            )
        return value, count

    def _open(self, event: Any, path: KeyPath, depth: int) -> Any:
        is_mapping = type(event) is MappingStartEvent
        allowed = _MAPPING_TAGS if is_mapping else _SEQUENCE_TAGS
        if event.tag is not None and event.tag not in allowed:
            raise self._tag_refused(event, path)
        if depth >= MAX_NESTING:
            raise self.fail(
                event.start_mark,
                path[:_SHOWN_NESTING],
                f"YAML nesting is deeper than {MAX_NESTING} levels",
                "a file gpuconf reads nests only a few levels",
            )
        if event.anchor is not None:
            self.open_anchors.add(event.anchor)
        return {} if is_mapping else []

    def _tag_refused(self, event: Any, path: KeyPath) -> LoadFailed:
        return self.fail(
            event.start_mark,
            path,
            f"the tag {_shown_tag(event.tag)} is not supported",
            "remove the tag: gpuconf reads plain YAML (strings, numbers, true/false, null, "
            "lists and mappings)",
        )

    def _alias_unknown(self, event: Any, path: KeyPath) -> LoadFailed:
        return self.fail(
            event.start_mark,
            path,
            f"the alias *{event.anchor} names no anchor defined before it",
            f"define &{event.anchor} on a value earlier in the file",
        )


def _syntax_error(error: MarkedYAMLError, text: str, file: str) -> LoadFailed:
    mark = error.problem_mark or error.context_mark
    line, column = _at(mark)
    problem = " ".join(str(error.problem or error.context or "invalid YAML").split())
    if mark is not None and text[mark.index : mark.index + 1] == "\t":
        hint = "indent with spaces, not tabs"
    else:
        hint = "check indentation and quoting near this position"
    return LoadFailed(Diagnostic(file, line, column, (), f"YAML syntax error: {problem}", hint))


def _own_refusal_before(error: MarkedYAMLError, text: str, file: str) -> LoadFailed | None:
    """gpuconf's own refusal of the text before the point where libyaml gave up, if any.

    libyaml reads ahead of the events it hands out (up to 1,024 characters while a simple key
    is possible, so a run of `[` arrives all at once), and from 0.2.6 (PyYAML 6.0.4) it refuses
    nesting past 1,000 levels itself. Its error can then come before one of gpuconf's limits
    that an earlier position already broke. Parsing only the text before libyaml's mark finds
    that limit, so a file gets the same diagnostic whatever libyaml's version and read-ahead.
    """
    mark = error.problem_mark
    if mark is None or mark.index == 0:
        return None
    # libyaml's index counts the UTF-8 bytes it was given.
    before = text.encode("utf-8")[: mark.index].decode("utf-8", errors="ignore")
    parser = CParser(before)
    try:
        parser.get_event()  # the stream's start
        if type(parser.get_event()) is not StreamEndEvent:
            _Document(parser, file).build()
    except LoadFailed as refusal:
        return refusal
    except YAMLError:
        return None
    finally:
        parser.dispose()
    return None


def _unreadable_character(error: ReaderError, text: str, file: str) -> LoadFailed:
    # libyaml counts the offset in the UTF-8 bytes it was given.
    before = text.encode("utf-8")[: error.position].decode("utf-8", errors="ignore")
    line = before.count("\n") + 1
    column = len(before) - (before.rfind("\n") + 1) + 1
    character = error.character if isinstance(error.character, int) else ord(error.character)
    return LoadFailed(
        Diagnostic(
            file,
            line,
            column,
            (),
            f"the character U+{character:04X} is not allowed in YAML",
            "remove it; inside double quotes it may be written as an escape such as \\x00",
        )
    )


def _whole_file(file: str, message: str, hint: str = "") -> LoadFailed:
    return LoadFailed(Diagnostic(file, 1, 1, (), message, hint))


def _parse(text: str, file: str, document_hint: str) -> Located:
    parser = CParser(text)
    try:
        parser.get_event()  # the stream's start
        first = parser.get_event()
        if type(first) is StreamEndEvent:
            raise _whole_file(file, "the file is empty", document_hint)
        document = _Document(parser, file)
        data = document.build()
        extra: Any = parser.get_event()
        if type(extra) is DocumentStartEvent:
            count = 1
            event: Any = extra
            while type(event) is not StreamEndEvent:
                count += type(event) is DocumentStartEvent
                event = parser.get_event()
            raise LoadFailed(
                Diagnostic(
                    file,
                    *_at(extra.start_mark),
                    (),
                    f"the file holds {count} YAML documents",
                    "keep one document in each file",
                )
            )
    except MarkedYAMLError as error:
        raise _own_refusal_before(error, text, file) or _syntax_error(error, text, file) from None
    except ReaderError as error:
        raise _unreadable_character(error, text, file) from None
    except YAMLError as error:
        raise _whole_file(file, "YAML error: " + " ".join(str(error).split())) from None
    finally:
        parser.dispose()
    if data is None:
        raise _whole_file(file, "the file is empty", document_hint)
    if not isinstance(data, dict):
        raise _whole_file(file, f"the document is {_kind(data)}, not a mapping", document_hint)
    return Located(file, data, Positions(document.marks), {})


def parse_text(text: str, file: str, document_hint: str = DOCUMENT_HINT) -> Located:
    """Parse one YAML document holding a mapping; raise LoadFailed with a located diagnostic."""
    if len(text) > MAX_FILE_BYTES:
        raise _too_big(file, len(text.encode("utf-8")))
    return _parse(text, file, document_hint)


def _too_big(file: str, size: int | None) -> LoadFailed:
    """`size`: the file's; None where it is unknown (a stream read past the limit)."""
    shown = (
        f"the file is {size / 2**20:.1f} MiB"
        if size is not None
        else f"the file is more than {MAX_FILE_BYTES // 2**20} MiB"
    )
    return _whole_file(
        file,
        f"{shown}; gpuconf reads files up to {MAX_FILE_BYTES // 2**20} MiB",
        "split it into several files, or describe nodes by pool size instead of one by one",
    )


def load_file(
    path: Path, display: str | None = None, document_hint: str = DOCUMENT_HINT
) -> Located:
    name = display if display is not None else path.as_posix()
    return _parse(read_text(path, name), name, document_hint)


def read_text(path: Path, name: str) -> str:
    """The file's text, within the size gpuconf reads; LoadFailed, located at the file, else."""
    try:
        with path.open("rb") as handle:
            return read_stream(handle, name)
    except OSError as error:
        raise _whole_file(name, f"cannot read the file: {error.strerror}") from None


def read_stream(handle: BinaryIO, name: str) -> str:
    """read_text of an open file or pipe (standard input), read to its end."""
    try:
        data = handle.read(MAX_FILE_BYTES + 1)
        if len(data) > MAX_FILE_BYTES:
            # A pipe or device (/dev/stdin, <(…)) has no end to seek to, or one at 0.
            end = handle.seek(0, 2) if handle.seekable() else 0
            raise _too_big(name, end if end > MAX_FILE_BYTES else None)
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise _whole_file(name, "the file is not UTF-8 text") from None
    except OSError as error:
        raise _whole_file(name, f"cannot read the file: {error.strerror}") from None
