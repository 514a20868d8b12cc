"""`gpuconf fmt`: cluster files in gpuconf's canonical style, comments and all.

Canonical: two-space mappings, sequences' dashes two columns in (the style of clusters/), LF line
ends, no trailing spaces, one newline at the end. Everything else (comments, key order, quoting,
flow or block style, blank lines, anchors) stays as the user wrote it."""

from __future__ import annotations

from gpuconf.adopt.cluster_file import ClusterFile, Edited, edited
from gpuconf.errors import UserError
from gpuconf.formats import round_trip_yaml
from gpuconf.formats.located_yaml import LoadFailed, parse_text


def formatted(file: ClusterFile) -> Edited:
    edit = edited(file, round_trip_yaml.CANONICAL, "\n")
    if edit.changed and not _same_data(edit.after, file):
        raise UserError(f"{file.shown}: formatting would change what the file means; left as it is")
    trimmed = "".join(line.rstrip() + "\n" for line in edit.after.splitlines())
    # Trailing spaces inside a block scalar are its content: trim only where the data stays equal.
    if trimmed != edit.after and _same_data(trimmed, file):
        return edit._replace(after=trimmed)
    return edit


def _same_data(text: str, file: ClusterFile) -> bool:
    try:
        same: bool = parse_text(text, file.shown).data == file.located.data
    except LoadFailed:
        return False
    return same
