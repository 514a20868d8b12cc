"""Random mutations of the examples give diagnostics or a clean render: never a traceback,
never an internal error, never a half-written output folder."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest
from builders import CLUSTERS, EXAMPLES, read_tree, run_cli
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from ruamel.yaml import YAML

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
    data = YAML(typ="safe", pure=True).load((CLUSTERS / f"{name}.yaml").read_text("utf-8"))
    for _ in range(draw(st.integers(1, 3))):
        paths = [p for p in _paths(data) if p]
        path = draw(st.sampled_from(paths))
        parent, key = _parent(data, path), path[-1]
        action = draw(st.sampled_from(["drop", "replace", "retype", "inject", "number", "add"]))
        if action == "drop":
            del parent[key]
        elif action == "replace":
            parent[key] = draw(VALUES)
        elif action == "retype":
            parent[key] = _retyped(parent[key])
        elif action == "inject":
            parent[key] = draw(st.sampled_from(NASTY_STRINGS))
        elif action == "number":
            parent[key] = draw(st.sampled_from([0, -1, 1, 2, 63, 64, 65, 10**9, 1.5]))
        elif isinstance(parent[key], dict):
            parent[key][draw(st.sampled_from(["extra", "replicas", "name", "a: b"]))] = draw(VALUES)
    return name, data


@pytest.fixture(scope="module")
def previous_output(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An output folder as a previous render left it."""
    out = tmp_path_factory.mktemp("previous")
    assert run_cli("render", "clusters", "-o", str(out), cwd=CLUSTERS.parent).code == 0
    return out


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
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        (root / "clusters").mkdir()
        with open(root / "clusters" / f"{name}.yaml", "w", encoding="utf-8") as handle:
            YAML(typ="safe", pure=True).dump(data, handle)
        out = root / "rendered"
        shutil.copytree(previous_output, out)
        before = read_tree(out)
        result = run_cli("render", f"clusters/{name}.yaml", "-o", "rendered", cwd=root)
        assert result.code in (0, 1), result.err
        assert "Traceback" not in result.err
        assert "internal error" not in result.err
        if result.code == 1:
            assert result.err.strip(), "exit 1 without a diagnostic"
            assert read_tree(out) == before
        assert not [p for p in out.iterdir() if p.name.startswith(".gpuconf-staging-")]
