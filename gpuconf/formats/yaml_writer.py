"""Deterministic YAML from plain data: sorted keys, block style, strings quoted unless plainly safe.

Values are never pasted into YAML text: every string is either a plain scalar of a small,
unambiguous alphabet or a JSON-quoted (valid YAML) double-quoted scalar.
"""

from __future__ import annotations

import json
import re
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


def _emit(value: Any, indent: str, out: list[str]) -> None:
    if isinstance(value, dict):
        for key in sorted(value):
            item = value[key]
            head = f"{indent}{_scalar(str(key))}:"
            _emit_entry(head, item, indent, out)
    elif isinstance(value, list):
        for item in value:
            if isinstance(item, dict) and item:
                first, *rest = sorted(item)
                inner = indent + "  "
                _emit_entry(f"{indent}- {_scalar(str(first))}:", item[first], inner, out)
                for key in rest:
                    _emit_entry(f"{inner}{_scalar(str(key))}:", item[key], inner, out)
            else:
                _emit_entry(f"{indent}-", item, indent + "  ", out, in_list=True)
    else:
        out.append(indent + _scalar(value))


def _emit_entry(head: str, item: Any, indent: str, out: list[str], in_list: bool = False) -> None:
    child = indent if in_list else indent + "  "
    if isinstance(item, dict) and item:
        out.append(head)
        _emit(item, child, out)
    elif isinstance(item, list) and item:
        out.append(head)
        _emit(item, indent if not in_list else child, out)
    elif isinstance(item, dict):
        out.append(f"{head} {{}}")
    elif isinstance(item, list):
        out.append(f"{head} []")
    elif isinstance(item, str) and (block := _literal_block(item, child)) is not None:
        out.append(f"{head} {block}")
    else:
        out.append(f"{head} {_scalar(item)}")


def dump(value: Any) -> str:
    """One YAML document, LF line ends and a trailing newline."""
    out: list[str] = []
    if isinstance(value, dict | list) and value:
        _emit(value, "", out)
    else:
        _emit_entry("---", value, "", out)
    return "\n".join(out) + "\n"
