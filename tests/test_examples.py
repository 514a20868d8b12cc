"""The examples a user copies into their own repository: CI workflow, problem matcher,
pre-commit config and a starter cluster file whose modeline names the published schema."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest
from builders import CASES, REPO, load_yaml, run_cli

from gpuconf import __version__
from gpuconf.cli import build_parser

EXAMPLES = REPO / "examples"
PUBLISHED_SCHEMA = (
    "https://raw.githubusercontent.com/gpuconf/gpuconf/v{version}/schemas/cluster.schema.json"
)


def _workflow_commands() -> list[list[str]]:
    workflow = load_yaml((EXAMPLES / "ci" / "github-actions.yml").read_bytes())
    runs = [step["run"] for step in workflow["jobs"]["check"]["steps"] if "run" in step]
    # GitHub expressions become plain words, as the runner substitutes them before the shell.
    return [
        shlex.split(re.sub(r"\$\{\{[^}]*\}\}", "x", run))
        for run in runs
        if run.startswith("gpuconf ")
    ]


def test_the_workflow_runs_validate_render_check_and_gitops_check() -> None:
    commands = [argv[:2] for argv in _workflow_commands()]
    assert commands == [["gpuconf", "validate"], ["gpuconf", "render"], ["gpuconf", "gitops"]]
    assert all("--check" in argv for argv in _workflow_commands()[1:])


@pytest.mark.parametrize("argv", _workflow_commands(), ids=" ".join)
def test_every_workflow_command_is_a_valid_command_line(argv: list[str]) -> None:
    build_parser().parse_args(argv[1:])


def _diagnostic_lines() -> list[str]:
    return [
        line
        for expected in sorted(CASES.glob("negative/*/expected.txt"))
        for line in expected.read_text(encoding="utf-8").splitlines()
        if not re.fullmatch(r"\d+ errors?, \d+ warnings?", line)
    ]


def test_the_problem_matcher_locates_every_diagnostic_of_the_negative_cases() -> None:
    matcher = json.loads((EXAMPLES / "ci" / "gpuconf-problem-matcher.json").read_text())
    [pattern] = matcher["problemMatcher"][0]["pattern"]
    regexp = re.compile(pattern["regexp"])
    lines = _diagnostic_lines()
    assert len(lines) > 50
    for line in lines:
        found = regexp.match(line)
        assert found, line
        assert found.group(pattern["file"]) == "cluster.yaml", line
        assert int(found.group(pattern["line"])) >= 1
        severity = found.group(pattern["severity"])
        assert (severity == "warning") == (": warning: " in line), line


def test_the_starter_pre_commit_config_uses_every_hook_of_this_repository() -> None:
    offered = {hook["id"] for hook in load_yaml((REPO / ".pre-commit-hooks.yaml").read_bytes())}
    config = load_yaml((EXAMPLES / "starter" / ".pre-commit-config.yaml").read_bytes())
    [repo] = config["repos"]
    assert repo["rev"] == f"v{__version__}"
    assert {hook["id"] for hook in repo["hooks"]} == offered


def test_the_starter_cluster_names_the_schema_published_for_this_version() -> None:
    starter = EXAMPLES / "starter" / "clusters" / "lab.yaml"
    modeline = starter.read_text(encoding="utf-8").splitlines()[0]
    url = PUBLISHED_SCHEMA.format(version=__version__)
    assert modeline == f"# yaml-language-server: $schema={url}"
    # The tag serves the file at the same path as this checkout.
    assert (REPO / url.split(f"/v{__version__}/", 1)[1]).is_file()


def test_the_starter_cluster_validates(tmp_path: Path) -> None:
    result = run_cli("validate", str(EXAMPLES / "starter" / "clusters"), cwd=tmp_path)
    assert result.code == 0, result.err
