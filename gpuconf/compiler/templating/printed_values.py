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

The reading is conservative: any use it does not recognise makes the value, and every path
through it, part of the key; a chain that reaches outside what it names (`include`, `import`,
`super()`, an `extends` of a computed name or more than one `extends` in a file) is rendered
in place, values and all.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from jinja2 import nodes

from gpuconf.compiler.templating.chain_analysis import IN_PLACE, ChainAnalysis, ValuePath

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
    def __init__(self, called_blocks: frozenset[str]) -> None:
        self.called_blocks = called_blocks
        self.printed: set[ValuePath] = set()
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
                if path is None:
                    self.visit(child.node, in_output)  # type: ignore[attr-defined]
                else:
                    self.printed.add(path)
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
    return ChainAnalysis(skeleton=True, printed_only=frozenset(_opaque(uses)))


def _opaque(uses: _Uses) -> Iterator[ValuePath]:
    for path in uses.printed:
        if any(_comparable(other, path) for other in uses.other):
            continue  # read some other way: the value, or part of it, shapes the output
        if any(printed != path and _comparable(printed, path) for printed in uses.printed):
            continue  # printed whole and also looked into (or inside one printed whole)
        if any(len(tested) > len(path) and tested[: len(path)] == path for tested in uses.presence):
            continue  # a key inside it is tested for presence
        yield path
