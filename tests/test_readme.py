"""The README as typed: its set-up commands, then every quick-start command in a fresh shell,
from a copy of the repository, printing exactly what the README shows."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from builders import CLUSTERS, REPO, load_yaml

README = (REPO / "README.md").read_text(encoding="utf-8")
SKIPPED_IN_COPY = {
    ".venv",
    ".venv-latest",
    ".git",
    ".mypy_cache",
    ".pytest_cache",
    ".ruff_cache",
    "__pycache__",
}
CLEAN_ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8"}


@dataclass(frozen=True)
class ConsoleCommand:
    command: str
    output: list[str]


def _section(title: str) -> str:
    start = README.index(f"\n## {title}\n")
    end = README.find("\n## ", start + 1)
    return README[start : end if end != -1 else None]


def _blocks(text: str, language: str) -> list[str]:
    return re.findall(rf"^```{language}\n(.*?)^```$", text, flags=re.M | re.S)


def setup_commands() -> list[str]:
    """The set-up every shell needs, comments stripped: the README's sh block above the first
    section that runs `make venv` (the block before it shows `make render` and `make test`)."""
    (block,) = [b for b in _blocks(README[: README.index("\n## ")], "sh") if "make venv" in b]
    return [line.split("#", 1)[0].strip() for line in block.splitlines() if line.strip()]


def quick_start_commands() -> list[ConsoleCommand]:
    commands: list[ConsoleCommand] = []
    for block in _blocks(_section("Quick start"), "console"):
        for line in block.splitlines():
            if line.startswith("$ "):
                commands.append(ConsoleCommand(line[2:], []))
            else:
                commands[-1].output.append(line)
    return commands


@pytest.fixture(scope="module")
def fresh_clone(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The working tree as a user's clone has it, sharing this checkout's virtual environment
    (making one takes minutes; `make venv` then finds it up to date)."""
    # The environment running this suite: .venv, or .venv-latest under `make test-latest`.
    venv = Path(sys.prefix)
    if not (venv / ".installed").exists():
        pytest.skip(f"{venv} was not set up by make: run make venv")
    clone = tmp_path_factory.mktemp("clone") / "gpuconf"
    shutil.copytree(REPO, clone, ignore=lambda _d, names: SKIPPED_IN_COPY & set(names))
    (clone / ".venv").symlink_to(venv)
    # make compares times: a pyproject.toml or lock edited since this checkout's set-up is not
    # the clone's business (this suite runs on the checkout's environment either way).
    installed = (venv / ".installed").stat().st_mtime_ns
    for prerequisite in [clone / "pyproject.toml", *(clone / "requirements").glob("*.lock")]:
        if prerequisite.stat().st_mtime_ns > installed:
            os.utime(prerequisite, ns=(installed, installed))
    return clone


def _fresh_shell(clone: Path, command: str) -> subprocess.CompletedProcess[str]:
    script = "\n".join(["set -e", *(f"{c} >/dev/null" for c in setup_commands()), command])
    return subprocess.run(
        ["bash", "--noprofile", "--norc", "-c", script],
        cwd=clone,
        env={**CLEAN_ENV, "HOME": str(clone.parent)},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=120,
        check=False,
    )


def test_the_readme_sets_up_a_shell_where_gpuconf_is_on_path() -> None:
    assert setup_commands() == ["make venv", ". .venv/bin/activate"]


@pytest.mark.slow
@pytest.mark.parametrize("step", quick_start_commands(), ids=lambda step: step.command)
def test_quick_start_command_prints_what_the_readme_shows(
    fresh_clone: Path, step: ConsoleCommand
) -> None:
    ran = _fresh_shell(fresh_clone, step.command)
    assert ran.returncode == 0, ran.stdout
    assert ran.stdout.splitlines() == step.output


def test_the_quick_start_runs_validate_explain_and_render() -> None:
    words = [step.command.split()[:2] for step in quick_start_commands()]
    assert ["gpuconf", "validate"] in words
    assert ["gpuconf", "explain"] in words
    assert ["gpuconf", "render"] in words


def test_the_cluster_file_in_the_readme_is_clusters_lab_yaml() -> None:
    shown = next(b for b in _blocks(_section("Quick start"), "yaml") if "kind: Cluster" in b)
    assert load_yaml(shown) == load_yaml((CLUSTERS / "lab.yaml").read_text(encoding="utf-8"))
