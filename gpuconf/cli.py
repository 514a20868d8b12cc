"""The `gpuconf` command line: validate, render, diff, schema, explain, gitops, and `node` for the node runtime."""

from __future__ import annotations

import argparse
import gc
import io
import os
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, TextIO, cast

if TYPE_CHECKING:
    from gpuconf.compiler.pipeline import Compiled
    from gpuconf.compiler.render import RenderedTree

from gpuconf import __version__
from gpuconf.adopt.commands import Command, add_parsers
from gpuconf.diagnostics import InvalidInput, report_text, summary_line
from gpuconf.errors import (
    ArgumentParser,
    ExitCode,
    GpuconfError,
    UsageError,
    UserError,
    cannot_write,
)

DEFAULT_CLUSTERS = Path("clusters")
DEFAULT_OUTPUT = Path("rendered")
KUSTOMIZATION = "kustomization.yaml"  # what Argo CD and Flux build a rendered tree from
DEFAULT_SCHEMAS = Path("schemas")


def _folder_named(text: str) -> Path:
    """A folder argument: Path('') is '.', so an empty one would name the working folder."""
    if not text:
        raise argparse.ArgumentTypeError("an empty path names no folder")
    return Path(text)


def build_parser() -> ArgumentParser:
    parser = ArgumentParser(
        prog="gpuconf", description="Compile typed GPU cluster descriptions into GitOps manifests."
    )
    parser.add_argument("--version", action="version", version=f"gpuconf {__version__}")
    parser.add_argument(
        "-C",
        dest="directory",
        type=_folder_named,
        default=None,
        metavar="DIR",
        help="run as if started in DIR: default paths and printed paths are relative to it",
    )
    commands = parser.add_commands(
        dest="command", required=True, metavar="COMMAND", parser_class=ArgumentParser
    )
    commands.add_command(
        "validate", _with_paths, help="check cluster files and report every problem"
    )
    commands.add_command("render", _render_options, help="render clusters into the output folder")
    commands.add_command(
        "diff", _diff_options, help="show what render would change in the output folder"
    )
    commands.add_command(
        "templates", _templates_options, help="list gpuconf's templates, or print one"
    )
    commands.add_command(
        "schema", _schema_options, help="write the JSON Schemas for cluster and node-config files"
    )
    commands.add_command(
        "explain",
        _explain_options,
        help="show each class's GPUs, replicas, capacity, quota and headroom",
    )
    commands.add_command(
        "gitops",
        _gitops_agents,
        help="write the Argo CD or Flux objects that sync the rendered clusters",
    )
    _ADOPT_COMMANDS.update(add_parsers(commands))
    commands.add_command(
        "node", _no_options, help="the node runtime: gpuconf node --help", add_help=False
    )
    return parser


def _with_paths(sub: argparse.ArgumentParser) -> None:
    sub.add_argument(
        "paths",
        nargs="*",
        type=Path,
        metavar="PATH",
        help="cluster files or folders (default: clusters/)",
    )
    sub.add_argument(
        "--format", choices=("text", "json"), default="text", help="diagnostics format"
    )


def _with_templates(sub: argparse.ArgumentParser) -> None:
    sub.add_argument(
        "--templates",
        type=_folder_named,
        default=None,
        metavar="DIR",
        help="a folder of site templates: one named like gpuconf's replaces or extends it "
        "(docs/templates.md)",
    )


def _render_options(render: argparse.ArgumentParser) -> None:
    _with_paths(render)
    render.add_argument(
        "-o",
        "--output",
        type=_folder_named,
        default=DEFAULT_OUTPUT,
        help="output folder (default: rendered/)",
    )
    _with_templates(render)
    render.add_argument(
        "--check",
        action="store_true",
        help="write nothing; exit 1 with a diff when the output is stale",
    )


