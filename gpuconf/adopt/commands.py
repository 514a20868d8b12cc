"""The adoption commands on the command line: fmt, nodes, migrate, import, status.

Only argparse is imported at start-up: `gpuconf validate` builds the same parser and must not
pay for ruamel.yaml or the Kubernetes client. Each command imports its modules when it runs."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from gpuconf.errors import ArgumentParser, ExitCode, UsageError

if TYPE_CHECKING:
    from gpuconf.adopt.cluster_file import ClusterFile, Edited
    from gpuconf.compiler.validate import Validated
    from gpuconf.diagnostics import Diagnostic

Command = Callable[[argparse.Namespace], int]


def add_parsers(commands: argparse._SubParsersAction[ArgumentParser]) -> dict[str, Command]:
    fmt = commands.add_parser(
        "fmt", help="write cluster files in canonical style, keeping comments and order"
    )
    fmt.add_argument(
        "paths", nargs="*", type=Path, metavar="PATH", help="files or folders (default: clusters/)"
    )
    fmt.add_argument(
        "--check", action="store_true", help="write nothing; exit 1 with a diff when not formatted"
    )

    migrate = commands.add_parser(
        "migrate", help="rewrite cluster files from older forms to the current one"
    )
    migrate.add_argument(
        "paths", nargs="*", type=Path, metavar="PATH", help="files or folders (default: clusters/)"
    )
    migrate.add_argument(
        "--check",
        action="store_true",
        help="write nothing; exit 1 with a diff when some would change",
    )

    nodes = commands.add_parser("nodes", help="declare or retire nodes (and their GPU UUIDs)")
    actions = nodes.add_subparsers(
        dest="action", required=True, metavar="ACTION", parser_class=ArgumentParser
    )
    add = actions.add_parser("add", help="declare nodes in a pool")
    add.add_argument("file", type=Path, metavar="FILE", help="the cluster file")
    add.add_argument("pool", metavar="POOL", help="the pool the nodes join")
    add.add_argument("nodes", nargs="+", metavar="NODE", help="Kubernetes Node names")
    add.add_argument(
        "--gpus", type=int, default=None, metavar="N", help="GPUs per node (default: the pool's)"
    )
    add.add_argument(
        "--uuid",
        dest="uuids",
        action="append",
        default=[],
        metavar="UUID",
        help="the GPUs' UUIDs in index order (one node only); `nvidia-smi -L` lists them",
    )
    remove = actions.add_parser("remove", help="retire declared nodes")
    remove.add_argument("file", type=Path, metavar="FILE", help="the cluster file")
    remove.add_argument("nodes", nargs="+", metavar="NODE", help="Kubernetes Node names")

    status = commands.add_parser(
        "status", help="compare a live cluster with its cluster file (read-only)"
    )
    status.add_argument("cluster", help="a cluster file, or the name of a cluster in clusters/")
    _cluster_access(status)
    status.add_argument(
        "-o",
        "--output",
        dest="output_format",
        choices=("text", "json"),
        default="text",
        help="text table or JSON",
    )

    importing = commands.add_parser(
        "import", help="write a cluster file from NVIDIA's chart, ResourceQuotas or a live cluster"
    )
    sources = importing.add_subparsers(
        dest="source", required=True, metavar="SOURCE", parser_class=ArgumentParser
    )
    for source, first, summary in (
        ("nvidia-chart", "values", "from the device-plugin chart's values and config files"),
        ("gpu-operator", "policy", "from a GPU Operator ClusterPolicy's device plugin settings"),
    ):
        chart = sources.add_parser(source, help=summary)
        chart.add_argument(
            first,
            type=Path,
            metavar="VALUES" if first == "values" else "CLUSTERPOLICY",
            help="the values file given to helm" if first == "values" else "its manifest",
        )
        chart.add_argument(
            "configs",
            nargs="*",
            type=Path,
            metavar="CONFIG",
            help="the plugin's ConfigMap (config.name), or config files (named by file name)",
        )
        chart.add_argument(
            "--gpus",
            action="append",
            default=[],
            metavar="CONFIG=MODEL:COUNT:NODES",
            help="each config's nodes: GPU model, GPUs per node, nodes (e.g. default=L4:2:10)",
        )
        _new_cluster_options(chart)
    live = sources.add_parser("cluster", help="from a live cluster's GPU nodes (GFD's labels)")
    _cluster_access(live)
    _new_cluster_options(live, kubernetes_default=None)
    quotas = sources.add_parser(
        "quotas", help="the GPU lines of ResourceQuotas, into a cluster file's spec.quotas"
    )
    quotas.add_argument(
        "quotas", nargs="+", type=Path, metavar="RESOURCEQUOTA", help="ResourceQuota manifests"
    )
    quotas.add_argument(
        "--into", type=Path, required=True, metavar="FILE", help="the cluster file to edit"
    )
    return {
        "fmt": _fmt,
        "migrate": _migrate,
        "nodes": _nodes,
        "status": _status,
        "import": _import,
    }


def _new_cluster_options(
    parser: argparse.ArgumentParser, kubernetes_default: str | None = "1.34"
) -> None:
    parser.add_argument("--name", required=True, help="the cluster's name")
    parser.add_argument(
        "--kubernetes-version",
        default=kubernetes_default,
        metavar="X.Y",
        help="the cluster's Kubernetes "
        + (f"(default: {kubernetes_default})" if kubernetes_default else "(default: the server's)"),
    )
    parser.add_argument(
        "-o",
        "--output",
        dest="cluster_file",
        type=Path,
        default=None,
        metavar="FILE",
        help="where to write it (default: clusters/NAME.yaml)",
    )
    parser.add_argument("--force", action="store_true", help="replace FILE when it exists")


def _cluster_access(parser: argparse.ArgumentParser) -> None:
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


def _fmt(options: argparse.Namespace) -> int:
    from gpuconf.adopt.fmt import formatted
    from gpuconf.compiler.pipeline import find_cluster_files

    files = find_cluster_files(options.paths or [options.base / "clusters"])
    edits = [formatted(_read(options, path)) for path in files]
    if options.check:
        _warn(_checked(edits))
        stale = [e for e in edits if e.changed]
        for edit in stale:
            sys.stdout.writelines(edit.diff())
        for edit in stale:
            print(f"{edit.shown}: not formatted: run gpuconf fmt", file=sys.stderr)
        return ExitCode.INVALID_INPUT if stale else ExitCode.OK
    changed = [e.shown for e in edits if e.changed]
    return _written(edits, f"formatted {len(changed)} file(s): {', '.join(changed)}")


def _migrate(options: argparse.Namespace) -> int:
    from gpuconf.adopt.migrate import migrated
    from gpuconf.compiler.pipeline import find_cluster_files

    files = find_cluster_files(options.paths or [options.base / "clusters"])
    edits = []
    for path in files:
        edit, changes = migrated(_read(options, path))
        edits.append(edit)
        for change in changes:
            print(f"{edit.shown}: {change}", file=sys.stderr)
    if options.check:
        _warn(_checked(edits))
        stale = [e for e in edits if e.changed]
        for edit in stale:
            sys.stdout.writelines(edit.diff())
        return ExitCode.INVALID_INPUT if stale else ExitCode.OK
    changed = [e.shown for e in edits if e.changed]
    return _written(edits, f"migrated {len(changed)} file(s): {', '.join(changed)}")


def _nodes(options: argparse.Namespace) -> int:
    from gpuconf.adopt import nodes

    file = _read(options, options.file)
    if options.action == "add":
        if options.uuids and len(options.nodes) > 1:
            raise UsageError("--uuid declares the GPUs of one node: add one node at a time")
        edit = nodes.add(file, options.pool, options.nodes, options.gpus, options.uuids)
        done = f"declared {len(options.nodes)} node(s) in pool {options.pool} of {file.shown}"
    else:
        edit = nodes.remove(file, options.nodes)
        done = f"retired {len(options.nodes)} node(s) from {file.shown}"
    return _written([edit], done)


def _status(options: argparse.Namespace) -> int:
    from gpuconf.adopt.live.cluster_api import connect
    from gpuconf.adopt.live.status import status

    validated = _validated(options, options.cluster)
    kubeconfig = options.base / options.kubeconfig if options.kubeconfig else None
    api = connect(kubeconfig, options.context)
    dra = api.dra_objects() if validated.cluster.spec.allocation == "dra" else None
    report = status(validated, api.nodes(), api.resource_quotas(), dra)
    sys.stdout.write(report.as_json() if options.output_format == "json" else report.as_text())
    return ExitCode.INVALID_INPUT if report.problems() else ExitCode.OK


def _import(options: argparse.Namespace) -> int:
    if options.source == "quotas":
        return _import_quotas(options)
    if options.source == "cluster":
        return _import_cluster(options)
    from gpuconf.adopt.cluster_file import new_file
    from gpuconf.adopt.importers.cluster_document import cluster_document
    from gpuconf.adopt.importers.nvidia_chart import import_chart, parse_gpus
    from gpuconf.adopt.importers.sources import read_documents, read_one
    from gpuconf.compiler.pipeline import display_path

    target, shown = _new_target(options)
    first = options.values if options.source == "nvidia-chart" else options.policy
    first_path = options.base / first
    values = read_one(first_path, display_path(first_path, options.base))
    policy_left_out: list[Diagnostic] = []
    engine = None
    if options.source == "gpu-operator":
        from gpuconf.adopt.importers import gpu_operator

        engine = gpu_operator.engine(values)
        values, policy_left_out = gpu_operator.as_chart_values(values)
    configs = [
        (source, path)
        for path in (options.base / p for p in options.configs)
        for source in read_documents(path, display_path(path, options.base))
    ]
    imported = import_chart(
        values, configs, parse_gpus(options.gpus), options.kubernetes_version, engine
    )
    imported.left_out[:0] = policy_left_out
    origin = " ".join([f"gpuconf import {options.source}", str(first), *map(str, options.configs)])
    from gpuconf.diagnostics import sort_key

    left_out = [
        d.as_text().replace(": warning: ", ": ", 1) for d in sorted(imported.left_out, key=sort_key)
    ]
    document = cluster_document(options.name, imported.spec, origin, left_out)
    _warn(imported.left_out)
    _written([new_file(target, shown, document)], f"wrote {shown}")
    if imported.left_out:
        print(
            f"{len(imported.left_out)} setting(s) not imported: listed above and in the file's header"
        )
    return ExitCode.OK


def _new_target(options: argparse.Namespace) -> tuple[Path, str]:
    from gpuconf.compiler.pipeline import display_path

    target = options.base / (options.cluster_file or Path("clusters") / f"{options.name}.yaml")
    shown = display_path(target, options.base)
    if target.exists() and not options.force:
        raise UsageError(f"{shown} exists: choose another -o FILE, or --force to replace it")
    return target, shown


def _import_cluster(options: argparse.Namespace) -> int:
    from gpuconf.adopt.cluster_file import new_file
    from gpuconf.adopt.importers.cluster_document import cluster_document
    from gpuconf.adopt.importers.live_cluster import import_live
    from gpuconf.adopt.live.cluster_api import connect
    from gpuconf.gpus.catalog import Catalog

    target, shown = _new_target(options)
    kubeconfig = options.base / options.kubeconfig if options.kubeconfig else None
    api = connect(kubeconfig, options.context)
    version = options.kubernetes_version or api.kubernetes_version()
    imported = import_live(api.nodes(), version, Catalog.load())
    document = cluster_document(
        options.name, imported.spec, f"gpuconf import cluster ({api.server})", imported.left_out
    )
    for line in imported.left_out:
        print(f"warning: {line}", file=sys.stderr)
    return _written([new_file(target, shown, document)], f"wrote {shown}")


def _import_quotas(options: argparse.Namespace) -> int:
    from gpuconf.adopt.cluster_file import edited
    from gpuconf.adopt.importers.quotas import import_quotas
    from gpuconf.adopt.importers.sources import read_documents
    from gpuconf.compiler.pipeline import display_path

    validated = _validated(options, str(options.into), warn=False)  # the edit is checked anew
    file = _read(options, options.into)
    sources = [
        source
        for path in (options.base / p for p in options.quotas)
        for source in read_documents(path, display_path(path, options.base))
    ]
    left_out = import_quotas(file, validated, sources)
    _warn(left_out)
    return _written([edited(file)], f"wrote the quotas into {file.shown}")


def _validated(options: argparse.Namespace, cluster: str, warn: bool = True) -> Validated:
    """The cluster file named on the command line, or the one in clusters/ declaring `cluster`."""
    from gpuconf.compiler.explain import files_declaring
    from gpuconf.compiler.pipeline import compile_paths, find_cluster_files
    from gpuconf.diagnostics import InvalidInput

    target = options.base / cluster
    if target.exists():
        paths = [target]
    else:
        paths, known = files_declaring(cluster, find_cluster_files([options.base / "clusters"]))
        if not paths:
            raise UsageError(
                f"no cluster named {cluster!r} in clusters/ (known: {', '.join(known)})"
            )
    compiled = compile_paths(paths, relative_to=options.base, render_output=False)
    if not compiled.ok:
        raise InvalidInput(compiled.diagnostics)
    if warn:
        _warn(compiled.diagnostics)
    return next(iter(compiled.validated.values()))


def _read(options: argparse.Namespace, path: Path) -> ClusterFile:
    from gpuconf.adopt.cluster_file import read
    from gpuconf.compiler.pipeline import display_path

    path = options.base / path
    return read(path, display_path(path, options.base))


def _checked(edits: Sequence[Edited]) -> list[Diagnostic]:
    from gpuconf.adopt.cluster_file import check
    from gpuconf.diagnostics import InvalidInput, has_errors

    diagnostics = check(edits)
    if has_errors(diagnostics):
        raise InvalidInput(diagnostics)
    return diagnostics


def _written(edits: Sequence[Edited], done: str) -> int:
    from gpuconf.adopt.cluster_file import write

    _warn(write(edits))
    print(done if any(e.changed for e in edits) else "nothing to change")
    return ExitCode.OK


def _warn(diagnostics: Sequence[Diagnostic]) -> None:
    from gpuconf.diagnostics import report_text

    sys.stderr.write(report_text(diagnostics))
