"""The adoption commands on the command line: fmt, migrate, nodes, status, and import
(import_commands.py).

Only argparse is imported at start-up: `gpuconf validate` builds the same parser and must not
pay for ruamel.yaml or the Kubernetes client. Each command imports its modules when it runs."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

from gpuconf.adopt.command_io import (
    check_or_write,
    cluster_access,
    read_cluster_file,
    read_cluster_files,
    validated_cluster,
    written,
)
from gpuconf.adopt.import_commands import add_import_parser, run_import
from gpuconf.api.node_facts import MAX_GPUS_PER_NODE
from gpuconf.errors import ArgumentParser, Commands, ExitCode, UsageError

Command = Callable[[argparse.Namespace], int]


def _gpu_count(text: str) -> int:
    """--gpus N, held to what a node may have before a list of N GPUs is built."""
    try:
        count = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text}: not a whole number") from None
    if not 1 <= count <= MAX_GPUS_PER_NODE:
        raise argparse.ArgumentTypeError(f"{text}: a node has 1 to {MAX_GPUS_PER_NODE} GPUs")
    return count


def _gpu_uuid(text: str) -> str:
    """--uuid, held to the UUID form a node's GPU list takes, new node or declared one alike."""
    import re

    from gpuconf.api.base import GPU_UUID

    if not re.match(GPU_UUID, text):
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a GPU UUID: write it as nvidia-smi -L prints it, "
            "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx (lowercase hex)"
        )
    return text


def add_parsers(commands: Commands) -> dict[str, Command]:
    commands.add_command(
        "fmt",
        _fmt_options,
        help="write cluster files in canonical style, keeping comments and order; every file "
        "or none",
    )
    commands.add_command(
        "migrate",
        _migrate_options,
        help="rewrite cluster files at an older apiVersion at the current one",
    )
    commands.add_command(
        "nodes", _nodes_options, help="declare or retire nodes (and their GPU UUIDs)"
    )
    commands.add_command(
        "status", _status_options, help="compare a live cluster with its cluster file (read-only)"
    )
    add_import_parser(commands)
    return {
        "fmt": _fmt,
        "migrate": _migrate,
        "nodes": _nodes,
        "status": _status,
        "import": run_import,
    }


def _fmt_options(fmt: ArgumentParser) -> None:
    fmt.add_argument(
        "paths", nargs="*", type=Path, metavar="PATH", help="files or folders (default: clusters/)"
    )
    fmt.add_argument(
        "--check", action="store_true", help="write nothing; exit 1 with a diff when not formatted"
    )


def _migrate_options(migrate: ArgumentParser) -> None:
    migrate.add_argument(
        "paths", nargs="*", type=Path, metavar="PATH", help="files or folders (default: clusters/)"
    )
    migrate.add_argument(
        "--check",
        action="store_true",
        help="write nothing; exit 1 with a diff when some would change",
    )


def _nodes_options(nodes: ArgumentParser) -> None:
    actions = nodes.add_subparsers(
        dest="action", required=True, metavar="ACTION", parser_class=ArgumentParser
    )
    add = actions.add_parser("add", help="declare nodes in a pool")
    add.add_argument("file", type=Path, metavar="FILE", help="the cluster file")
    add.add_argument("pool", metavar="POOL", help="the pool the nodes join")
    add.add_argument("nodes", nargs="+", metavar="NODE", help="Kubernetes Node names")
    add.add_argument(
        "--gpus",
        type=_gpu_count,
        default=None,
        metavar="N",
        help="GPUs per node (default: the pool's gpus.count; a declared node's GPU list is its"
        " whole inventory, so it may differ from the pool's)",
    )
    add.add_argument(
        "--uuid",
        dest="uuids",
        type=_gpu_uuid,
        action="append",
        default=[],
        metavar="UUID",
        help="the GPUs' UUIDs in index order (one node only); `nvidia-smi -L` lists them",
    )
    remove = actions.add_parser("remove", help="retire declared nodes")
    remove.add_argument("file", type=Path, metavar="FILE", help="the cluster file")
    remove.add_argument("nodes", nargs="+", metavar="NODE", help="Kubernetes Node names")


def _status_options(status: ArgumentParser) -> None:
    status.add_argument("cluster", help="a cluster file, or the name of a cluster in clusters/")
    cluster_access(status)
    status.add_argument(
        "-o",
        "--output",
        dest="output_format",
        choices=("text", "json"),
        default="text",
        help="text table or JSON",
    )


def _fmt(options: argparse.Namespace) -> int:
    from gpuconf.adopt.fmt import formatted
    from gpuconf.compiler.pipeline import find_cluster_files

    files = find_cluster_files(options.paths or [options.base / "clusters"], options.base)
    edits = [formatted(file) for file in read_cluster_files(options, files)]
    changed = [e.shown for e in edits if e.changed]
    done = f"formatted {len(changed)} file(s): {', '.join(changed)}"
    return check_or_write(options, edits, done, "not formatted")


def _migrate(options: argparse.Namespace) -> int:
    from gpuconf.adopt.migrate import migrated
    from gpuconf.compiler.pipeline import find_cluster_files

    files = find_cluster_files(options.paths or [options.base / "clusters"], options.base)
    edits = []
    for file in read_cluster_files(options, files):
        edit, changes = migrated(file)
        edits.append(edit)
        for change in changes:
            print(f"{edit.shown}: {change}", file=sys.stderr)
    changed = [e.shown for e in edits if e.changed]
    done = f"migrated {len(changed)} file(s): {', '.join(changed)}"
    return check_or_write(options, edits, done, "not migrated")


def _nodes(options: argparse.Namespace) -> int:
    from gpuconf.adopt import nodes

    file = read_cluster_file(options, options.file)
    # A name given twice is one node: a script's list may repeat it.
    names = list(dict.fromkeys(options.nodes))
    if options.action == "add":
        if options.uuids and len(options.nodes) > 1:
            raise UsageError("--uuid declares the GPUs of one node: add one node at a time")
        added = nodes.add(file, options.pool, names, options.gpus, options.uuids)
        for name in added.unchanged:
            print(
                f"node {name} is already declared as given in pool {options.pool} of {file.shown}"
            )
        edit = added.edit
        done = f"declared {len(added.new)} node(s) in pool {options.pool} of {file.shown}"
    else:
        edit = nodes.remove(file, names)
        done = f"retired {len(names)} node(s) from {file.shown}"
    return written([edit], done)


def _status(options: argparse.Namespace) -> int:
    from gpuconf.adopt.live.cluster_api import connect
    from gpuconf.adopt.live.status import rendered_quotas, status

    validated = validated_cluster(options, options.cluster)
    kubeconfig = options.base / options.kubeconfig if options.kubeconfig else None
    api = connect(kubeconfig, options.context)
    dra = api.dra_objects() if validated.cluster.spec.allocation == "dra" else None
    report = status(validated, api.nodes(), api.resource_quotas(), dra, rendered_quotas(validated))
    sys.stdout.write(report.as_json() if options.output_format == "json" else report.as_text())
    return ExitCode.INVALID_INPUT if report.problems() else ExitCode.OK
