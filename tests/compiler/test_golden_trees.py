"""Every example renders to exactly the tree committed under rendered/<cluster>/."""

from __future__ import annotations

import difflib

import pytest
from compiler_support import EXAMPLES, RENDERED, read_tree


def _diff(name: str, committed: dict[str, bytes], fresh: dict[str, bytes]) -> str:
    lines: list[str] = []
    for path in sorted(set(committed) | set(fresh)):
        old, new = committed.get(path), fresh.get(path)
        if old == new:
            continue
        lines += difflib.unified_diff(
            (old or b"").decode("utf-8", "replace").splitlines(keepends=True),
            (new or b"").decode("utf-8", "replace").splitlines(keepends=True),
            fromfile=f"rendered/{name}/{path}" if old is not None else "/dev/null",
            tofile=f"fresh/{name}/{path}" if new is not None else "/dev/null",
        )
    return "".join(lines)


@pytest.mark.parametrize("name", EXAMPLES)
def test_example_renders_to_the_committed_tree(name: str, compiled_examples) -> None:  # type: ignore[no-untyped-def]
    fresh = compiled_examples.rendered[name]
    committed = read_tree(RENDERED / name)
    diff = _diff(name, committed, fresh)
    if diff:
        pytest.fail(f"rendered/{name} is stale (run `make render`):\n{diff}", pytrace=False)


def test_no_rendered_folder_without_an_example() -> None:
    folders = sorted(p.name for p in RENDERED.iterdir() if p.is_dir())
    assert folders == EXAMPLES


def test_every_rendered_file_ends_with_one_newline_and_has_no_crlf(compiled_examples) -> None:  # type: ignore[no-untyped-def]
    for name, tree in compiled_examples.rendered.items():
        for path, data in tree.items():
            assert data.endswith(b"\n"), f"{name}/{path}"
            assert b"\r\n" not in data, f"{name}/{path}"
