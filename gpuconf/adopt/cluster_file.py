"""A cluster file being edited: read it, change its round-trip document, check the result with the
compiler's own validator, and write it atomically, or write nothing and say where it is wrong."""

from __future__ import annotations

import difflib
import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import NamedTuple

from ruamel.yaml.comments import CommentedMap

from gpuconf.compiler.pipeline import CLUSTER_DOCUMENT_HINT
from gpuconf.compiler.validate import validate
from gpuconf.diagnostics import Diagnostic, InvalidInput, has_errors
from gpuconf.errors import UserError, cannot_write
from gpuconf.formats import round_trip_yaml
from gpuconf.formats.located_yaml import LoadFailed, Located, parse_text, read_text
from gpuconf.gpus.catalog import Catalog
from gpuconf.node.atomic_files import Staged, discard, put_in_place, stage

BOM = "\ufeff"


class ClusterFile(NamedTuple):
    path: Path
    shown: str
    """The path as diagnostics and messages name it."""
    text: str
    located: Located
    document: CommentedMap
    """ruamel's round-trip data: edit it, then `edited()`."""
    indentation: round_trip_yaml.Indentation
    newline: str
    """How its lines end ("\r\n" or "\n"): an edit's lines end the same way."""
    bom: str
    """The UTF-8 byte order mark it starts with, or "": an edit starts the same way."""


class Edited(NamedTuple):
    path: Path
    shown: str
    before: str
    after: str

    @property
    def changed(self) -> bool:
        return self.before != self.after

    def diff(self) -> list[str]:
        return list(
            difflib.unified_diff(
                self.before.splitlines(keepends=True),
                self.after.splitlines(keepends=True),
                f"a/{self.shown}",
                f"b/{self.shown}",
            )
        )


def read(path: Path, shown: str, catalog: Catalog | None = None) -> ClusterFile:
    """The file, read once and loaded twice: located (for diagnostics) and round-trip (for
    edits). An invalid file is refused here, with the positions of the file as it is."""
    try:
        text = read_text(path, shown)
        located = parse_text(text, shown, CLUSTER_DOCUMENT_HINT)
    except LoadFailed as failure:
        raise InvalidInput([failure.diagnostic]) from None
    outcome = validate(located, catalog or Catalog.load())
    if isinstance(outcome, list) and has_errors(outcome):
        raise InvalidInput(outcome)
    newline = "\r\n" if "\r\n" in text else "\n"
    bom = BOM if text.startswith(BOM) else ""
    # ruamel writes LF and drops a BOM: it reads neither, and both go back on in edited().
    lines = text.removeprefix(bom).replace("\r\n", "\n")
    return ClusterFile(
        path,
        shown,
        text,
        located,
        round_trip_yaml.load(lines),
        round_trip_yaml.guess_indentation(lines),
        newline,
        bom,
    )


def edited(
    file: ClusterFile,
    indentation: round_trip_yaml.Indentation | None = None,
    newline: str | None = None,
) -> Edited:
    """The document as text again, in the file's own indentation and line ends unless told
    otherwise, after its byte order mark if it has one."""
    text = round_trip_yaml.dump(file.document, indentation or file.indentation)
    if newline is None and _mixed_line_ends(file.text):
        after = file.bom + _line_ends_kept(file.text.removeprefix(file.bom), text)
    else:
        after = file.bom + text.replace("\n", newline or file.newline)
    return Edited(file.path, file.shown, file.text, after)


def _mixed_line_ends(text: str) -> bool:
    crlf = text.count("\r\n")
    return 0 < crlf < text.count("\n")


def _line_ends_kept(original: str, text: str) -> str:
    """`text` (LF line ends) with each line `original` has too ending as it did there, and the
    others as most of `original`'s lines do: an edit of a file of mixed line ends changes the
    ends of the lines it changes only."""
    old = original.split("\n")
    old_lines = [line.removesuffix("\r") for line in old]
    new_lines = text.split("\n")
    usual = "\r\n" if original.count("\r\n") * 2 > original.count("\n") else "\n"
    ends = [usual] * (len(new_lines) - 1)
    matcher = difflib.SequenceMatcher(None, old_lines, new_lines, autojunk=False)
    for kind, old_from, old_to, new_from, _ in matcher.get_opcodes():
        if kind == "equal":
            for offset in range(old_to - old_from):
                at_old, at_new = old_from + offset, new_from + offset
                if at_new < len(ends) and at_old < len(old) - 1:
                    ends[at_new] = "\r\n" if old[at_old].endswith("\r") else "\n"
    return "".join(line + end for line, end in zip(new_lines, ends, strict=False)) + new_lines[-1]


def new_file(path: Path, shown: str, document: CommentedMap) -> Edited:
    """A file an importer writes: in gpuconf's own style."""
    before = path.read_text(encoding="utf-8") if path.is_file() else ""
    return Edited(path, shown, before, round_trip_yaml.dump(document, round_trip_yaml.CANONICAL))


def check(edits: Iterable[Edited], catalog: Catalog | None = None) -> list[Diagnostic]:
    """What the validator says about each new text (warnings included); errors name the line in
    the file as it would be written."""
    catalog = catalog or Catalog.load()
    diagnostics: list[Diagnostic] = []
    for edit in edits:
        try:
            located = parse_text(edit.after, edit.shown, CLUSTER_DOCUMENT_HINT)
        except LoadFailed as failure:
            diagnostics.append(failure.diagnostic)
            continue
        outcome = validate(located, catalog)
        diagnostics += outcome if isinstance(outcome, list) else outcome.warnings
    return diagnostics


def write(edits: Sequence[Edited]) -> list[Diagnostic]:
    """All or nothing: validate every new text, then stage each changed one in a temporary beside
    its file and replace the files only once all are staged; write none when any is invalid or
    cannot be staged (a full disk). Returns the warnings."""
    diagnostics = check(edits)
    if has_errors(diagnostics):
        raise InvalidInput(diagnostics)
    targets = [(edit, _target(edit)) for edit in edits if edit.changed]
    staged: list[tuple[Edited, Staged]] = []
    try:
        for edit, target in targets:
            try:
                staged.append((edit, stage(target, edit.after.encode("utf-8"))))
            except OSError as error:
                raise cannot_write(error, Path(edit.shown)) from None
        while staged:
            edit, waiting = staged[0]
            try:
                put_in_place(waiting)
            except OSError as error:
                raise cannot_write(error, Path(edit.shown)) from None
            staged.pop(0)
    finally:
        for _, waiting in staged:
            discard(waiting)
    return diagnostics


def _target(edit: Edited) -> Path:
    """The file an edit rewrites: the one a symbolic link names (renaming over the link would
    replace it with a copy), never a pipe or device (/dev/stdin: renaming over it replaces it)."""
    target = Path(os.path.realpath(edit.path))
    if target.exists() and not target.is_file():
        raise UserError(
            f"{edit.shown}: not a regular file; gpuconf rewrites cluster files in place"
        )
    return target
