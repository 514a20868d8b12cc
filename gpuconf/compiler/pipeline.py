"""The pipeline: find cluster files → load → validate → plan → render, collecting every diagnostic."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from gpuconf.compiler.validate import Validated, validate
from gpuconf.diagnostics import Diagnostic, Severity, has_errors
from gpuconf.errors import UsageError, UserError, display_path
from gpuconf.formats.located_yaml import LoadFailed, load_file
from gpuconf.gpus.catalog import Catalog

if TYPE_CHECKING:
    from gpuconf.compiler.plan.cluster_objects import KeptNamespace
    from gpuconf.compiler.render import RenderedTree, RenderFailed

CLUSTER_SUFFIXES = (".yaml", ".yml")
CLUSTER_DOCUMENT_HINT = "a cluster file holds one mapping with apiVersion, kind, metadata and spec"


class Compiled:
    """What compiling some cluster files gave: filled in as the pipeline goes."""

    __slots__ = ("diagnostics", "rendered", "validated", "whole_directories")

    def __init__(self, *, whole_directories: bool = False) -> None:
        self.validated: dict[str, Validated] = {}
        """By cluster name."""
        self.rendered: dict[str, RenderedTree] = {}
        self.diagnostics: list[Diagnostic] = []
        self.whole_directories = whole_directories
        """Every PATH was a directory: clusters missing from them are stale in the output."""

    @property
    def ok(self) -> bool:
        return not has_errors(self.diagnostics)


def find_cluster_files(paths: Sequence[Path], relative_to: Path | None = None) -> list[Path]:
    """The cluster files `paths` name (a folder: its *.yaml and *.yml files); a path that does
    not exist is a UserError naming it as display_path does."""
    files: list[Path] = []
    for path in paths:
        if path.is_dir():
            files += sorted(
                p for p in path.iterdir() if p.suffix in CLUSTER_SUFFIXES and p.is_file()
            )
        elif path.exists():
            files.append(path)  # a regular file, or one a pipe or device stands for (/dev/stdin)
        else:
            raise UserError(f"{display_path(path, relative_to)}: no such file or directory")
    # A file named twice (overlapping globs, a folder and a file in it, a symbolic or hard
    # link) is one file, read once.
    first: dict[tuple[int, int], Path] = {}
    for file in files:
        stat = file.stat()
        first.setdefault((stat.st_dev, stat.st_ino), file)
    return list(first.values())


def cluster_paths(base: Path, cluster: str, folder: Path) -> list[Path]:
    """`cluster` as a command names it: a file under `base`, else the file(s) in `folder`
    declaring that name, only those (a broken neighbour is not its problem). UsageError where
    none does."""
    from gpuconf.compiler.explain import files_declaring

    target = base / cluster
    if target.is_dir():
        raise UsageError(f"{cluster!r}: name a cluster, or its file, not a folder")
    if target.exists():
        return [target]
    paths, known = files_declaring(cluster, find_cluster_files([base / folder], base))
    if not paths:
        raise UsageError(f"no cluster named {cluster!r} in {folder}/ (known: {', '.join(known)})")
    return paths


def compile_paths(
    paths: Sequence[Path],
    *,
    relative_to: Path | None = None,
    render_output: bool = True,
    previous_output: Path | None = None,
    templates: Path | None = None,
) -> Compiled:
    """Compile cluster files; diagnostics and outputs name files relative to `relative_to`.

    `previous_output`: the output folder as the last render left it, whose Namespaces gpuconf
    created are kept (compiler/kept_namespaces.py). `templates`: a site's override folder, for
    clusters whose spec.templates names none."""
    files = find_cluster_files(paths, relative_to)
    result = Compiled(whole_directories=all(p.is_dir() for p in paths))
    if not files:
        raise UserError("no cluster files (*.yaml) found in " + ", ".join(str(p) for p in paths))
    catalog = Catalog.load()
    sources: dict[str, str] = {}
    folders: dict[str, Path | None] = {}
    for file in files:
        source = display_path(file, relative_to)
        try:
            located = load_file(file, source, CLUSTER_DOCUMENT_HINT)
        except LoadFailed as failure:
            result.diagnostics.append(failure.diagnostic)
            continue
        outcome = validate(located, catalog)
        if isinstance(outcome, list):
            result.diagnostics += outcome
            continue
        result.diagnostics += outcome.warnings
        folder = _templates_folder(outcome, file, templates, result.diagnostics)
        name = outcome.cluster.metadata.name
        if name in sources:
            result.diagnostics.append(
                located.diagnostic(
                    ("metadata", "name"),
                    f"cluster {name!r} is also defined in {sources[name]}",
                    "cluster names must be unique",
                )
            )
            continue
        # Rendered files never hold an absolute path: same input, same bytes, on any machine.
        sources[name] = file.name if Path(source).is_absolute() else source
        result.validated[name] = outcome
        folders[name] = folder
    if result.ok and render_output:
        shown = {
            folder: display_path(folder, relative_to)
            for folder in folders.values()
            if folder is not None
        }
        _render_all(result, sources, previous_output, folders, shown)
    return result


def _templates_folder(
    validated: Validated, file: Path, default: Path | None, diagnostics: list[Diagnostic]
) -> Path | None:
    """The cluster's own override folder (spec.templates, relative to its file), else `default`."""
    named = validated.cluster.spec.templates
    if named is None:
        return default
    folder = file.parent / named
    if not folder.is_dir():
        diagnostics.append(
            validated.located.diagnostic(
                ("spec", "templates"),
                f"no folder {named!r} beside this file",
                "give the folder of site templates relative to the cluster file",
            )
        )
    return folder


