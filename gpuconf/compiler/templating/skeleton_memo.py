"""Skeletons remembered: a template run once for every artifact that differs from an earlier one
only in values the template prints whole.

A skeleton (the template's output with a token for each `| yaml` value) depends on the values
the template reads, not on those it only prints (templating/printed_values.py says which those
are). The memo key is the artifact's values with each printed-only value replaced by a
stand-in, written out with repr: plan values are plain data (str, int, float, bool, None,
dict, list, tuple), whose repr tells any two apart. The template runs on those same values,
stand-ins included, so its skeleton holds a stand-in's token exactly where the value's would
be; for a later artifact with the same key, the tokens are that artifact's own values.

Values the template only passes through one of DERIVABLE_FILTERS to print the result whole
(a DaemonSet's labels, selector, tolerations) are stood in for too: the filter, given a
stand-in, returns a `Derived` token instead, whose value the filter works out again from each
artifact's own values as the skeleton is filled. A filter that refuses an artifact's values
there (a site's block changing a label gpuconf writes) raises from `filled_tokens`: the caller
then renders that artifact in place, which refuses it as it always did, at its line. A mapping
the template only iterates for its keys (`for key, value in pod | items`, each value printed
whole) keeps its keys in the key, with a stand-in for each value.

500 namespaces or quotas differ in their names alone, and run their template once; a pool's
DaemonSets, which differ in names, labels and selectors, run theirs once per shape.
"""

from __future__ import annotations

import marshal
from collections.abc import Callable, Hashable, Iterable
from typing import Any

from gpuconf.compiler.templating.chain_analysis import ValuePath

# A template whose artifacts hardly share keys stops paying for keys, as long as a render, once
# this many have missed with fewer than half as many hits. A miss costs its key, a fraction of
# the run a hit saves; the DCGM exporter's DaemonSets take 6 shapes in turn on the bench fleet.
_TRIAL = 8


class StandIn:
    """Stands for the value at `path` while a skeleton is rendered."""

    __slots__ = ("path",)

    def __init__(self, path: ValuePath) -> None:
        self.path = path

    def __repr__(self) -> str:
        return "<printed value>"


class Derived:
    """Stands for what `function` returns from `args`, some of them stand-ins."""

    __slots__ = ("args", "function")

    def __init__(self, function: Callable[..., Any], args: tuple[Any, ...]) -> None:
        self.function = function
        self.args = args

    def __repr__(self) -> str:
        return "<derived value>"

    def __eq__(self, other: object) -> bool:
        return (
            type(other) is Derived and other.function is self.function and other.args == self.args
        )

    __hash__ = None  # type: ignore[assignment]

    def value(self, values: dict[str, Any]) -> Any:
        return self.function(*[_filled(arg, values) for arg in self.args])


def derivable(function: Callable[..., Any]) -> Callable[..., Any]:
    """`function` (one of DERIVABLE_FILTERS), returning a `Derived` where it is given a
    stand-in. Each returns its value itself where its block is empty (gpuconf's own blocks
    are), so that value, stand-in or not, is its result."""

    def filter_or_derive(*args: Any) -> Any:
        if any(type(arg) in _STANDING for arg in args):
            if len(args) > 1 and type(args[1]) is str and not args[1].strip():
                return args[0]
            return Derived(function, args)
        return function(*args)

    return filter_or_derive


_STANDING = (StandIn, Derived)


Skeleton = tuple[str, list[Any]]
"""The skeleton text and its tokens' values, stand-ins where an artifact's values go."""


class SkeletonMemo:
    def __init__(
        self, printed_only: Iterable[ValuePath], keys_only: Iterable[ValuePath] = ()
    ) -> None:
        self.keys_only = frozenset(keys_only)
        self.paths = sorted({*printed_only, *self.keys_only}, key=repr)
        self._plan = _plan(self.paths, self.keys_only)
        self.skeletons: dict[Hashable, Skeleton] = {}
        self.hits = 0
        self.misses = 0

    @property
    def worthwhile(self) -> bool:
        return self.misses < _TRIAL or 2 * self.hits >= self.misses

    def stand_ins(self, values: dict[str, Any]) -> dict[str, Any]:
        """`values` with a StandIn for each printed-only value present, and for each value of a
        keys-only mapping; containers on the way copied, never changed."""
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
                    found = container[path[-1]]
                    if path not in self.keys_only:
                        container[path[-1]] = StandIn(path)
                    elif type(found) is dict:
                        container[path[-1]] = {key: StandIn((*path, key)) for key in found}
        return reduced

    def key(self, values: dict[str, Any]) -> Hashable:
        """What `stand_ins(values)` holds, without building it: each mapping on a stand-in's
        path as its keys and what stands at each (a kept value, exactly; a mark where a value
        is stood in for; a keys-only mapping's keys): two artifacts' keys are equal where their
        values with stand-ins are."""
        return _encoded(self._plan, values)

    def remember(self, key: Hashable, skeleton: Skeleton) -> None:
        self.misses += 1
        self.skeletons[key] = skeleton

    def recall(self, key: Hashable) -> Skeleton | None:
        found = self.skeletons.get(key)
        if found is not None:
            self.hits += 1
        return found


