"""`.pre-commit-hooks.yaml` as a user's repository meets it: `pre-commit try-repo` installs
gpuconf from a clone of this working tree and runs the hooks on the example clusters."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from builders import CLUSTERS, RENDERED, REPO, load_yaml

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        importlib.util.find_spec("pre_commit") is None or shutil.which("git") is None,
        reason="needs pre-commit (the test extra) and git",
    ),
]
SKIPPED_IN_COPY = {".venv", ".git", ".mypy_cache", ".pytest_cache", ".ruff_cache", "__pycache__"}
GIT_IDENTITY = ["-c", "user.name=gpuconf tests", "-c", "user.email=tests@gpuconf.invalid"]


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *GIT_IDENTITY, *args], cwd=cwd, check=True, capture_output=True)


def _committed_copy(source: Path, target: Path, ignore: set[str] | None = None) -> Path:
    shutil.copytree(source, target, ignore=lambda _d, names: (ignore or set()) & set(names))
    _git(target, "init", "-q")
    _git(target, "add", "-A")
    _git(target, "commit", "-q", "-m", "copy")
    return target


@pytest.fixture(scope="module")
def hook_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """This working tree, committed in a fresh repository (try-repo installs from a commit)."""
    return _committed_copy(REPO, tmp_path_factory.mktemp("hooks") / "gpuconf", SKIPPED_IN_COPY)


@pytest.fixture(scope="module")
def pre_commit_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("pre-commit-home")


@pytest.fixture
def user_repo(tmp_path: Path) -> Path:
    """A user's repository holding the example clusters and their rendered tree."""
    root = tmp_path / "platform"
    root.mkdir()
    shutil.copytree(CLUSTERS, root / "clusters")
    shutil.copytree(RENDERED, root / "rendered")
    _git(root, "init", "-q")
    _git(root, "add", "-A")
    return root


def _try_repo(user_repo: Path, hook_repo: Path, home: Path) -> subprocess.CompletedProcess[str]:
    """Every hook of the repository, as `pre-commit try-repo` runs them: installed from scratch."""
    return subprocess.run(
        [sys.executable, "-m", "pre_commit", "try-repo", str(hook_repo), "--all-files"],
        cwd=user_repo,
        env={**os.environ, "PRE_COMMIT_HOME": str(home), "PRE_COMMIT_COLOR": "never"},
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


def test_the_hooks_are_the_two_checks_ci_needs_and_the_formatter() -> None:
    hooks = load_yaml((REPO / ".pre-commit-hooks.yaml").read_bytes())
    assert {h["id"]: h["entry"] for h in hooks} == {
        "gpuconf-validate": "gpuconf validate",
        "gpuconf-render-check": "gpuconf render --check",
        "gpuconf-fmt": "gpuconf fmt",
    }


def test_the_hooks_pass_on_the_example_clusters(
    user_repo: Path, hook_repo: Path, pre_commit_home: Path
) -> None:
    ran = _try_repo(user_repo, hook_repo, pre_commit_home)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert ran.stdout.count("Passed") == 3


def test_the_hooks_fail_on_a_mistake_with_the_located_diagnostic(
    user_repo: Path, hook_repo: Path, pre_commit_home: Path
) -> None:
    lab = user_repo / "clusters" / "lab.yaml"
    lab.write_text(
        lab.read_text().replace("model: Tesla-T4\n        count", "model: Tesla-T5\n        count")
    )
    ran = _try_repo(user_repo, hook_repo, pre_commit_home)
    assert ran.returncode == 1
    assert ran.stdout.count("Failed") == 3
    diagnostic = (
        "clusters/lab.yaml:17:9: spec.nodePools[0].gpus.model: unknown GPU model 'Tesla-T5'"
    )
    assert ran.stdout.count(diagnostic) == 3


def test_the_fmt_hook_reindents_a_file_and_keeps_its_comments(
    user_repo: Path, hook_repo: Path, pre_commit_home: Path
) -> None:
    lab = user_repo / "clusters" / "lab.yaml"
    canonical = lab.read_text()
    lab.write_text(canonical.replace("\n  ", "\n    "))  # four-space indents
    ran = _try_repo(user_repo, hook_repo, pre_commit_home)
    assert ran.returncode == 1
    assert "files were modified by this hook" in ran.stdout
    assert lab.read_text() == canonical
