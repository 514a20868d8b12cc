"""Skeletons remembered: a template run once for every artifact that differs from an earlier one
only in values the template prints whole.

A skeleton (the template's output with a token for each `| yaml` value) depends on the values
the template reads, not on those it only prints (templating/printed_values.py says which those
are). The memo key is the artifact's values with each printed-only value replaced by a
stand-in, written out with repr: plan values are plain data (str, int, float, bool, None,
dict, list, tuple), whose repr tells any two apart. The template runs on those same values,
stand-ins included, so its skeleton holds a stand-in's token exactly where the value's would
be; for a later artifact with the same key, the tokens are that artifact's own values.

500 namespaces or quotas differ in their names alone, and run their template once.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from gpuconf.compiler.templating.printed_values import EACH, ValuePath

# A template whose artifacts do not share keys (a DaemonSet per pool, each pool's selectors in
# it) stops paying for keys, as long as a render, once this many have missed with fewer hits.
_TRIAL = 4


class StandIn:
    """Stands for the value at `path` while a skeleton is rendered."""

    __slots__ = ("path",)

    def __init__(self, path: ValuePath) -> None:
        self.path = path

    def __repr__(self) -> str:
        return "<printed value>"


Skeleton = tuple[str, list[Any]]
"""The skeleton text and its tokens' values, stand-ins where an artifact's values go."""


class _Paths:
    """Printed-only paths as a tree: each key (or EACH) leads to the paths under it; `leaf`
    where a path ends, its value to be stood in for."""

    __slots__ = ("leaf", "under")

    def __init__(self) -> None:
        self.leaf = False
        self.under: dict[str | int | None, _Paths] = {}

    def add(self, path: ValuePath) -> None:
        node = self
        for key in path:
            node = node.under.setdefault(key, _Paths())
        node.leaf = True


class SkeletonMemo:
    def __init__(self, printed_only: frozenset[ValuePath]) -> None:
        self.printed_only = printed_only
        self.paths = _Paths()
        for path in printed_only:
            self.paths.add(path)
        self.skeletons: dict[str, Skeleton] = {}
        self.hits = 0
        self.misses = 0

    @property
    def worthwhile(self) -> bool:
        return self.misses < _TRIAL or self.hits >= self.misses

    def stand_ins(self, values: dict[str, Any]) -> dict[str, Any]:
        """`values` with a StandIn for each printed-only value present; containers on the way
        copied, never changed."""
        reduced: dict[str, Any] = _stood_in(values, self.paths, ())
        return reduced

    @staticmethod
    def key(reduced: dict[str, Any]) -> str:
        return repr(reduced)

    def remember(self, key: str, skeleton: Skeleton) -> None:
        self.misses += 1
        self.skeletons[key] = skeleton

    def recall(self, key: str) -> Skeleton | None:
        found = self.skeletons.get(key)
        if found is not None:
            self.hits += 1
        return found


def _stood_in(value: Any, paths: _Paths, at: ValuePath) -> Any:
    """`value` (at path `at`) with a StandIn for each of `paths` under it."""
    kind = type(value)
    if kind is dict:
        entries: Iterable[tuple[Any, Any]] = value.items()
    elif kind is list or kind is tuple:
        entries = enumerate(value)
    else:
        return value
    each = paths.under.get(EACH)
    changed: dict[Any, Any] = {}
    for key, item in entries:
        below = paths.under.get(key)
        for step in (below, each):
            if step is None:
                continue
            if step.leaf:
                changed[key] = StandIn((*at, key))
                break
            item = changed[key] = _stood_in(item, step, (*at, key))
    if not changed:
        return value
    if kind is dict:
        return {**value, **changed}
    items = list(value)
    for index, item in changed.items():
        items[index] = item
    return items if kind is list else tuple(items)


def filled_tokens(tokens: list[Any], values: dict[str, Any]) -> list[Any]:
    """The tokens' values for an artifact: its own value wherever a stand-in stood (a token
    may hold stand-ins inside: a mapping whose entries were stood in for, printed whole)."""
    return [_filled(token, values) for token in tokens]


def _filled(token: Any, values: dict[str, Any]) -> Any:
    kind = type(token)
    if kind is StandIn:
        return _at(values, token.path)
    if kind is dict:
        return {key: _filled(item, values) for key, item in token.items()}
    if kind is list or kind is tuple:
        return kind(_filled(item, values) for item in token)
    return token


def _at(values: Any, path: ValuePath) -> Any:
    for key in path:
        values = values[key]
    return values