def _diff_options(diff: argparse.ArgumentParser) -> None:
    _with_paths(diff)
    diff.add_argument(
        "-o",
        "--output",
        type=_folder_named,
        default=DEFAULT_OUTPUT,
        help="output folder (default: rendered/)",
    )
    _with_templates(diff)
    diff.add_argument("--exit-code", action="store_true", help="exit 1 when there are changes")


def _templates_options(shown: argparse.ArgumentParser) -> None:
    shown.add_argument("action", choices=("list", "show"))
    shown.add_argument("name", nargs="?", help="the template to print (show)")


def _schema_options(schema: argparse.ArgumentParser) -> None:
    schema.add_argument(
        "-o",
        "--output",
        type=_folder_named,
        default=DEFAULT_SCHEMAS,
        help="folder (default: schemas/)",
    )
    schema.add_argument(
        "--check", action="store_true", help="write nothing; exit 1 when the schemas are stale"
    )


def _explain_options(explain: argparse.ArgumentParser) -> None:
    explain.add_argument("cluster", help="a cluster file, or the name of a cluster in clusters/")
    explain.add_argument(
        "--format", choices=("text", "json"), default="text", help="diagnostics format"
    )
    explain.add_argument(
        "--host",
        action="store_true",
        help="show per pool what `gpuconf node setup` writes on the hosts and how it reloads",
    )


def _gitops_agents(gitops: ArgumentParser) -> None:
    agents = gitops.add_subparsers(
        dest="agent", required=True, metavar="AGENT", parser_class=ArgumentParser
    )
    for agent, summary in (
        ("argocd", "Argo CD Applications (one per cluster) and an ApplicationSet"),
        ("flux", "a Flux GitRepository and, per cluster, Kustomizations applied in order"),
    ):
        _gitops_options(agents.add_parser(agent, help=summary))


def _no_options(node: argparse.ArgumentParser) -> None:
    """`gpuconf node` takes its arguments from the node runtime's own parser."""


def _gitops_options(sub: argparse.ArgumentParser) -> None:
    _with_paths(sub)
    sub.add_argument("--repo", required=True, metavar="URL", help="the Git repository's URL")
    sub.add_argument(
        "--revision", default="main", help="branch (Flux) or revision (Argo CD) (default: main)"
    )
    sub.add_argument(
        "--path",
        dest="rendered_path",
        default=None,
        metavar="PATH",
        help="the rendered folder's path from the repository's root (the nearest folder up "
        "holding .git), as Argo CD and Flux read it (default: rendered)",
    )
    sub.add_argument(
        "--destination",
        choices=("in-cluster", "by-name"),
        default="in-cluster",
        help="Argo CD: sync into its own cluster, or into the Argo CD cluster named like the cluster",
    )
    sub.add_argument(
        "-o",
        "--output",
        type=_folder_named,
        default=None,
        help="output folder (default: gitops/AGENT/)",
    )
    sub.add_argument(
        "--check", action="store_true", help="write nothing; exit 1 with a diff when stale"
    )


def _report(
    compiled_diagnostics: Sequence[object], output_format: str, out: TextIO, err: TextIO
) -> None:
    from gpuconf.diagnostics import Diagnostic, report_json, report_text, summary_line

    diagnostics = [d for d in compiled_diagnostics if isinstance(d, Diagnostic)]
    if output_format == "json":
        out.write(report_json(diagnostics))
        return
    err.write(report_text(diagnostics))
    if diagnostics:
        err.write(summary_line(diagnostics) + "\n")