_KEYS_ONLY = "keys only"

# How a key writes the data it keeps (`_exact`) and what stands in: a string as itself,
# anything else as its marshal bytes (version 2: no references, so equal data give equal bytes;
# bytes that load back to the same data, types included, so 1, True and 1.0, 0.0 and -0.0,
# a list and a tuple stay apart) or, for what marshal refuses, a 1-tuple of its repr. No kept
# datum is an int: these ints mark what the plan put there instead.
_STOOD_IN = 0
_MAPPING = 1
_KEYS = 2
_ALL_STOOD_IN = 3


class _Level:
    """The plan of a mapping on a stand-in's path: for each of its keys there, None (stood in
    for), _KEYS_ONLY or the plan of the mapping inside."""

    __slots__ = ("entries", "stood_in")

    def __init__(self) -> None:
        self.entries: dict[str | int, Any] = {}
        self.stood_in: frozenset[str | int] | None = None
        """The keys, where each is a string stood in for: a mapping with no other key is
        written by its keys alone."""

    def close(self) -> None:
        for inner in self.entries.values():
            if type(inner) is _Level:
                inner.close()
        if all(type(key) is str and inner is None for key, inner in self.entries.items()):
            self.stood_in = frozenset(self.entries)


def _plan(paths: Iterable[ValuePath], keys_only: frozenset[ValuePath]) -> _Level:
    plan = _Level()
    # No path lies inside another (printed_values.py): each ends where a stand-in goes.
    for path in paths:
        level = plan
        for key in path[:-1]:
            level = level.entries.setdefault(key, _Level())
        level.entries[path[-1]] = _KEYS_ONLY if path in keys_only else None
    plan.close()
    return plan


def _exact(datum: Any) -> Any:
    if type(datum) is str:
        return datum
    try:
        return marshal.dumps(datum, 2)  # a tenth of repr's cost on a DaemonSet's containers
    except ValueError:  # not plain data
        return (repr(datum),)


def _encoded(plan: _Level, mapping: dict[Any, Any]) -> tuple[Any, ...]:
    if plan.stood_in is not None and mapping.keys() <= plan.stood_in:
        # Every key a string of the plan's (no other datum equals one): all stood in for.
        return (_ALL_STOOD_IN, *mapping)
    entries = plan.entries
    encoded: list[Any] = [_MAPPING]
    for key, value in mapping.items():
        encoded.append(key if type(key) is str else _exact(key))  # a string, inline: hot
        if key not in entries:
            encoded.append(value if type(value) is str else _exact(value))
            continue
        inner = entries[key]
        if inner is None:
            encoded.append(_STOOD_IN)
        elif type(value) is not dict:
            encoded.append(_exact(value))
        elif inner is _KEYS_ONLY:
            encoded.append((_KEYS, *map(_exact, value)))
        else:
            encoded.append(_encoded(inner, value))
    return tuple(encoded)


def filled_tokens(tokens: list[Any], values: dict[str, Any]) -> list[Any]:
    """The tokens' values for an artifact: its own value where a stand-in stood, and a derived
    value worked out from its own (which raises where the filter refuses them). `_filled` for
    each token, with a stand-in's value looked up here: a quota's five tokens, a call each
    spared, for each of 500 quotas."""
    filled = []
    for token in tokens:
        kind = type(token)
        if kind is StandIn:
            found: Any = values
            for key in token.path:
                found = found[key]
            filled.append(found)
        elif kind is Derived:
            filled.append(token.value(values))
        else:
            filled.append(token)
    return filled


def _filled(token: Any, values: dict[str, Any]) -> Any:
    kind = type(token)
    if kind is StandIn:
        return _at(values, token.path)
    if kind is Derived:
        return token.value(values)
    return token


def _at(values: Any, path: ValuePath) -> Any:
    for key in path:
        values = values[key]
    return values
