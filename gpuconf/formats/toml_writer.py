"""Write the TOML documents gpuconf emits: tables of strings, numbers, booleans, lists, inline tables.

Built from data, never by pasting values into text, and read back with tomllib before it
is handed on, so a value can neither break the syntax nor smuggle in a key.
"""

from __future__ import annotations

import json
import math
import re
import tomllib
from collections.abc import Mapping, Sequence
from typing import Any

_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")

TomlTable = Mapping[str, Any]


def toml_key(key: str) -> str:
    return key if _BARE_KEY.fullmatch(key) else json.dumps(key, ensure_ascii=False)


def toml_value(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return (
            repr(value)
            if math.isfinite(value)
            else ("nan" if math.isnan(value) else ("inf" if value > 0 else "-inf"))
        )
    if isinstance(value, str):
        # JSON escapes every control character TOML forbids in a basic string except DEL.
        return json.dumps(value, ensure_ascii=False).replace("\x7f", "\\u007f")
    if isinstance(value, Mapping):
        # Host files (containerd's, CRI-O's) may hold tables inside arrays; they stay inline.
        return "{" + ", ".join(f"{toml_key(k)} = {toml_value(v)}" for k, v in value.items()) + "}"
    if isinstance(value, Sequence):
        return "[" + ", ".join(toml_value(item) for item in value) + "]"
    raise TypeError(f"no TOML form for {type(value).__name__}")


def dumps(document: TomlTable) -> str:
    """Scalars of a table before its sub-tables, keys sorted, a blank line between tables."""
    blocks: list[str] = []
    _write_table(document, (), blocks)
    text = "\n\n".join(blocks) + "\n"
    if tomllib.loads(text) != _plain(document):
        raise AssertionError("the TOML writer lost or changed a value")
    return text


def _write_table(table: TomlTable, path: tuple[str, ...], blocks: list[str]) -> None:
    scalars = [(k, v) for k, v in sorted(table.items()) if not isinstance(v, Mapping)]
    tables = [(k, v) for k, v in sorted(table.items()) if isinstance(v, Mapping)]
    lines = [f"{toml_key(k)} = {toml_value(v)}" for k, v in scalars]
    if path and (lines or not tables):
        lines.insert(0, "[" + ".".join(toml_key(part) for part in path) + "]")
    if lines:
        blocks.append("\n".join(lines))
    for key, sub_table in tables:
        _write_table(sub_table, (*path, key), blocks)


def _plain(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, Sequence) and not isinstance(value, str):
        return [_plain(item) for item in value]
    return value
