"""What a template chain does with its values, read from its syntax trees.

Two questions, both for the whole chain (a template and those it extends):

- Whether it may be rendered as a skeleton: with a token where each `| yaml` value stands,
  parsed back and filled with the values (render.py). Only where every `| yaml` is the whole
  of an expression written to the output: text captured from one (`{% set %}` blocks, macros,
  calls, a block read as `self.<block>()`) or a `| yaml` inside a larger expression would hold
  the token, not the value, and whatever the template did with that text would be wrong.
- Which values it only prints whole: a value at a path such as `meta["name"]` used nowhere but
  as the whole of a `{{ meta["name"] | yaml }}` in the output, or in an `is defined` test,
  cannot change what the template writes around it, only the token that stands for it. Such
  values are what skeleton_memo.py leaves out of its key; everything else is in the key.
  The same holds for each entry of a mapping or list (the path's EACH) that a loop walks or a
  filter such as `with_entries` passes on, and that is printed whole: the entries' number and
  keys are in the key, their values are not (a DaemonSet per pool, whose pod spec differs in
  the pool's name, runs its template once).

The reading is conservative: any use it does not recognise makes the value, and every path
through it, part of the key; a chain that reaches outside what it names (`include`, `import`,
`super()`, an `extends` of a computed name or more than one `extends` in a file) is rendered
in place, values and all.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any, NamedTuple

from jinja2 import nodes

ValuePath = tuple[str | int | None, ...]
"""Keys from the values down to one value; EACH stands for every entry of a mapping or list."""
EACH = None

# `x.items` on a mapping is its method, not its "items" entry: such an attribute is not a key.
_METHODS = frozenset(
    name for kind in (dict, list, tuple, str, int, float, bool, type(None)) for name in dir(kind)
)
# Output written into a variable, a macro's or a call's text, or a block that `self.<name>()`
# returns as text: what it prints is data to the template, not the output. ({% filter %} blocks
# are refused before a tree gets here.)
_CAPTURING = (nodes.AssignBlock, nodes.Macro, nodes.CallBlock)
_PRESENCE_TESTS = frozenset({"defined", "undefined"})


class NotAnalysable(Exception):
    """The chain reads values in a way this module does not follow."""


class ChainAnalysis(NamedTuple):
    skeleton: bool
    """Every `| yaml` is the whole of an expression written to the output."""
    printed_only: frozenset[ValuePath]
    """Value paths used only printed whole or tested for presence (empty unless skeleton)."""


IN_PLACE = ChainAnalysis(skeleton=False, printed_only=frozenset())


def value_path(expression: nodes.Node) -> ValuePath | None:
    """`a`, `a["b"]`, `a.b`, `a[0]`, … as (a, b, …), where every key is a constant."""
    keys: list[str | int] = []
    node: Any = expression
    while True:
        if isinstance(node, nodes.Getitem):
            key = node.arg.value if isinstance(node.arg, nodes.Const) else None
            if type(key) not in (str, int):
                return None
            keys.append(key)  # type: ignore[arg-type]
        elif isinstance(node, nodes.Getattr):
            if node.attr in _METHODS:
                return None
            keys.append(node.attr)
        elif isinstance(node, nodes.Name) and node.ctx == "load":
            keys.append(node.name)
            return tuple(reversed(keys))
        else:
            return None
        node = node.node


def _encoded_whole(node: nodes.Node) -> bool:
    """`{{ expression | yaml }}`: an expression encoded, the filter outermost and bare."""
    return (
        isinstance(node, nodes.Filter)
        and node.name == "yaml"
        and node.node is not None
        and not node.args
        and not node.kwargs
        and node.dyn_args is None
        and node.dyn_kwargs is None
    )


class _Uses:
    """Every read of a value, by path, while the chain's trees are walked.

    A loop variable stands for each entry of what the loop walks: inside `{% for c in
    containers %}`, `c["name"]` is the path (containers, EACH, name). A name a loop does not
    bind may still be one inside a block (a `scoped` block sees the loop around the place it is
    called from, and a site's block of that name is written outside any loop): such a name is
    read as the value of that name and as every loop variable of that name in the chain."""

    def __init__(self, called_blocks: frozenset[str]) -> None:
        self.called_blocks = called_blocks
        self.printed: set[ValuePath] = set()
        self.presence: set[ValuePath] = set()
        self.other: set[ValuePath] = set()
        self.yaml_not_written_whole = False
        self.loop_variables: dict[str, set[ValuePath]] = {}
        """Every path a loop binds to each name, anywhere in the chain."""
        self._scopes: list[dict[str, _Binding]] = []

    def resolve(self, expression: nodes.Node) -> list[ValuePath] | None:
        """The paths `expression` (a name with constant keys) may read; None where it is no
        such expression, [] where it reads no value (a loop's key, a literal's item)."""
        path = value_path(expression)
        if path is None:
            return None
        root = str(path[0])
        for scope in reversed(self._scopes):
            if root in scope:
                bound = scope[root]
                if isinstance(bound, _Loop):
                    return None if len(path) == 1 else _loop_attribute(bound, path[1])
                return [prefix + path[1:] for prefix in bound]
        return [path, *(prefix + path[1:] for prefix in self.loop_variables.get(root, ()))]

    def visit(self, node: nodes.Node, in_output: bool) -> None:
        if isinstance(node, (nodes.Include, nodes.Import, nodes.FromImport)):
            raise NotAnalysable("it includes or imports another template")
        if isinstance(node, nodes.Extends) and not isinstance(node.template, nodes.Const):
            raise NotAnalysable("it extends a template named by an expression")
        if isinstance(node, nodes.Name) and node.name == "super":
            raise NotAnalysable("a block prints its parent's text")
        if isinstance(node, nodes.For):
            self._visit_loop(node, in_output)
            return
        if isinstance(node, nodes.Output) and in_output:
            for child in node.nodes:
                if _encoded_whole(child):
                    self._printed(child.node, in_output)  # type: ignore[attr-defined]
                else:
                    self.visit(child, in_output)
            return
        if isinstance(node, nodes.Filter) and node.name == "yaml":
            self.yaml_not_written_whole = True  # captured, or inside a larger expression
        if (
            isinstance(node, nodes.Test)
            and node.name in _PRESENCE_TESTS
            and not node.args
            and not node.kwargs
        ):
            paths = self.resolve(node.node)
            if paths is not None:
                self.presence.update(paths)
                return
        paths = self.resolve(node)
        if paths is not None:
            self.other.update(paths)
            return
        if isinstance(node, nodes.Name) and node.ctx == "load":
            loop = self._loop(node.name)
            if loop is not None:  # `loop` itself (passed on, called): its items are read
                self.other.update((*path, EACH) for path in loop.sources)
                return
        inside_output = in_output and not isinstance(node, _CAPTURING)
        if isinstance(node, nodes.Block) and node.name in self.called_blocks:
            inside_output = False
        for inner in node.iter_child_nodes():
            self.visit(inner, inside_output)

    def _printed(self, expression: nodes.Node, in_output: bool) -> None:
        """`{{ expression | yaml }}`: the value printed whole, or each of its entries where it
        passes through filters that add entries without reading the value's own."""
        source, each = _passed_through(expression, _PRINTED_THROUGH)
        for argument in _arguments(expression, source):
            self.visit(argument, in_output)
        paths = self.resolve(source)
        if paths is None:
            self.visit(source, in_output)
        else:
            self.printed.update((*path, EACH) if each else path for path in paths)

    def _visit_loop(self, loop: nodes.For, in_output: bool) -> None:
        if loop.recursive:
            raise NotAnalysable("a recursive loop")
        source, _ = _passed_through(loop.iter, _WALKED_THROUGH)
        for argument in _arguments(loop.iter, source):
            self.visit(argument, in_output)
        paths = self.resolve(source)
        if paths is None:
            self.visit(source, in_output)
            paths = []
        pairs = isinstance(loop.iter, nodes.Filter) and loop.iter.name in _PAIRS
        scope: dict[str, _Binding] = {"loop": _Loop(paths)}
        for name, keys in _targets(loop.target, pairs):
            bound = set() if keys is None else {(*path, EACH, *keys) for path in paths}
            scope[name] = bound
            self.loop_variables.setdefault(name, set()).update(bound)
        self._scopes.append(scope)
        try:
            if loop.test is not None:
                self.visit(loop.test, in_output)
            for inner in loop.body:
                self.visit(inner, in_output)
        finally:
            self._scopes.pop()
        for inner in loop.else_:
            self.visit(inner, in_output)

    def _loop(self, name: str) -> _Loop | None:
        for scope in reversed(self._scopes):
            if name in scope:
                bound = scope[name]
                return bound if isinstance(bound, _Loop) else None
        return None


class _Loop:
    """`loop` inside a for loop over `sources`."""

    __slots__ = ("sources",)

    def __init__(self, sources: list[ValuePath]) -> None:
        self.sources = sources


_Binding = set[ValuePath] | _Loop

# What `loop.<attribute>` reads: the index and length attributes only how many items there are
# (kept in the key); any other (previtem, nextitem, changed, cycle, …) reads the items.
_LOOP_COUNTS = frozenset(
    {"index", "index0", "revindex", "revindex0", "first", "last", "length", "depth", "depth0"}
)


def _loop_attribute(loop: _Loop, attribute: str | int | None) -> list[ValuePath]:
    if attribute in _LOOP_COUNTS:
        return []
    return [(*path, EACH) for path in loop.sources]


# Filters a value passes through to `| yaml` or a loop with its entries untouched: `default`
# gives it unchanged where it is defined, `with_entries`/`with_items` add a site's entries to
# it (filters.py), `items`/`dictsort` (by key) walk it as pairs.
_PRINTED_THROUGH = {"default": False, "with_entries": True, "with_items": True}
_WALKED_THROUGH = {**_PRINTED_THROUGH, "items": False, "dictsort": False}
_PAIRS = frozenset({"items", "dictsort"})


def _passed_through(expression: nodes.Node, filters: dict[str, bool]) -> tuple[nodes.Node, bool]:
    """The value `expression` filters (through `filters` only), and whether a filter on the
    way reads it as a collection of entries (True) rather than passing it on whole."""
    each = False
    node = expression
    while (
        isinstance(node, nodes.Filter)
        and node.name in filters
        and node.node is not None
        and not node.kwargs
        and node.dyn_args is None
        and node.dyn_kwargs is None
        and not (node.name in _PAIRS and node.args)
    ):
        each = each or filters[node.name]
        node = node.node
    return node, each


def _arguments(expression: nodes.Node, source: nodes.Node) -> Iterator[nodes.Node]:
    """The arguments of the filters between `expression` and its `source`."""
    node = expression
    while node is not source:
        assert isinstance(node, nodes.Filter)
        assert node.node is not None
        yield from node.args
        node = node.node


def _targets(target: nodes.Node, pairs: bool) -> Iterator[tuple[str, ValuePath | None]]:
    """A loop's names, each with the keys that lead from an item to the value it names (None:
    a mapping's key, kept in the key, or a name the loop binds to no value's part)."""
    if pairs:
        if not (isinstance(target, nodes.Tuple) and len(target.items) == 2):
            raise NotAnalysable("a loop over pairs that does not unpack them")
        key, value = target.items
        if isinstance(key, nodes.Name):
            yield key.name, None
        else:
            raise NotAnalysable("a loop target that is not a name")
        if isinstance(value, nodes.Name):
            yield value.name, ()
        else:
            raise NotAnalysable("a loop target that is not a name")
        return
    if isinstance(target, nodes.Name):
        yield target.name, ()
        return
    if isinstance(target, nodes.Tuple) and all(isinstance(n, nodes.Name) for n in target.items):
        for index, name in enumerate(target.items):
            yield name.name, (index,)  # type: ignore[attr-defined]
        return
    raise NotAnalysable("a loop target that is not a name")


def _called_blocks(trees: Iterable[nodes.Template]) -> frozenset[str]:
    """The blocks a chain reads as text through `self.<block>()` (or `self["block"]`)."""
    called: set[nodes.Node] = set()
    for tree in trees:
        for name in tree.find_all(nodes.Name):
            if name.name != "self":
                continue
            called.add(name)
    blocks: set[str] = set()
    for tree in trees:
        for node in tree.find_all((nodes.Getattr, nodes.Getitem)):
            path = value_path(node)
            if path is not None and path[0] == "self" and len(path) == 2:
                called.discard(node.node)  # type: ignore[attr-defined]
                blocks.add(str(path[1]))
    if called:
        raise NotAnalysable("it uses `self` other than to call a block")
    return frozenset(blocks)


def _inside(short: ValuePath, long: ValuePath) -> bool:
    """`long` is `short` or a path inside it (EACH matches any one key)."""
    return len(short) <= len(long) and all(
        a == b or a is EACH or b is EACH for a, b in zip(short, long, strict=False)
    )


def _comparable(a: ValuePath, b: ValuePath) -> bool:
    """One path is the other or lies inside it."""
    return _inside(a, b) or _inside(b, a)


def analyse_chain(trees: Iterable[nodes.Template]) -> ChainAnalysis:
    """What the chain's trees (a template's and those it extends) do with their values."""
    chain = list(trees)
    try:
        for tree in chain:
            if len(list(tree.find_all(nodes.Extends))) > 1:
                raise NotAnalysable("it extends one of several templates")
        called = _called_blocks(chain)
        loop_variables: dict[str, set[ValuePath]] = {}
        while True:  # until every loop's variables are known where a block reads them
            uses = _Uses(called)
            uses.loop_variables = {name: set(paths) for name, paths in loop_variables.items()}
            for tree in chain:
                uses.visit(tree, in_output=True)
            if uses.loop_variables == loop_variables:
                break
            loop_variables = uses.loop_variables
    except NotAnalysable:
        return IN_PLACE
    if uses.yaml_not_written_whole:
        return IN_PLACE
    return ChainAnalysis(skeleton=True, printed_only=frozenset(_opaque(uses)))


def _opaque(uses: _Uses) -> Iterator[ValuePath]:
    for path in uses.printed:
        if any(_comparable(other, path) for other in uses.other):
            continue  # read some other way: the value, or part of it, shapes the output
        if any(printed != path and _comparable(printed, path) for printed in uses.printed):
            continue  # printed whole and also looked into (or inside one printed whole)
        if any(len(tested) > len(path) and _inside(path, tested) for tested in uses.presence):
            continue  # a key inside it is tested for presence
        yield path
