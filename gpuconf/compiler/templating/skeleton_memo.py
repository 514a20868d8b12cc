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

from gpuconf.compiler.templating.chain_analysis import ValuePath

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


class SkeletonMemo:
    def __init__(self, printed_only: Iterable[ValuePath]) -> None:
        self.paths = sorted(printed_only, key=repr)
        self.skeletons: dict[str, Skeleton] = {}
        self.hits = 0
        self.misses = 0

    @property
    def worthwhile(self) -> bool:
        return self.misses < _TRIAL or self.hits >= self.misses

    def stand_ins(self, values: dict[str, Any]) -> dict[str, Any]:
        """`values` with a StandIn for each printed-only value present; containers on the way
        copied, never changed."""
        reduced = dict(values)
        copied = {id(reduced)}
        for path in self.paths:
            container: Any = reduced
            for key in path[:-1]:
                child = container.get(key) if type(container) is dict else None
                if type(child) is not dict:
                    break
                if id(child) not in copied:
                    child = container[key] = dict(child)
                    copied.add(id(child))
                container = child
            else:
                if type(container) is dict and path[-1] in container:
                    container[path[-1]] = StandIn(path)
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


def filled_tokens(tokens: list[Any], values: dict[str, Any]) -> list[Any]:
    """The tokens' values for an artifact: its own value where a stand-in stood."""
    return [_at(values, token.path) if type(token) is StandIn else token for token in tokens]


def _at(values: Any, path: ValuePath) -> Any:
    for key in path:
        values = values[key]
    return values
