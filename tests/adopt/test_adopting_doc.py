"""docs/adopting.md as typed: its files written, its commands run in order from an empty folder,
printing what the page shows (warnings on stderr first, as a terminal shows them) and writing
the cluster file it shows."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from builders import REPO, run_cli

PAGE = (REPO / "docs" / "adopting.md").read_text(encoding="utf-8")
STEP = re.compile(
    r"(?:<!-- (write|expect): (\S+) -->\n```yaml\n(.*?)^```$)|(?:^```console\n(.*?)^```$)",
    flags=re.M | re.S,
)


def test_the_adopting_page_runs_as_shown(tmp_path: Path) -> None:
    steps = 0
    for found in STEP.finditer(PAGE):
        action, name, text, console = found.groups()
        steps += 1
        if action == "write":
            (tmp_path / name).write_text(text)
        elif action == "expect":
            assert (tmp_path / name).read_text() == text
        else:
            for command, shown in _commands(console):
                argv = shlex.split(command)
                assert argv[0] == "gpuconf"
                result = run_cli(*argv[1:], cwd=tmp_path)
                assert result.code == 0, result.err
                assert (result.err + result.out).splitlines() == shown, command
    assert steps == 9


def _commands(block: str) -> list[tuple[str, list[str]]]:
    commands: list[tuple[str, list[str]]] = []
    for line in block.splitlines():
        if line.startswith("$ "):
            commands.append((line[2:], []))
        else:
            commands[-1][1].append(line)
    return commands
