"""`gpuconf migrate` rewrites older forms into the current one without changing what a file
means (it renders to the same tree), keeps comments, and a second run changes nothing."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from builders import REPO, run_cli

from gpuconf.compiler.pipeline import compile_paths

EXAMPLES = sorted((REPO / "clusters").glob("*.yaml"))
SINGLE_LAYOUT = """\
apiVersion: gpuconf.dev/v1alpha1
kind: Cluster
metadata: {name: mig-lab}
spec:
  kubernetes: {version: "1.34"}
  nodePools:
    - name: a100
      gpus: {model: A100-SXM4-80GB, count: 8}
      size: 2
      runtime: {engine: containerd}
      sharing:
        # Seven small instances per GPU for notebooks.
        strategy: mig
        layout: all-1g.10gb   # one profile everywhere
  resourceClasses:
    - name: small
      select: {migProfile: 1g.10gb}
"""


@pytest.fixture(scope="module")
def migrated_examples(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("migrated")
    shutil.copytree(REPO / "clusters", folder / "clusters")
    result = run_cli("migrate", cwd=folder)
    assert result.code == 0, result.err
    return folder


def test_migrated_examples_render_to_the_same_trees(migrated_examples: Path) -> None:
    before = compile_paths([REPO / "clusters"], relative_to=REPO)
    after = compile_paths([migrated_examples / "clusters"], relative_to=migrated_examples)
    assert after.ok
    assert after.rendered == before.rendered


def test_migrate_changes_only_the_single_layouts_and_a_second_run_nothing(
    migrated_examples: Path,
) -> None:
    changed = sorted(
        p.name
        for p in EXAMPLES
        if p.read_text() != (migrated_examples / "clusters" / p.name).read_text()
    )
    assert changed == ["dra-lab.yaml", "mig-nvidia.yaml", "mig.yaml"]
    again = run_cli("migrate", "--check", cwd=migrated_examples)
    assert (again.code, again.out) == (0, "")


def test_migrate_keeps_the_comments_of_the_moved_layout_in_their_column(tmp_path: Path) -> None:
    file = tmp_path / "mig-lab.yaml"
    file.write_text(SINGLE_LAYOUT)
    check = run_cli("migrate", "--check", "mig-lab.yaml", cwd=tmp_path)
    assert check.code == 1
    assert file.read_text() == SINGLE_LAYOUT
    result = run_cli("migrate", "mig-lab.yaml", cwd=tmp_path)
    assert result.code == 0, result.err
    assert result.err == (
        "mig-lab.yaml: pool-mig-sharing-as-list: spec.nodePools[0].sharing: one MIG layout → a list of one\n"
    )
    assert file.read_text() == SINGLE_LAYOUT.replace(
        """\
      sharing:
        # Seven small instances per GPU for notebooks.
        strategy: mig
        layout: all-1g.10gb   # one profile everywhere
""",
        """\
      sharing:
        # Seven small instances per GPU for notebooks.
        - strategy: mig
          layout: all-1g.10gb # one profile everywhere
""",
    )
