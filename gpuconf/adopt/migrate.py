"""`gpuconf migrate`: rewrite cluster files at an older apiVersion at the current one, in place,
through the round-trip writer. Only the apiVersion and the values a step changes are touched;
comments, order and quoting everywhere else are kept.

The steps are those validation converts with in memory (api/cluster/conversion.py): a migrated
file means what its older text was read as."""

from __future__ import annotations

from typing import Any

from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.scalarstring import ScalarString

from gpuconf.adopt.cluster_file import ClusterFile, Edited, edited
from gpuconf.api.cluster.conversion import API_VERSION_KEY, steps_from
from gpuconf.diagnostics import KeyPath, format_path
from gpuconf.formats import round_trip_yaml


def migrated(file: ClusterFile) -> tuple[Edited, list[str]]:
    """The file at the current apiVersion, and one line per change (what moved where)."""
    document = file.document
    version = document.get(API_VERSION_KEY)
    lists: dict[int, CommentedSeq] = {}
    moved: list[tuple[str, KeyPath, list[KeyPath]]] = []  # step, path, the aliases sharing it
    moved_at: dict[int, int] = {}  # a list's value id → its entry in `moved`
    for step in steps_from(version):
        for path in step.single_values(document):
            value, made = _put_in_list(document, path, lists)
            if made:
                moved_at[value] = len(moved)
                moved.append((step.name, path, []))
            else:  # an alias of a value already listed: the same list, reported on its line
                moved[moved_at[value]][2].append(path)
        _set_version(document, step.to_version)
    changes = [_moved_line(*entry) for entry in moved]
    if document.get(API_VERSION_KEY) != version:
        changes.append(f"{API_VERSION_KEY}: {version} → {document[API_VERSION_KEY]}")
    return edited(file), changes


def _moved_line(step: str, path: KeyPath, aliases: list[KeyPath]) -> str:
    line = f"{step}: {format_path(path)}: one value → a list of one"
    if not aliases:
        return line
    shown = ", ".join(map(format_path, aliases))
    return line + (
        f" (its alias {shown} shares the list)"
        if len(aliases) == 1
        else f" (its aliases {shown} share the list)"
    )


def _put_in_list(
    document: CommentedMap, path: KeyPath, lists: dict[int, CommentedSeq]
) -> tuple[int, bool]:
    """`lists`: the list each value already moved into, by the value's id: a value several places
    share through an anchor and its aliases is one list there too. Returns the value's id, and
    whether a list was made for it (False: an alias, given the list already made)."""
    *to_parent, key = path
    parent: Any = document
    for part in to_parent:
        parent = parent[part]
    value = parent[key]
    if id(value) in lists:
        parent[key] = lists[id(value)]
        return id(value), False
    # The value moves whole, with its comments; a flow mapping stays on its line as `[{…}]`.
    flow = isinstance(value, CommentedMap) and bool(value.fa.flow_style())
    listed = round_trip_yaml.sequence([value], flow=flow)
    if flow:
        # A comment after the mapping's `}` ends the line: it follows the list's `]` now.
        listed.ca.comment, value.ca.comment = value.ca.comment, None
    anchor = getattr(value, "anchor", None)
    if anchor is not None and anchor.value is not None:
        # `sharing: &small` then `sharing: *small`: the anchor names the list now, so the
        # aliases stay aliases on their lines (ruamel breaks the line of an alias written as a
        # list's item when the mapping carries a comment).
        listed.yaml_set_anchor(anchor.value, always_dump=anchor.always_dump)
        value.yaml_set_anchor(None)
    lists[id(value)] = listed
    parent[key] = listed
    return id(value), True


def _set_version(document: CommentedMap, version: str) -> None:
    """The new version in the old one's quoting (ruamel keeps the line's comment)."""
    old = document[API_VERSION_KEY]
    document[API_VERSION_KEY] = type(old)(version) if isinstance(old, ScalarString) else version
