"""Deterministic YAML from plain data: sorted keys, block style, strings quoted unless plainly safe.

Values are never pasted into YAML text: every string is either a plain scalar of a small,
unambiguous alphabet or a JSON-quoted (valid YAML) double-quoted scalar.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from typing import Any

_PLAIN = re.compile(r"^[A-Za-z_][A-Za-z0-9_./-]*$")
_RESERVED = re.compile(r"^(y|n|yes|no|on|off|true|false|null|nan|inf)$", re.IGNORECASE)
# Characters YAML does not allow raw in a stream (or that parsers treat as line breaks).
_UNPRINTABLE = re.compile(
    "[^\x09\x0a\x0d\x20-\x7e\xa0-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]|[\u2028\u2029\ufeff]"
)


def _quoted(value: str) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return _UNPRINTABLE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


@lru_cache(maxsize=1 << 16)
def _text(value: str) -> str:
    """A string's scalar form, remembered: a rendered tree repeats its keys and labels
    thousands of times over (bounded, so a huge tree of distinct values stays in memory bounds)."""
    return _scalar(value)


def _scalar(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return json.dumps(value)
    if isinstance(value, str):
        if _PLAIN.fullmatch(value) and not _RESERVED.fullmatch(value):
            return value
        return _quoted(value)
    raise TypeError(f"cannot write {type(value).__name__} as YAML")


def _literal_block(value: str, indent: str) -> str | None:
    """A `|` block for multi-line text that round-trips exactly, else None."""
    if "\n" not in value or value.startswith((" ", "\n")) or "\t" in value or "\r" in value:
        return None
    body = value.rstrip("\n")
    trailing = len(value) - len(body)
    lines = body.split("\n")
    if any(line != line.rstrip() or _UNPRINTABLE.search(line) for line in lines):
        return None
    chomp = {0: "-", 1: ""}.get(trailing, "+")
    text = "".join(f"\n{indent}{line}" if line else "\n" for line in lines)
    if trailing > 1:
        text += "\n" * (trailing - 1)
    return f"|{chomp}{text}"


class _Writer:
    """One dump: the lines so far."""

    def __init__(self) -> None:
        self.out: list[str] = []

    def scalar(self, value: Any) -> str:
        return _text(value) if type(value) is str else _scalar(value)

    def emit(self, value: Any, indent: str) -> None:
        if isinstance(value, dict):
            for key in sorted(value):
                self.entry(f"{indent}{_text(str(key))}:", value[key], indent)
        elif isinstance(value, list):
            inner = indent + "  "
            for item in value:
                if isinstance(item, dict) and item:
                    first, *rest = sorted(item)
                    self.entry(f"{indent}- {_text(str(first))}:", item[first], inner)
                    for key in rest:
                        self.entry(f"{inner}{_text(str(key))}:", item[key], inner)
                else:
                    self.entry(f"{indent}-", item, inner, in_list=True)
        else:
            self.out.append(indent + self.scalar(value))

    def entry(self, head: str, item: Any, indent: str, in_list: bool = False) -> None:
        child = indent if in_list else indent + "  "
        if isinstance(item, dict):
            if item:
                self.out.append(head)
                self.emit(item, child)
            else:
                self.out.append(f"{head} {{}}")
        elif isinstance(item, list):
            if item:
                self.out.append(head)
                self.emit(item, child if in_list else indent)
            else:
                self.out.append(f"{head} []")
        elif type(item) is str and "\n" in item and (block := _literal_block(item, child)):
            self.out.append(f"{head} {block}")
        else:
            self.out.append(f"{head} {self.scalar(item)}")


def dump(value: Any) -> str:
    """One YAML document, LF line ends and a trailing newline."""
    writer = _Writer()
    if isinstance(value, dict | list) and value:
        writer.emit(value, "")
    else:
        writer.entry("---", value, "")
    return "\n".join(writer.out) + "\n"
