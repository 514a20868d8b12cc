"""Make containerd's main config import the drop-in directory, editing as little text as possible.

Users and other tools own the rest of that file, so everything but the ``imports`` key is kept
byte for byte: the key is added before the first table, or the glob is appended to its array.
"""

from __future__ import annotations

import tomllib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from gpuconf.formats.toml_writer import toml_value


class ImportsEditError(Exception):
    """The main config cannot be edited safely; the message says why."""


@dataclass(frozen=True)
class _Token:
    start: int
    end: int
    kind: str
    """A single character outside strings and comments, or "string" for a whole string."""


def new_main_config(version: int, glob: str) -> str:
    return f"version = {version}\nimports = [{_quoted(glob)}]\n"


def ensure_imported(text: str, glob: str) -> str:
    """``text`` with ``glob`` in its top-level ``imports``; ``text`` itself when already there.

    Raises tomllib.TOMLDecodeError when ``text`` is not TOML, ImportsEditError when the
    ``imports`` key is written in a way this edit does not handle.
    """
    before = tomllib.loads(text)
    imports = before.get("imports")
    if imports is None:
        edited = _insert_imports_key(text, glob)
    elif not isinstance(imports, list) or not all(isinstance(i, str) for i in imports):
        raise ImportsEditError("the top-level `imports` is not a list of file paths")
    elif glob in imports:
        return text
    else:
        edited = _append_to_imports(text, glob)
    after = tomllib.loads(edited)
    if after != {**before, "imports": [*(imports or []), glob]}:
        raise ImportsEditError("adding the import would change other settings")
    return edited


def _insert_imports_key(text: str, glob: str) -> str:
    newline = "\r\n" if text.partition("\n")[0].endswith("\r") else "\n"  # the file's own
    line = f"imports = [{_quoted(glob)}]{newline}"
    table = _first_table_line_start(text)
    if table is None:
        separator = "" if not text or text.endswith("\n") else newline
        return text + separator + line
    # After the last top-level line, not after the blank lines that set the first table apart.
    while table > 0 and not text[text.rfind("\n", 0, table - 1) + 1 : table].strip():
        table = text.rfind("\n", 0, table - 1) + 1
    return text[:table] + line + text[table:]


def _append_to_imports(text: str, glob: str) -> str:
    # `imports` is a top-level key: it sits before the first table, so only that part is read
    # token by token (a token per character would cost ~100 bytes each on a 1 MB file).
    top_end = _first_table_line_start(text)
    tokens = list(_tokens(text if top_end is None else text[:top_end]))
    opening = _imports_array_start(text, tokens)
    depth = 0
    last_item_end = None
    for token in tokens[opening:]:
        if token.kind == "[":
            depth += 1
        elif token.kind == "]":
            depth -= 1
            if depth == 0:
                break
        inside = depth >= 1 and token.start > tokens[opening].start
        if inside and token.kind not in (" ", "\t", "\r", "\n"):
            last_item_end = token
    if last_item_end is None:
        insert_at, addition = tokens[opening].end, _quoted(glob)
    elif last_item_end.kind == ",":
        insert_at, addition = last_item_end.end, " " + _quoted(glob)
    else:
        insert_at, addition = last_item_end.end, ", " + _quoted(glob)
    return text[:insert_at] + addition + text[insert_at:]


def _imports_array_start(text: str, tokens: list[_Token]) -> int:
    """The index of the ``[`` token that opens the top-level ``imports = [`` array."""
    for token in _line_starts(tokens):
        if token.kind == "[":
            break
        if text.startswith("imports", token.start):
            after_key = token.start + len("imports")
            significant = [t for t in tokens if t.start >= after_key and t.kind not in " \t"]
            if len(significant) >= 2 and significant[0].kind == "=" and significant[1].kind == "[":
                return tokens.index(significant[1])
    raise ImportsEditError("cannot find `imports = [` before the first table")


def _first_table_line_start(text: str) -> int | None:
    for token in _line_starts(_tokens(text)):
        if token.kind == "[":
            return text.rfind("\n", 0, token.start) + 1
    return None


def _line_starts(tokens: Iterable[_Token]) -> Iterator[_Token]:
    """The first significant token of each line that is not inside an array or inline table."""
    depth = 0
    at_line_start = True
    for token in tokens:
        if token.kind == "\n":
            at_line_start = depth == 0
            continue
        if token.kind in (" ", "\t", "\r"):
            continue
        if at_line_start and depth == 0:
            yield token
            at_line_start = False
            if token.kind == "[":
                continue  # a table header: its brackets are not an array
        if token.kind in ("[", "{"):
            depth += 1
        elif token.kind in ("]", "}"):
            depth = max(depth - 1, 0)


def _tokens(text: str) -> Iterator[_Token]:
    index = 0
    while index < len(text):
        char = text[index]
        if char == "#":
            newline = text.find("\n", index)
            index = len(text) if newline < 0 else newline
        elif char in "\"'":
            end = _string_end(text, index)
            yield _Token(index, end, "string")
            index = end
        else:
            yield _Token(index, index + 1, char)
            index += 1


def _string_end(text: str, start: int) -> int:
    quote_char = text[start]
    quote = quote_char * 3 if text.startswith(quote_char * 3, start) else quote_char
    index = start + len(quote)
    while index < len(text):
        if quote_char == '"' and text[index] == "\\":
            index += 2
        elif text.startswith(quote, index):
            index += len(quote)
            # A multi-line string may end with up to two quotes of its own before the delimiter.
            while len(quote) == 3 and index < len(text) and text[index] == quote_char:
                index += 1
            return index
        else:
            index += 1
    return index


def _quoted(value: str) -> str:
    return toml_value(value)
