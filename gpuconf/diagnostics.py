"""Diagnostics are data: where (file, line, column, key path), what, and what to do."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from enum import StrEnum
from typing import NamedTuple

from gpuconf.errors import UserError

PathPart = str | int
KeyPath = tuple[PathPart, ...]


class Severity(StrEnum):
    ERROR = "error"
    WARNING = "warning"


def format_path(path: Sequence[PathPart]) -> str:
    """Render a key path the way a user reads it: ``spec.nodePools[1].gpus.count``."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        elif not part.isprintable():
            # A key holding a line break or control character must not split the report line.
            out += f"[{json.dumps(part)}]"
        else:
            out += f".{part}" if out else part
    return out or "(document)"


class Diagnostic(NamedTuple):
    file: str
    line: int
    column: int
    path: KeyPath
    message: str
    hint: str = ""
    severity: Severity = Severity.ERROR

    @property
    def is_error(self) -> bool:
        return self.severity is Severity.ERROR

    def as_text(self) -> str:
        where = f"{self.file}:{self.line}:{self.column}"
        kind = "" if self.is_error else "warning: "
        hint = f" (hint: {self.hint})" if self.hint else ""
        line = f"{where}: {format_path(self.path)}: {kind}{self.message}{hint}"
        if line.isprintable():
            return line
        # One diagnostic, one line: a value quoted into the message may hold a line break.
        return "".join(c if c.isprintable() else repr(c)[1:-1] for c in line)

    def as_json(self) -> dict[str, object]:
        return {
            "file": self.file,
            "line": self.line,
            "column": self.column,
            "path": format_path(self.path),
            "severity": self.severity.value,
            "message": self.message,
            "hint": self.hint,
        }


def sort_key(diagnostic: Diagnostic) -> tuple[str, int, int, str, str]:
    return (
        diagnostic.file,
        diagnostic.line,
        diagnostic.column,
        format_path(diagnostic.path),
        diagnostic.message,
    )


def has_errors(diagnostics: Iterable[Diagnostic]) -> bool:
    return any(d.is_error for d in diagnostics)


def report_text(diagnostics: Iterable[Diagnostic]) -> str:
    return "".join(d.as_text() + "\n" for d in sorted(diagnostics, key=sort_key))


def report_json(diagnostics: Iterable[Diagnostic]) -> str:
    items = [d.as_json() for d in sorted(diagnostics, key=sort_key)]
    return json.dumps({"diagnostics": items}, indent=2, sort_keys=True) + "\n"


def summary_line(diagnostics: Sequence[Diagnostic]) -> str:
    """``2 errors, 1 warning``: the count that closes a text report."""
    errors = sum(d.is_error for d in diagnostics)
    warnings = len(diagnostics) - errors
    return f"{errors} error{'s' * (errors != 1)}, {warnings} warning{'s' * (warnings != 1)}"


class InvalidInput(UserError):
    """A file is wrong in the ways its diagnostics say; reported like the compiler's."""

    def __init__(self, diagnostics: Sequence[Diagnostic]) -> None:
        self.diagnostics = sorted(diagnostics, key=sort_key)
        super().__init__(report_text(self.diagnostics).rstrip("\n"))