@contextmanager
def _cycle_collector_paused() -> Iterator[None]:
    """A compile builds some hundred thousand objects that live until it ends and makes almost
    no reference cycles; Python's cycle collector would walk the growing heap again and again
    (a third of a fleet's validation time). Memory stays bounded: what a compile frees, plain
    reference counting frees. The survivors then go straight to the oldest generation, so the
    collector, once back on, does not walk them all at the next allocation either."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if gc.get_freeze_count() == 0:  # nobody else's frozen objects to thaw
            gc.freeze()  # every tracked object, young ones included, set aside at once…
            gc.unfreeze()  # …and back, all in the oldest generation
        if was_enabled:
            gc.enable()


class _UntilReaderGoes(io.TextIOBase):
    """A standard stream that, once its reader has gone (`gpuconf diff --exit-code | head`),
    drops what is still written, so the command runs to its end and exits with what it found.
    (git and diff(1) die of SIGPIPE there: neither reports success either.) Any other failure to
    write (`> /dev/full`) is kept in `failure`, and said as a user error when `says_why`."""

    def __init__(self, stream: TextIO, says_why: bool) -> None:
        super().__init__()
        self._stream = stream
        self._says_why = says_why
        self._gone = False
        self.failure: OSError | None = None

    def write(self, text: str) -> int:
        if text and not self._gone:  # an empty write reaches an unbuffered stderr all the same
            try:
                self._stream.write(text)
            except OSError as error:
                self._stopped(error)
        return len(text)

    def flush(self) -> None:
        if not self._gone:
            try:
                self._stream.flush()
            except OSError as error:
                self._stopped(error)

    def _stopped(self, error: OSError) -> None:
        self._gone = True
        # What the stream still buffers would fail again when Python flushes it at exit.
        with suppress(OSError, ValueError):
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, self._stream.fileno())
            os.close(devnull)
        if not isinstance(error, BrokenPipeError):
            self.failure = error
            if self._says_why:
                raise cannot_write(error) from None


@contextmanager
def _readers_may_go() -> Iterator[_UntilReaderGoes]:
    """stdout and stderr wrapped for the command, and given back whatever happens. stdout's
    failure is said on stderr; stderr's can be said nowhere: its wrapper, yielded, keeps it."""
    streams = sys.stdout, sys.stderr
    out, err = _UntilReaderGoes(sys.stdout, says_why=True), _UntilReaderGoes(sys.stderr, False)
    sys.stdout, sys.stderr = cast("TextIO", out), cast("TextIO", err)
    try:
        yield err
    finally:
        sys.stdout, sys.stderr = streams


def _text(options: argparse.Namespace) -> TextIO:
    """Where a command prints what it has to say besides diagnostics: stdout, except where
    --format json keeps stdout for the one JSON document."""
    return sys.stderr if getattr(options, "format", "text") == "json" else sys.stdout


def _templates_folder(options: argparse.Namespace) -> Path | None:
    folder: Path | None = getattr(options, "templates", None)
    if folder is None:
        return None
    folder = options.base / folder
    if not folder.is_dir():
        raise UsageError(f"--templates {options.templates}: no such folder")
    return folder


def _compile(
    options: argparse.Namespace, render_output: bool = True, previous_output: Path | None = None
) -> Compiled:
    with _cycle_collector_paused():
        # Imported inside: the compiler's modules are tens of thousands of objects, and no
        # cycle the collector could find.
        from gpuconf.compiler.pipeline import compile_paths

        compiled = compile_paths(
            options.paths or [options.base / DEFAULT_CLUSTERS],
            relative_to=options.base,
            render_output=render_output,
            previous_output=previous_output,
            templates=_templates_folder(options),
        )
    _report(compiled.diagnostics, options.format, sys.stdout, sys.stderr)
    return compiled


def _validate(options: argparse.Namespace) -> int:
    compiled = _compile(options, render_output=False)
    if compiled.ok:
        print(
            f"{len(compiled.validated)} cluster(s) valid: {', '.join(sorted(compiled.validated))}",
            file=_text(options),
        )
    return ExitCode.OK if compiled.ok else ExitCode.INVALID_INPUT


