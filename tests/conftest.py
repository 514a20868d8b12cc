"""Shared fixtures: the repository's example clusters, compiled once in memory."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="session")
def compiled_examples():  # type: ignore[no-untyped-def]
    """Every example in clusters/, compiled in memory from the repository root."""
    from gpuconf.compiler.pipeline import compile_paths

    compiled = compile_paths([REPO / "clusters"], relative_to=REPO)
    assert compiled.ok, [d.as_text() for d in compiled.diagnostics]
    return compiled
