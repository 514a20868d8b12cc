"""What the adoption commands share on the command line: reading the cluster file named, writing
edits (or reporting why not), warnings, and the options for reaching a live cluster."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

from gpuconf.errors import ExitCode, UsageError, display_path

if TYPE_CHECKING:
    from gpuconf.adopt.cluster_file import ClusterFile, Edited
    from gpuconf.compiler.validate import Validated
    from gpuconf.diagnostics import Diagnostic


def cluster_access(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--kubeconfig",
        type=Path,
        default=None,
        metavar="FILE",
        help="kubeconfig file (default: $KUBECONFIG, then ~/.kube/config, then in-cluster)",
    )
    parser.add_argument(
        "--context", default=None, help="kubeconfig context (default: the current one)"
    )


def validated_cluster(
    options: argparse.Namespace, cluster: str, with_warnings: bool = True
) -> Validated:
    """The cluster file named on the command line, or the one in clusters/ declaring `cluster`."""
    from gpuconf.compiler.pipeline import cluster_paths, compile_paths
    from gpuconf.diagnostics import InvalidInput

    paths = cluster_paths(options.base, cluster, Path("clusters"))
    compiled = compile_paths(paths, relative_to=options.base, render_output=False)
    if not compiled.ok:
        raise InvalidInput(compiled.diagnostics)
    if with_warnings:
        warn(compiled.diagnostics)
    return next(iter(compiled.validated.values()))


def read_cluster_file(options: argparse.Namespace, path: Path) -> ClusterFile:
    from gpuconf.adopt.cluster_file import read

    path = options.base / path
    return read(path, display_path(path, options.base))


class StandardInput:
    """The argument `-` exactly: standard input. `./-` is a file named `-` (Path("./-") is
    Path("-"), so the argument is told apart before it becomes a Path)."""

    def __str__(self) -> str:
        return "-"

    def __repr__(self) -> str:
        return "STDIN"


STDIN = StandardInput()
STDIN_SHOWN = "<stdin>"
STDIN_HELP = "(`-`: standard input)"
InputFile = Path | StandardInput


def input_file(argument: str) -> InputFile:
    """The argparse type of an input file that may be piped in."""
    return STDIN if argument == "-" else Path(argument)


def read_inputs(options: argparse.Namespace, paths: Sequence[InputFile]) -> list[tuple[str, str]]:
    """Each input file's text and the name its diagnostics give it. `-` is standard input
    (`kubectl get … -o yaml | gpuconf import …`), which can be read once."""
    from gpuconf.diagnostics import InvalidInput
    from gpuconf.formats.located_yaml import LoadFailed, read_stream, read_text

    if paths.count(STDIN) > 1:
        raise UsageError(f"{STDIN} (standard input) is named twice; it can be read once")
    inputs = []
    for path in paths:
        try:
            if isinstance(path, StandardInput):
                inputs.append((read_stream(_standard_input(), STDIN_SHOWN), STDIN_SHOWN))
            else:
                shown = display_path(options.base / path, options.base)
                inputs.append((read_text(options.base / path, shown), shown))
        except LoadFailed as failure:
            raise InvalidInput([failure.diagnostic]) from None
    return inputs


def _standard_input() -> BinaryIO:
    """Standard input, to read to its end: refused where it is closed (`<&-`: Python then has
    no sys.stdin) or a terminal (reading would wait, silently, for the user to type YAML)."""
    from gpuconf.diagnostics import Diagnostic, InvalidInput

    if sys.stdin is None:
        closed = Diagnostic(
            STDIN_SHOWN, 1, 1, (), "standard input is closed", "pipe the file in, or name it"
        )
        raise InvalidInput([closed])
    if sys.stdin.isatty():
        raise UsageError(f"{STDIN} reads standard input, which is a terminal: pipe the file in")
    return sys.stdin.buffer


def read_cluster_files(options: argparse.Namespace, paths: Sequence[Path]) -> list[ClusterFile]:
    """Every file read; where some are invalid, InvalidInput with all of their diagnostics."""
    from gpuconf.diagnostics import InvalidInput

    files, diagnostics = [], []
    for path in paths:
        try:
            files.append(read_cluster_file(options, path))
        except InvalidInput as invalid:
            diagnostics += invalid.diagnostics
    if diagnostics:
        raise InvalidInput(diagnostics)
    return files


def checked(edits: Sequence[Edited]) -> list[Diagnostic]:
    from gpuconf.adopt.cluster_file import check
    from gpuconf.diagnostics import InvalidInput, has_errors

    diagnostics = check(edits)
    if has_errors(diagnostics):
        raise InvalidInput(diagnostics)
    return diagnostics


def written(edits: Sequence[Edited], done: str) -> int:
    from gpuconf.adopt.cluster_file import write

    warn(write(edits))
    print(done if any(e.changed for e in edits) else "nothing to change")
    return ExitCode.OK


def warn(diagnostics: Sequence[Diagnostic]) -> None:
    from gpuconf.diagnostics import report_text

    sys.stderr.write(report_text(diagnostics))


def check_or_write(
    options: argparse.Namespace, edits: Sequence[Edited], done: str, stale_note: str
) -> int:
    """--check: the diff of what would change, exit 1 if anything would; else write."""
    if not options.check:
        return written(edits, done)
    warn(checked(edits))
    stale = [e for e in edits if e.changed]
    for edit in stale:
        sys.stdout.writelines(edit.diff())
    for edit in stale:
        print(f"{edit.shown}: {stale_note}: run gpuconf {options.command}", file=sys.stderr)
    return ExitCode.INVALID_INPUT if stale else ExitCode.OK