def _render_all(
    result: Compiled,
    sources: dict[str, str],
    previous: Path | None,
    folders: dict[str, Path | None],
    shown: dict[Path, str],
) -> None:
    # Planning and rendering load only for commands that write.
    from gpuconf.compiler.kept_namespaces import kept_namespaces
    from gpuconf.compiler.kueue_check import kueue_problems
    from gpuconf.compiler.object_limits import oversized
    from gpuconf.compiler.plan import plan
    from gpuconf.compiler.render import RenderFailed, render
    from gpuconf.compiler.templating.engine import Templates

    # Each template set compiles its templates once, for every cluster that renders with it.
    sets: dict[Path | None, Templates] = {}
    for name, validated in sorted(result.validated.items()):
        folder = folders[name]
        templates = sets.get(folder)
        if templates is None:
            templates = sets[folder] = Templates(folder, shown.get(folder) if folder else None)
        kept = kept_namespaces(previous / name, validated.cluster) if previous else []
        artifacts = plan(validated, sources[name], kept)
        result.diagnostics += [_kept_warning(validated, name, k) for k in kept]
        try:
            tree = render(artifacts, templates)
        except RenderFailed as failed:
            result.diagnostics.append(_template_error(validated, failed))
            continue
        refused = kueue_problems(validated, artifacts, tree)
        if refused:
            result.diagnostics += refused
            continue
        too_big = oversized(validated, artifacts, tree)
        if too_big:
            result.diagnostics += too_big
        else:
            result.rendered[name] = tree


def _template_error(validated: Validated, failed: RenderFailed) -> Diagnostic:
    """Where the template failed, and which output and cluster-file values it was rendering."""
    failure = failed.failure
    source = validated.located.file
    return Diagnostic(
        failure.file,
        failure.line,
        1,
        failed.artifact.source,
        f"rendering {failed.artifact.path} from {source}: {failure.message}",
        failure.hint,
    )


def _kept_warning(validated: Validated, cluster: str, kept: KeptNamespace) -> Diagnostic:
    return validated.located.diagnostic(
        ("spec", "namespace") if kept.held_gpuconf else ("spec", "quotas"),
        f"gpuconf no longer creates namespace {kept.name!r}; its Namespace stays in the "
        f"rendered tree ({cluster}/{kept.path}), marked as kept",
        "delete that file and render again when the namespace may go (Argo CD and Flux never "
        "delete it either way)",
        severity=Severity.WARNING,
    )