def _check(options: argparse.Namespace, folders: Mapping[str, RenderedTree], prune: bool) -> int:
    from gpuconf.compiler import emit

    changes = list(emit.diff(options.output, folders, prune))
    if changes:
        _text(options).writelines(changes)
        print(f"{options.output_shown} is stale: run gpuconf {options.command}", file=sys.stderr)
        return ExitCode.INVALID_INPUT
    print(f"{options.output_shown} is up to date", file=_text(options))
    return ExitCode.OK


def _render(options: argparse.Namespace) -> int:
    compiled = _compile(options, previous_output=options.output)
    if not compiled.ok:
        return ExitCode.INVALID_INPUT
    from gpuconf.compiler import emit

    if options.check:
        for entry in emit.foreign(options.output, compiled.rendered):
            print(
                f"{options.output_shown / entry.name}: not written by gpuconf (left alone)",
                file=sys.stderr,
            )
        return _check(options, compiled.rendered, compiled.whole_directories)
    emit.write(options.output, compiled.rendered, compiled.whole_directories, options.base)
    files = sum(len(tree) for tree in compiled.rendered.values())
    print(
        f"rendered {len(compiled.rendered)} cluster(s), {files} files, into {options.output_shown}",
        file=_text(options),
    )
    return ExitCode.OK


def _gitops(options: argparse.Namespace) -> int:
    from gpuconf.compiler import emit
    from gpuconf.compiler.gitops import GitSource, gitops
    from gpuconf.compiler.templating.engine import Templates

    given = options.rendered_path
    rendered_path = PurePosixPath(DEFAULT_OUTPUT.as_posix() if given is None else given)
    if rendered_path.is_absolute() or ".." in rendered_path.parts:
        raise UsageError(
            f"--path {options.rendered_path}: give the folder's path inside the repository"
        )
    if not options.revision.strip():
        raise UsageError(
            f"--revision {options.revision!r}: name the branch (Flux) or revision (Argo CD) to sync"
        )
    compiled = _compile(options)
    if not compiled.ok:
        return ExitCode.INVALID_INPUT
    _refuse_unrendered(options, rendered_path, sorted(compiled.rendered))
    source = GitSource(
        options.repo,
        options.revision,
        "" if rendered_path == PurePosixPath(".") else rendered_path.as_posix(),
        destination_by_name=options.destination == "by-name",
    )
    from gpuconf.compiler.render import RenderFailed

    try:
        folders = gitops(options.agent, source, compiled.rendered, Templates())
    except RenderFailed as failed:
        if not failed.artifact.outside_input:
            raise  # gitops takes no site templates: a failure of gpuconf's own is a bug (exit 3)
        # The object is refused for what the command line put in it (--repo, --revision, --path).
        raise UsageError(
            f"{failed.artifact.kind} {failed.artifact.path}: the command line's values make an "
            f"object Kubernetes would refuse: {failed.failure.message}"
        ) from None
    if options.check:
        return _check(options, folders, compiled.whole_directories)
    emit.write(options.output, folders, compiled.whole_directories, options.base)
    files = sum(len(tree) for tree in folders.values())
    print(
        f"wrote {options.agent} objects for {len(compiled.rendered)} cluster(s), {files} files, into {options.output_shown}",
        file=_text(options),
    )
    return ExitCode.OK


