"""A bare string in gpuconf/node is a docstring: the first statement of a module, class or
function, or right after the assignment it describes. Anywhere else it documents nothing,
as a leftover of moved code does."""

from __future__ import annotations

import ast
from pathlib import Path

import gpuconf.node

NODE = Path(gpuconf.node.__file__).parent


def _is_string(statement: ast.stmt) -> bool:
    return (
        isinstance(statement, ast.Expr)
        and isinstance(statement.value, ast.Constant)
        and isinstance(statement.value.value, str)
    )


def _stray_strings(tree: ast.Module) -> list[int]:
    stray = []
    for scope in ast.walk(tree):
        if not isinstance(
            scope, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef
        ):
            continue
        for before, statement in zip(scope.body, scope.body[1:], strict=False):
            if _is_string(statement) and not isinstance(before, ast.Assign | ast.AnnAssign):
                stray.append(statement.lineno)
    return stray


def test_every_bare_string_in_the_node_runtime_documents_what_it_follows() -> None:
    found = {
        f"{path.relative_to(NODE)}:{line}"
        for path in sorted(NODE.rglob("*.py"))
        for line in _stray_strings(ast.parse(path.read_text(), str(path)))
    }
    assert not found


def test_a_string_left_after_the_imports_is_stray() -> None:
    tree = ast.parse('"""Doc."""\nimport os\n\n"""Left over."""\nX = 1\n"""What X is."""\n')
    assert _stray_strings(tree) == [4]
