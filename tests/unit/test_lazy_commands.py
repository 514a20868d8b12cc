"""gpuconf's command parser builds a subcommand's parser only when the command line names it;
what the user reads (the listing, each command's usage and help, the errors) is the same as
with every parser built."""

from __future__ import annotations

import pytest

from gpuconf.cli import build_parser
from gpuconf.errors import ArgumentParser, Commands, UsageError

COMMANDS = [
    "validate", "render", "diff", "templates", "schema", "explain", "gitops",
    "fmt", "migrate", "nodes", "status", "import", "node",
]  # fmt: skip


def _commands(parser: ArgumentParser) -> Commands:
    (commands,) = (a for a in parser._actions if isinstance(a, Commands))
    return commands


def _every_parser_built() -> ArgumentParser:
    parser = build_parser()
    commands = _commands(parser)
    for name in COMMANDS:
        commands._build(name)
    return parser


def test_a_command_line_builds_only_the_parser_of_its_command() -> None:
    parser = build_parser()
    parser.parse_command_line(["render", "bench.yaml", "-o", "out"])
    assert sorted(_commands(parser)._unbuilt) == sorted(set(COMMANDS) - {"render"})


def test_the_command_listing_reads_the_same_with_every_parser_built() -> None:
    assert build_parser().format_help() == _every_parser_built().format_help()
    assert list(_commands(build_parser()).choices) == COMMANDS


@pytest.mark.parametrize("name", COMMANDS)
def test_each_command_has_its_own_usage_and_help(name: str) -> None:
    built = _commands(_every_parser_built()).choices[name]
    assert isinstance(built, ArgumentParser)
    assert built.prog == f"gpuconf {name}"
    assert built.add_help is (name != "node")
    if name != "node":
        assert f"usage: gpuconf {name}" in built.format_help()


def test_an_unknown_command_is_told_with_every_command_named() -> None:
    with pytest.raises(UsageError) as refused:
        build_parser().parse_command_line(["rendr"])
    assert ", ".join(map(repr, COMMANDS)) in str(refused.value)