def _refuse_unrendered(
    options: argparse.Namespace, rendered_path: PurePosixPath, clusters: Sequence[str]
) -> None:
    """The objects point the agent at PATH/<cluster>/ of the repository, PATH read from its
    root as Argo CD and Flux read it: where that holds no rendered tree, they would sync nothing
    but an error, so nothing is written."""
    # Resolved: a `-C ../other` kept as written would find the repository of the folder the
    # user stands in, not the one it names.
    base = options.base.resolve()
    root = _repository_root(base)
    folder = root / rendered_path
    missing = [c for c in clusters if not (folder / c / KUSTOMIZATION).is_file()]
    if not missing:
        return
    path = rendered_path.as_posix()
    named = f"--path {path}: " if options.rendered_path is not None else ""
    default = "" if named else " (the default --path)"
    problem = (
        f"{named}no rendered tree of {', '.join(missing)} in {path}/{default} "
        f"for {options.agent} to sync"
    )
    rendered_here = base / DEFAULT_OUTPUT  # where `gpuconf render` writes by default
    suggested = PurePosixPath(rendered_here.relative_to(root).as_posix())
    if suggested != rendered_path and _rendered_clusters(rendered_here) >= set(clusters):
        raise UsageError(f"{problem}; they are in {suggested}/: give --path {suggested}")
    there = _rendered_clusters(folder)
    if there:
        problem += f" (rendered clusters there: {', '.join(sorted(there))})"
    if not named and suggested != rendered_path:
        # In a subfolder of the repository: render here, and point the agent at it.
        raise UserError(
            f"{problem}; run `gpuconf render` first, commit it, and give --path {suggested}"
        )
    output = Path(os.path.relpath(folder, base)).as_posix()
    render = "gpuconf render" + ("" if output == DEFAULT_OUTPUT.as_posix() else f" -o {output}")
    raise UserError(f"{problem}; run `{render}` first, and commit it")


def _repository_root(folder: Path) -> Path:
    """The nearest folder up from `folder` holding `.git` (a folder, or a file in a worktree or
    submodule): Argo CD and Flux read --path from there. `folder` itself where none does."""
    for candidate in (folder, *folder.parents):
        if (candidate / ".git").exists():
            return candidate
    return folder


def _rendered_clusters(folder: Path) -> set[str]:
    """The folders of `folder` holding a rendered tree (its kustomization.yaml)."""
    if not folder.is_dir():
        return set()
    return {d.name for d in folder.iterdir() if (d / KUSTOMIZATION).is_file()}


def _diff(options: argparse.Namespace) -> int:
    from gpuconf.compiler import emit

    compiled = _compile(options, previous_output=options.output)
    if not compiled.ok:
        return ExitCode.INVALID_INPUT
    changes = list(emit.diff(options.output, compiled.rendered, compiled.whole_directories))
    _text(options).writelines(changes)
    return ExitCode.INVALID_INPUT if changes and options.exit_code else ExitCode.OK


def _schema(options: argparse.Namespace) -> int:
    from gpuconf.api.schema import schema_texts
    from gpuconf.gpus.catalog import Catalog

    texts = schema_texts(Catalog.load().names())
    stale = [
        n
        for n, t in texts.items()
        if not (options.output / n).is_file()
        or (options.output / n).read_text(encoding="utf-8") != t
    ]
    if options.check:
        for name in stale:
            state = "stale" if (options.output / name).is_file() else "missing"
            print(f"{options.output_shown / name} is {state}: run gpuconf schema", file=sys.stderr)
        return ExitCode.INVALID_INPUT if stale else ExitCode.OK
    try:
        options.output.mkdir(parents=True, exist_ok=True)
        for name in stale:
            (options.output / name).write_text(texts[name], encoding="utf-8")
    except OSError as error:
        raise cannot_write(error, relative_to=options.base) from None
    print(
        f"wrote {len(stale)} schema(s) to {options.output_shown}"
        if stale
        else f"{options.output_shown} is up to date"
    )
    return ExitCode.OK


def _explain(options: argparse.Namespace) -> int:
    from gpuconf.compiler.explain import explain_text
    from gpuconf.compiler.pipeline import cluster_paths

    options.paths = cluster_paths(options.base, options.cluster, DEFAULT_CLUSTERS)
    compiled = _compile(options, render_output=False)
    if not compiled.ok:
        return ExitCode.INVALID_INPUT
    out = _text(options)
    for validated in compiled.validated.values():
        print(f"cluster {validated.cluster.metadata.name}", file=out)
        if options.host:
            from gpuconf.compiler.explain_host import host_setup_text

            out.write(host_setup_text(validated))
        else:
            out.write(explain_text(validated))
    return ExitCode.OK


