"""Same input, same bytes: whatever PYTHONHASHSEED, whatever the order of keys in the input."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from builders import CLUSTERS, EXAMPLES, REPO, compile_folder, read_tree
from ruamel.yaml import YAML


@pytest.mark.slow
def test_renders_with_different_hash_seeds_are_identical(tmp_path: Path) -> None:
    trees = []
    for seed in ("1", "4242"):
        out = tmp_path / f"seed-{seed}"
        env = {**os.environ, "PYTHONHASHSEED": seed}
        subprocess.run(
            [sys.executable, "-m", "gpuconf", "render", "clusters", "-o", str(out)],
            cwd=REPO,
            env=env,
            check=True,
            capture_output=True,
            timeout=120,
        )
        trees.append(read_tree(out))
    assert trees[0] == trees[1]
    assert trees[0]


def _reversed(node: Any) -> Any:
    if isinstance(node, dict):
        return {k: _reversed(node[k]) for k in reversed(list(node))}
    if isinstance(node, list):
        return [_reversed(v) for v in node]
    return node


@pytest.mark.parametrize("name", EXAMPLES)
def test_reordered_input_keys_give_identical_output(
    name: str,
    tmp_path: Path,
    compiled_examples,  # type: ignore[no-untyped-def]
) -> None:
    yaml = YAML(typ="safe", pure=True)
    data = yaml.load((CLUSTERS / f"{name}.yaml").read_text(encoding="utf-8"))
    (tmp_path / "clusters").mkdir()
    with open(tmp_path / "clusters" / f"{name}.yaml", "w", encoding="utf-8") as handle:
        yaml.dump(_reversed(data), handle)
    compiled = compile_folder(tmp_path, "clusters")
    assert compiled.ok
    assert compiled.rendered[name] == compiled_examples.rendered[name]
