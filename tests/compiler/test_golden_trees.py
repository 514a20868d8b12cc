"""Every example renders to exactly the tree committed under rendered/<cluster>/."""

from __future__ import annotations

import pytest
from builders import EXAMPLES, RENDERED

from gpuconf.compiler import emit


@pytest.mark.parametrize("name", EXAMPLES)
def test_example_renders_to_the_committed_tree(name: str, compiled_examples) -> None:  # type: ignore[no-untyped-def]
    fresh = {name: compiled_examples.rendered[name]}
    diff = "".join(emit.diff(RENDERED, fresh, prune=False))
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
