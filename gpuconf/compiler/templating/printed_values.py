"""What a template chain does with its values, read from its syntax trees.

Two questions, both for the whole chain (a template and those it extends):

- Whether it may be rendered as a skeleton: with a token where each `| yaml` value stands,
  parsed back and filled with the values (render.py). Only where every `| yaml` is the whole
  of an expression written to the output: text captured from one (`{% set %}` blocks, macros,
  calls, a block read as `self.<block>()`) or a `| yaml` inside a larger expression would hold
  the token, not the value, and whatever the template did with that text would be wrong.
- Which values it only prints whole: a value at a path such as `meta["name"]` used nowhere but
  as the whole of a `{{ meta["name"] | yaml }}` in the output, or in an `is defined` test,
  cannot change what the template writes around it, only the token that stands for it. So
  too a value only printed through one of DERIVABLE_FILTERS, `{{ labels | with_labels(
  self.extra_labels(), selector) | yaml }}` (labels and selector): the token's value is the
  filter's result, worked out again from each artifact's own values. And a mapping only
  iterated as `{% for key, value in pod | items %}`, each `value` only printed whole, shapes
  the output by its keys alone. Such values (a mapping's values) are what skeleton_memo.py
  leaves out of its key; everything else is in the key.

The reading is conservative: any use it does not recognise makes the value, and every path
through it, part of the key; a chain that reaches outside what it names (`include`, `import`,
`super()`, an `extends` of a computed name or more than one `extends` in a file) is rendered
in place, values and all.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from jinja2 import nodes

from gpuconf.compiler.templating.chain_analysis import (
    DERIVABLE_FILTERS,
    IN_PLACE,
    KEY_BLIND_FILTERS,
    ChainAnalysis,
    ValuePath,
)

# `x.items` on a mapping is its method, not its "items" entry: such an attribute is not a key.
_METHODS = frozenset(
    name for kind in (dict, list, tuple, str, int, float, bool, type(None)) for name in dir(kind)
)
# Output written into a variable, a macro's or a call's text, or a block that `self.<name>()`
# returns as text: what it prints is data to the template, not the output. ({% filter %} blocks
# are refused before a tree gets here.)
_CAPTURING = (nodes.AssignBlock, nodes.Macro, nodes.CallBlock)
_PRESENCE_TESTS = frozenset({"defined", "undefined"})
# `loop` attributes that say where a loop is, never what its other items hold (`previtem`,
# `nextitem`, `changed(…)` do).
_LOOP_POSITION = frozenset(
    {
        "index",
        "index0",
        "revindex",
        "revindex0",
        "first",
        "last",
        "length",
        "depth",
        "depth0",
        "cycle",
    }
)
_LOOP_ITEMLESS = frozenset((name,) for name in _LOOP_POSITION)
_ITEMS_FILTERS = frozenset({"items", "dictsort"})


class NotAnalysable(Exception):
    """The chain reads values in a way this module does not follow."""


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


def _bare_filter(node: nodes.Node, names: frozenset[str]) -> bool:
    """`expression | name(…)` for one of `names`, with positional arguments only."""
    return (
        isinstance(node, nodes.Filter)
        and node.name in names
        and node.node is not None
        and not node.kwargs
        and node.dyn_args is None
        and node.dyn_kwargs is None
    )


def _encoded_whole(node: nodes.Node) -> bool:
    """`{{ expression | yaml }}`: an expression encoded, the filter outermost and bare."""
    return _bare_filter(node, frozenset({"yaml"})) and not node.args  # type: ignore[attr-defined]


def _items_loop(node: nodes.For) -> tuple[ValuePath, str, nodes.Filter | None] | None:
    """`for key, value in mapping | items` (or `| dictsort`, or `mapping | with_entries(…)`
    first): the mapping's path, the value's name, and the key-blind filter (if any)."""
    target, iterated = node.target, node.iter
    if (
        node.recursive
        or not isinstance(target, nodes.Tuple)
        or len(target.items) != 2
        or not all(isinstance(name, nodes.Name) for name in target.items)
        or not _bare_filter(iterated, _ITEMS_FILTERS)
        or iterated.args  # type: ignore[attr-defined]
    ):
        return None
    mapping = iterated.node  # type: ignore[attr-defined]
    blind = None
    if _bare_filter(mapping, KEY_BLIND_FILTERS):
        blind, mapping = mapping, mapping.node
    path = value_path(mapping)
    if path is None:
        return None
    return path, target.items[1].name, blind  # type: ignore[attr-defined]


class _Uses:
    def __init__(self, called_blocks: frozenset[str]) -> None:
        self.called_blocks = called_blocks
        self.printed: set[ValuePath] = set()
        self.derived: set[ValuePath] = set()
        """Paths given to one of DERIVABLE_FILTERS whose result is printed whole."""
        self.keyed: dict[ValuePath, set[str]] = {}
        """Mappings iterated by `_items_loop`, with the names their values take."""
        self.presence: set[ValuePath] = set()
        self.other: set[ValuePath] = set()
        self.yaml_not_written_whole = False

    def visit(self, node: nodes.Node, in_output: bool) -> None:
        if isinstance(node, (nodes.Include, nodes.Import, nodes.FromImport)):
            raise NotAnalysable("it includes or imports another template")
        if isinstance(node, nodes.Extends) and not isinstance(node.template, nodes.Const):
            raise NotAnalysable("it extends a template named by an expression")
        if isinstance(node, nodes.Name) and node.name == "super":
            raise NotAnalysable("a block prints its parent's text")
        if isinstance(node, nodes.Output) and in_output:
            for child in node.nodes:
                if not _encoded_whole(child):
                    self.visit(child, in_output)
                    continue
                path = value_path(child.node)  # type: ignore[attr-defined]
                if path is not None:
                    self.printed.add(path)
                elif not self._derived(child.node, in_output):  # type: ignore[attr-defined]
                    self.visit(child.node, in_output)  # type: ignore[attr-defined]
            return
        if isinstance(node, nodes.For):
            loop = _items_loop(node)
            if loop is not None:
                path, value_name, blind = loop
                self.keyed.setdefault(path, set()).add(value_name)
                for argument in blind.args if blind is not None else ():
                    self.visit(argument, in_output)
                for part in (node.test, *node.body, *node.else_):
                    if part is not None:
                        self.visit(part, in_output)
                return
        if isinstance(node, nodes.Filter) and node.name == "yaml":
            self.yaml_not_written_whole = True  # captured, or inside a larger expression
        if (
            isinstance(node, nodes.Test)
            and node.name in _PRESENCE_TESTS
            and not node.args
            and not node.kwargs
        ):
            path = value_path(node.node)
            if path is not None:
                self.presence.add(path)
                return
        path = value_path(node)
        if path is not None:
            self.other.add(path)
            return
        inside_output = in_output and not isinstance(node, _CAPTURING)
        if isinstance(node, nodes.Block) and node.name in self.called_blocks:
            inside_output = False
        for inner in node.iter_child_nodes():
            self.visit(inner, inside_output)

    def _derived(self, node: nodes.Node, in_output: bool) -> bool:
        """`value | filter(…)` with a DERIVABLE filter, printed whole: the value and the
        arguments that are values are derived; any other argument is read."""
        if not _bare_filter(node, DERIVABLE_FILTERS):
            return False
        path = value_path(node.node)  # type: ignore[attr-defined]
        if path is None:
            return False
        self.derived.add(path)
        for argument in node.args:  # type: ignore[attr-defined]
            found = value_path(argument)
            if found is None:
                self.visit(argument, in_output)
            else:
                self.derived.add(found)
        return True


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


def _comparable(a: ValuePath, b: ValuePath) -> bool:
    """One path is the other or lies inside it."""
    return a[: len(b)] == b or b[: len(a)] == a


def analyse_chain(trees: Iterable[nodes.Template]) -> ChainAnalysis:
    """What the chain's trees (a template's and those it extends) do with their values."""
    chain = list(trees)
    try:
        for tree in chain:
            if len(list(tree.find_all(nodes.Extends))) > 1:
                raise NotAnalysable("it extends one of several templates")
        uses = _Uses(_called_blocks(chain))
        for tree in chain:
            uses.visit(tree, in_output=True)
    except NotAnalysable:
        return IN_PLACE
    if uses.yaml_not_written_whole:
        return IN_PLACE
    opaque = frozenset(_opaque(uses))
    return ChainAnalysis(
        skeleton=True, printed_only=opaque, keys_only=frozenset(_keys_only(uses, opaque))
    )


def _opaque(uses: _Uses) -> Iterator[ValuePath]:
    printed = uses.printed | uses.derived
    for path in printed:
        if any(_comparable(other, path) for other in uses.other):
            continue  # read some other way: the value, or part of it, shapes the output
        if any(_comparable(other, path) for other in uses.keyed):
            continue  # iterated, or inside what is
        if any(whole != path and _comparable(whole, path) for whole in printed):
            continue  # printed whole and also looked into (or inside one printed whole)
        if any(len(tested) > len(path) and tested[: len(path)] == path for tested in uses.presence):
            continue  # a key inside it is tested for presence
        yield path


def _keys_only(uses: _Uses, opaque: frozenset[ValuePath]) -> Iterator[ValuePath]:
    seen = uses.other | uses.printed | uses.derived | uses.presence
    if any(path[0] == "loop" and path[1:2] not in _LOOP_ITEMLESS for path in seen):
        return  # some loop's other items are read: a value may shape the output
    for path, value_names in uses.keyed.items():
        if any((name,) not in opaque for name in value_names):
            continue  # a value is read, not only printed whole
        if any(_comparable(other, path) for other in seen):
            continue  # the mapping, or what it holds, is used some other way too
        if any(other != path and _comparable(other, path) for other in uses.keyed):
            continue
        yield path
