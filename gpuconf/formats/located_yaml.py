"""Load YAML into plain data plus the position of every key, so any later stage can say where."""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.error import MarkedYAMLError, YAMLError

from gpuconf.diagnostics import Diagnostic, KeyPath

# Values reached again through aliases beyond this many make an alias bomb, not a cluster.
MAX_ALIASED_VALUES = 100_000

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


@dataclass(frozen=True)
class Located:
    """One YAML document as plain data, with 1-based positions keyed by key path."""

    file: str
    data: Any
    positions: Mapping[KeyPath, Position] = field(default_factory=dict)

    def position(self, path: KeyPath) -> Position:
        """The position of the deepest part of ``path`` that exists in the document."""
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
        line, column = self.position(path)
        return Diagnostic(self.file, line, column, path, message, hint, **kwargs)


class LoadFailed(Exception):
    def __init__(self, diagnostic: Diagnostic) -> None:
        super().__init__(diagnostic.message)
        self.diagnostic = diagnostic


class _Converter:
    def __init__(self, file: str) -> None:
        self.file = file
        self.positions: dict[KeyPath, Position] = {(): (1, 1)}
        self.aliased_values = 0
        self.seen: set[int] = set()
        self.active: set[int] = set()
        self.alias_depth = 0

    def fail(self, path: KeyPath, message: str, hint: str = "") -> LoadFailed:
        line, column = self.positions.get(path, (1, 1))
        return LoadFailed(Diagnostic(self.file, line, column, path, message, hint))

    def convert(self, node: Any, path: KeyPath) -> Any:
        if self.alias_depth:
            self.aliased_values += 1
            if self.aliased_values > MAX_ALIASED_VALUES:
                raise self.fail(
                    path,
                    f"aliases expand to more than {MAX_ALIASED_VALUES:,} values",
                    "anchors and aliases that refer to each other repeatedly make an alias bomb; "
                    "write the values out",
                )
        if isinstance(node, CommentedMap | CommentedSeq):
            return self._container(node, path)
        if isinstance(node, datetime.datetime | datetime.date):
            return node.isoformat()
        if isinstance(node, bool | int | float | str) or node is None:
            return _plain_scalar(node)
        raise self.fail(path, f"unsupported YAML value of type {type(node).__name__}")

    def _container(self, node: CommentedMap | CommentedSeq, path: KeyPath) -> Any:
        if id(node) in self.active:
            raise self.fail(
                path, "an alias refers to a value that contains it", "remove the recursive alias"
            )
        repeated = id(node) in self.seen
        self.seen.add(id(node))
        self.active.add(id(node))
        self.alias_depth += repeated
        try:
            if isinstance(node, CommentedMap):
                return self._mapping(node, path)
            return self._sequence(node, path)
        finally:
            self.alias_depth -= repeated
            self.active.discard(id(node))

    def _mapping(self, node: CommentedMap, path: KeyPath) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, value in node.items():
            name = key if isinstance(key, str) else _key_text(key)
            here = (*path, name)
            line, column = node.lc.key(key)
            self.positions.setdefault(here, (line + 1, column + 1))
            if name in out:
                raise self.fail(
                    here, f"duplicate key {name!r}", "each key may appear once in a mapping"
                )
            out[name] = self.convert(value, here)
        return out

    def _sequence(self, node: CommentedSeq, path: KeyPath) -> list[Any]:
        out: list[Any] = []
        for index, value in enumerate(node):
            here = (*path, index)
            line, column = node.lc.item(index)
            self.positions.setdefault(here, (line + 1, column + 1))
            out.append(self.convert(value, here))
        return out


def _plain_scalar(value: bool | int | float | str | None) -> Any:
    # ruamel's round-trip scalars subclass the builtins; hand on the builtins themselves.
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    return str(value)


def _key_text(key: Any) -> str:
    if isinstance(key, bool):
        return "true" if key else "false"
    if key is None:
        return "null"
    return str(key)


def _yaml() -> YAML:
    yaml = YAML(typ="rt", pure=True)
    yaml.allow_duplicate_keys = False
    return yaml


def parse_text(text: str, file: str) -> Located:
    """Parse one YAML document; raise LoadFailed with a located diagnostic."""
    try:
        documents = list(_yaml().load_all(text))
    except MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        line, column = (mark.line + 1, mark.column + 1) if mark is not None else (1, 1)
        problem = " ".join(str(error.problem or error.context or "invalid YAML").split())
        raise LoadFailed(
            Diagnostic(
                file, line, column, (), f"YAML syntax error: {problem}", _syntax_hint(problem)
            )
        ) from None
    except YAMLError as error:
        raise LoadFailed(Diagnostic(file, 1, 1, (), f"YAML error: {error}")) from None
    except RecursionError:
        raise LoadFailed(Diagnostic(file, 1, 1, (), "YAML nesting is too deep")) from None
    if not documents or all(d is None for d in documents):
        raise LoadFailed(
            Diagnostic(
                file,
                1,
                1,
                (),
                "the file is empty",
                "a cluster file holds one mapping with apiVersion, kind, metadata and spec",
            )
        )
    if len(documents) > 1:
        raise LoadFailed(
            Diagnostic(
                file,
                1,
                1,
                (),
                f"the file holds {len(documents)} YAML documents",
                "put one Cluster in each file",
            )
        )
    converter = _Converter(file)
    try:
        data = converter.convert(documents[0], ())
    except RecursionError:
        raise LoadFailed(Diagnostic(file, 1, 1, (), "YAML nesting is too deep")) from None
    if not isinstance(data, dict):
        kind = "a list" if isinstance(data, list) else f"a {type(data).__name__}"
        raise LoadFailed(
            Diagnostic(
                file,
                1,
                1,
                (),
                f"the document is {kind}, not a mapping",
                "a cluster file holds one mapping with apiVersion, kind, metadata and spec",
            )
        )
    return Located(file, data, converter.positions)


def _syntax_hint(problem: str) -> str:
    if "duplicate key" in problem:
        return "each key may appear once in a mapping"
    if "tab" in problem:
        return "indent with spaces, not tabs"
    return "check indentation and quoting near this position"


def load_file(path: Path, display: str | None = None) -> Located:
    name = display if display is not None else path.as_posix()
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise LoadFailed(Diagnostic(name, 1, 1, (), "the file is not UTF-8 text")) from None
    except OSError as error:
        raise LoadFailed(
            Diagnostic(name, 1, 1, (), f"cannot read the file: {error.strerror}")
        ) from None
    return parse_text(text, name)
