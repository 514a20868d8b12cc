"""Random mutations of the examples give diagnostics or a clean render: never a traceback,
never an internal error, never a half-written output folder."""

from __future__ import annotations

import copy
import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from builders import CLUSTERS, EXAMPLES, read_tree, run_cli
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

Path_ = tuple[str | int, ...]

NASTY_STRINGS = [
    "a: b\n  evil: 1",
    "{{ .Values.x }}",
    'it\'s "quoted"',
    "",
    " ",
    "UPPER",
    "x" * 300,
    "GPU-zzzz",
    "1.3",
    "-1",
    "nvidia.com/gpu",
    "ümlaut",
    "null",
    "*alias",
    "&anchor",
    "40Gi",
    "mig",
]
VALUES = st.one_of(
    st.sampled_from(NASTY_STRINGS),
    st.text(max_size=20),
    st.integers(-(2**40), 2**40),
    st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(),
    st.none(),
    st.just([]),
    st.just({}),
    st.just([{"name": "x"}]),
    st.just({"unknown": 1}),
)


def _paths(node: Any, here: Path_ = ()) -> list[Path_]:
    found = [here]
    if isinstance(node, dict):
        for key, value in node.items():
            found += _paths(value, (*here, key))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            found += _paths(value, (*here, index))
    return found


def _parent(data: Any, path: Path_) -> Any:
    for part in path[:-1]:
        data = data[part]
    return data


def _retyped(value: Any) -> Any:
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, str):
        return int(value) if value.isdigit() else [value]
    if isinstance(value, list):
        return {"items": value}
    if isinstance(value, dict):
        return list(value.values())
    return "null"


@st.composite
def mutated_examples(draw: st.DrawFn) -> tuple[str, Any]:
    name = draw(st.sampled_from(EXAMPLES))
    data = yaml.safe_load((CLUSTERS / f"{name}.yaml").read_text("utf-8"))
    for _ in range(draw(st.integers(1, 3))):
        paths = [p for p in _paths(data) if p]
        path = draw(st.sampled_from(paths))
        parent, key = _parent(data, path), path[-1]
        action = draw(st.sampled_from(["drop", "replace", "retype", "inject", "number", "add"]))
        if action == "drop":
            del parent[key]
        elif action == "replace":
            parent[key] = copy.deepcopy(draw(VALUES))
        elif action == "retype":
            parent[key] = _retyped(parent[key])
        elif action == "inject":
            parent[key] = draw(st.sampled_from(NASTY_STRINGS))
        elif action == "number":
            parent[key] = draw(st.sampled_from([0, -1, 1, 2, 63, 64, 65, 10**9, 1.5]))
        elif isinstance(parent[key], dict):
            parent[key][draw(st.sampled_from(["extra", "replicas", "name", "a: b"]))] = (
                copy.deepcopy(draw(VALUES))
            )
    return name, data


# Text-level damage a parser meets: tags, merge keys, numbers past every limit, bytes YAML
# forbids, keys with line breaks, reused anchors, nesting without end.
TEXT_DAMAGE = [
    ("insert", "!!omap "),
    ("insert", "!!python/tuple "),
    ("insert", "!!binary "),
    ("insert", "!custom "),
    ("insert", "!!set "),
    ("insert", "<<: {a: 1}\n"),
    ("insert", "9" * 5000),
    ("insert", str(2**63)),
    ("insert", "-" + str(2**63 + 1)),
    ("insert", "\x00"),
    ("insert", "\x07"),
    ("insert", "\ufeff"),
    ("insert", '"a\\nb": 1\n'),
    ("insert", "&x "),
    ("insert", "*x "),
    ("insert", "[" * 3000),
    ("insert", "{" * 3000),
    ("insert", "- " * 500),
    ("insert", "---\n"),
    ("insert", "? "),
    ("insert", "\t"),
    ("insert", "'"),
    ("insert", "&x [*x]"),
    ("delete", ""),
]


@st.composite
def damaged_text(draw: st.DrawFn) -> tuple[str, str]:
    name, data = draw(mutated_examples())
    text = yaml.safe_dump(data, sort_keys=False)
    for _ in range(draw(st.integers(0, 2))):
        action, fragment = draw(st.sampled_from(TEXT_DAMAGE))
        at = draw(st.integers(0, len(text)))
        if action == "delete":
            text = text[:at] + text[at + draw(st.integers(1, 40)) :]
        else:
            text = text[:at] + fragment + text[at:]
    return name, text


def _scratch() -> tempfile.TemporaryDirectory[str]:
    """Hundreds of throwaway output trees: in memory where the machine offers a tmpfs."""
    memory = Path("/dev/shm")
    return tempfile.TemporaryDirectory(dir=memory if os.access(memory, os.W_OK) else None)


def _link_copy(source: Path, target: Path) -> None:
    """A copy made of hard links: cheap, and safe because gpuconf replaces files, never edits."""
    shutil.copytree(source, target, copy_function=os.link)


@pytest.fixture(scope="module")
def previous_output() -> Iterator[Path]:
    """An output folder as a previous render left it."""
    with _scratch() as folder:
        out = Path(folder) / "previous"
        assert run_cli("render", "clusters", "-o", str(out), cwd=CLUSTERS.parent).code == 0
        yield out


DIAGNOSTIC_LINE = re.compile(r"^clusters/[a-z-]+\.yaml:\d+:\d+: \S")


@pytest.mark.slow
@settings(
    max_examples=100,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(example=damaged_text())
def test_damaged_cluster_text_gives_located_diagnostics_or_a_clean_render(
    example: tuple[str, str], previous_output: Path
) -> None:
    name, text = example
    with _scratch() as folder:
        root = Path(folder)
        (root / "clusters").mkdir()
        (root / "clusters" / f"{name}.yaml").write_bytes(text.encode("utf-8", "surrogatepass"))
        out = root / "rendered"
        _link_copy(previous_output, out)
        before = read_tree(out)
        result = run_cli("render", f"clusters/{name}.yaml", "-o", "rendered", cwd=root)
        assert result.code in (0, 1), result.err
        *diagnostics, summary = result.err.splitlines() or [""]
        assert all(DIAGNOSTIC_LINE.match(line) for line in diagnostics), result.err
        if result.code == 1:
            assert re.fullmatch(r"\d+ errors?, \d+ warnings?", summary), result.err
            assert diagnostics, "exit 1 without a diagnostic"
            assert read_tree(out) == before
        else:
            assert summary == "" or re.fullmatch(r"0 errors, \d+ warnings?", summary), result.err
        assert not [p for p in out.iterdir() if p.name.startswith(".gpuconf-staging-")]


@pytest.mark.slow
@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(example=mutated_examples())
def test_mutated_cluster_gives_a_diagnostic_or_a_clean_render(
    example: tuple[str, Any], previous_output: Path
) -> None:
    name, data = example
    with _scratch() as folder:
        root = Path(folder)
        (root / "clusters").mkdir()
        with open(root / "clusters" / f"{name}.yaml", "w", encoding="utf-8") as handle:
            yaml.safe_dump(data, handle)
        out = root / "rendered"
        _link_copy(previous_output, out)
        before = read_tree(out)
        result = run_cli("render", f"clusters/{name}.yaml", "-o", "rendered", cwd=root)
        assert result.code in (0, 1), result.err
        assert "Traceback" not in result.err
        assert "internal error" not in result.err
        if result.code == 1:
            assert result.err.strip(), "exit 1 without a diagnostic"
            assert read_tree(out) == before
        assert not [p for p in out.iterdir() if p.name.startswith(".gpuconf-staging-")]