def _templates(options: argparse.Namespace) -> int:
    from gpuconf.compiler.templating.shipped import shipped_folder, shipped_names

    if (options.action == "show") != (options.name is not None):
        raise UsageError(
            "templates show NAME prints one template; templates list takes no name "
            "(see 'gpuconf templates --help')"
        )
    names = shipped_names()
    if options.action == "list":
        print("\n".join(names))
        return ExitCode.OK
    if options.name not in names:
        raise UsageError(f"templates show: no template {options.name!r}; `gpuconf templates list`")
    sys.stdout.write((shipped_folder() / options.name).read_text(encoding="utf-8"))
    return ExitCode.OK


_ADOPT_COMMANDS: dict[str, Command] = {}
_COMMANDS: dict[str, Command] = {
    "validate": _validate,
    "render": _render,
    "diff": _diff,
    "schema": _schema,
    "explain": _explain,
    "gitops": _gitops,
    "templates": _templates,
}


def _anchor(options: argparse.Namespace) -> None:
    """Relative paths on the command line are relative to -C DIR when given."""
    base: Path = (options.directory or Path.cwd()).absolute()
    options.base = base
    if getattr(options, "paths", None):
        options.paths = [base / p for p in options.paths]
    if options.command == "gitops" and options.output is None:
        options.output = Path("gitops") / options.agent
    output = getattr(options, "output", None)
    if output is not None:
        options.output_shown = output
        options.output = base / output


def _node_command(argv: list[str]) -> tuple[Path | None, list[str]] | None:
    """(-C DIR, the node command's arguments) when argv runs `node`, after any -C DIR."""
    directory = None
    rest = argv
    while rest[:1] != ["node"]:
        if rest[:1] == ["-C"] and len(rest) > 1 and rest[1]:
            directory, rest = Path(rest[1]), rest[2:]
        elif rest and rest[0].startswith("-C") and rest[0][2:].removeprefix("="):
            directory, rest = Path(rest[0][2:].removeprefix("=")), rest[1:]
        else:
            return None
    return directory, rest[1:]


def _run(argv: list[str]) -> int:
    node = _node_command(argv)
    if node is not None:
        from gpuconf.node.commands.parser import main as node_main

        return node_main(node[1], directory=node[0])
    options = build_parser().parse_command_line(argv)
    _anchor(options)
    return {**_COMMANDS, **_ADOPT_COMMANDS}[options.command](options)


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    with _readers_may_go() as err:
        code = _guarded(lambda: _run(args))
        flushed = _guarded(_flush_output)
        if code == ExitCode.OK and err.failure is not None:
            return ExitCode.INVALID_INPUT
        return code if code != ExitCode.OK else flushed


def _flush_output() -> int:
    """What stdout still buffers written out: a write that fails here (`> /dev/full`) is the
    user's to hear of, after the command itself has returned."""
    sys.stdout.flush()
    sys.stderr.flush()
    return ExitCode.OK


def _guarded(run: Callable[[], int]) -> int:
    try:
        return run()
    except InvalidInput as invalid:
        sys.stderr.write(
            report_text(invalid.diagnostics) + summary_line(invalid.diagnostics) + "\n"
        )
        return invalid.exit_code
    except GpuconfError as error:
        print(f"gpuconf: {error}", file=sys.stderr)
        return error.exit_code
    except KeyboardInterrupt:
        print("gpuconf: interrupted", file=sys.stderr)
        return ExitCode.INTERRUPTED
    except Exception as error:
        if os.environ.get("GPUCONF_DEBUG"):
            import traceback

            traceback.print_exc()
        summary = str(error).splitlines()[0] if str(error) else ""
        print(
            f"gpuconf: internal error: {type(error).__name__}: {summary} (a bug; GPUCONF_DEBUG=1 shows details)",
            file=sys.stderr,
        )
        return ExitCode.INTERNAL
