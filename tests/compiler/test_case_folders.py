"""Data-driven cases: each negative case gives exactly its expected diagnostics; each positive case renders."""

from __future__ import annotations

from pathlib import Path

import pytest
from builders import CASES, read_tree, run_cli

NEGATIVE = sorted(p for p in (CASES / "negative").iterdir() if p.is_dir())
POSITIVE = sorted(p for p in (CASES / "positive").iterdir() if p.is_dir())


def _expected(case: Path) -> str:
    expected = case / "expected.txt"
    return expected.read_text(encoding="utf-8") if expected.is_file() else ""


@pytest.mark.parametrize("case", NEGATIVE, ids=[p.name for p in NEGATIVE])
def test_negative_case_reports_exactly_the_expected_diagnostics(case: Path) -> None:
    result = run_cli("validate", "cluster.yaml", cwd=case)
    assert result.code == 1
    assert result.err == _expected(case)
    assert result.out == ""


@pytest.mark.parametrize("case", NEGATIVE, ids=[p.name for p in NEGATIVE])
def test_negative_case_writes_nothing(case: Path, tmp_path: Path) -> None:
    result = run_cli("render", "cluster.yaml", "-o", str(tmp_path / "out"), cwd=case)
    assert result.code == 1
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("case", POSITIVE, ids=[p.name for p in POSITIVE])
def test_positive_case_renders_cleanly(case: Path, tmp_path: Path) -> None:
    result = run_cli("render", "cluster.yaml", "-o", str(tmp_path), cwd=case)
    assert result.code == 0, result.err
    assert result.err == _expected(case)
    (cluster,) = [p for p in tmp_path.iterdir() if p.is_dir()]
    tree = read_tree(cluster)
    assert "kustomization.yaml" in tree
    assert "README.md" in tree


def test_there_are_enough_cases() -> None:
    assert len(NEGATIVE) >= 25
    assert all((case / "expected.txt").is_file() for case in NEGATIVE)
