"""`gpuconf import nvidia-chart|gpu-operator|cluster|quotas`: cluster files written from what a
team runs today. argparse only at start-up; each importer loads when it runs."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from gpuconf.adopt.command_io import (
    STDIN_HELP,
    StandardInput,
    cluster_access,
    input_file,
    read_cluster_file,
    read_inputs,
    validated_cluster,
    warn,
    written,
)
from gpuconf.errors import ArgumentParser, Commands, ExitCode, UsageError, display_path

if TYPE_CHECKING:
    from gpuconf.diagnostics import Diagnostic


def add_import_parser(commands: Commands) -> None:
    commands.add_command(
        "import",
        _import_options,
        help="write a cluster file from NVIDIA's chart, ResourceQuotas or a live cluster",
    )


def _import_options(importing: ArgumentParser) -> None:
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
            type=input_file,
            metavar="VALUES" if first == "values" else "CLUSTERPOLICY",
            help=("the values file given to helm" if first == "values" else "its manifest")
            + f" {STDIN_HELP}",
        )
        chart.add_argument(
            "configs",
            nargs="*",
            type=input_file,
            metavar="CONFIG",
            help="the plugin's ConfigMap (config.name), or config files (named by file name) "
            + STDIN_HELP,
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
    cluster_access(live)
    _new_cluster_options(live, kubernetes_default=None)
    quotas = sources.add_parser(
        "quotas", help="the GPU lines of ResourceQuotas, into a cluster file's spec.quotas"
    )
    quotas.add_argument(
        "quotas",
        nargs="+",
        type=input_file,
        metavar="RESOURCEQUOTA",
        help=f"ResourceQuota manifests {STDIN_HELP}",
    )
    quotas.add_argument(
        "--into", type=Path, required=True, metavar="FILE", help="the cluster file to edit"
    )


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


def run_import(options: argparse.Namespace) -> int:
    if options.source == "quotas":
        return _import_quotas(options)
    if options.source == "cluster":
        return _import_cluster(options)
    from gpuconf.adopt.cluster_file import new_file
    from gpuconf.adopt.importers.cluster_document import cluster_document
    from gpuconf.adopt.importers.nvidia_chart import import_chart, parse_gpus
    from gpuconf.adopt.importers.sources import documents, one

    target, shown = _new_target(options)
    first = options.values if options.source == "nvidia-chart" else options.policy
    first_input, *config_inputs = read_inputs(options, [first, *options.configs])
    values = one(*first_input)
    policy_left_out: list[Diagnostic] = []
    engine = None
    if options.source == "gpu-operator":
        from gpuconf.adopt.importers import gpu_operator

        policy = values
        values, policy_left_out = gpu_operator.as_chart_values(policy)
        engine = gpu_operator.engine(policy)
    configs = [
        (source, None if isinstance(path, StandardInput) else path)
        for path, (text, shown) in zip(options.configs, config_inputs, strict=True)
        for source in documents(text, shown)
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
    warn(imported.left_out)
    written([new_file(target, shown, document)], f"wrote {shown}")
    if imported.left_out:
        print(
            f"{len(imported.left_out)} setting(s) not imported: listed above and in the file's header"
        )
    return ExitCode.OK


def _new_target(options: argparse.Namespace) -> tuple[Path, str]:

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
    return written([new_file(target, shown, document)], f"wrote {shown}")


def _import_quotas(options: argparse.Namespace) -> int:
    from gpuconf.adopt.cluster_file import edited
    from gpuconf.adopt.importers.quotas import import_quotas
    from gpuconf.adopt.importers.sources import documents

    inputs = read_inputs(options, options.quotas)
    file = read_cluster_file(options, options.into)  # a file: no cluster is looked up by name
    validated = validated_cluster(
        options, str(options.into), with_warnings=False
    )  # the edit is checked anew
    sources = [source for text, shown in inputs for source in documents(text, shown)]
    left_out = import_quotas(file, validated, sources)
    warn(left_out)
    return written([edited(file)], f"wrote the quotas into {file.shown}")
