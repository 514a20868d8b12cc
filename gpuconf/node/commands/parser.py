"""`gpuconf node …`: the command line of the node runtime (the DaemonSet calls exactly this)."""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from gpuconf.errors import ArgumentParser

DEFAULT_PLUGIN_DIR = "/var/lib/kubelet/device-plugins"
DEFAULT_POD_RESOURCES_SOCKET = "/var/lib/kubelet/pod-resources/kubelet.sock"


def build_parser(prog: str = "gpuconf node") -> argparse.ArgumentParser:
    parser = ArgumentParser(prog=prog, description="The gpuconf node runtime.")
    commands = parser.add_subparsers(
        dest="command", required=True, metavar="COMMAND", parser_class=ArgumentParser
    )

    run = commands.add_parser("run", help="serve the kubelet device-plugin API for this node")
    run.add_argument("--config", required=True, help="node config file (from the pool's ConfigMap)")
    run.add_argument("--node-name", required=True, help="this node's Kubernetes name")
    run.add_argument(
        "--plugin-dir", default=DEFAULT_PLUGIN_DIR, help="kubelet device-plugin directory"
    )
    run.add_argument("--nvml", default="real", help="real, tegra[:DIR], auto, or fake:FILE")
    run.add_argument(
        "--pod-resources-socket",
        default=DEFAULT_POD_RESOURCES_SOCKET,
        help="the kubelet's PodResources socket (which devices running containers hold)",
    )
    run.add_argument(
        "--metrics-port",
        type=int,
        default=None,
        help="Prometheus metrics and /healthz port (0: off)",
    )

    apply = commands.add_parser(
        "apply-runtime", help="install the pool's container-runtime config on this host"
    )
    apply.add_argument("--config", required=True, help="node config file")
    apply.add_argument("--root", default="/", help="host root the config paths are under")
    apply.add_argument("--dry-run", action="store_true", help="print a diff, write nothing")

    check = commands.add_parser("check", help="compare declared and discovered GPU inventory")
    check.add_argument("--config", required=True, help="node config file")
    check.add_argument("--node-name", required=True, help="this node's Kubernetes name")
    check.add_argument("--nvml", default="real", help="real, tegra[:DIR], auto, or fake:FILE")
    check.add_argument(
        "--runtime-url",
        default=None,
        help="the running `gpuconf node run` to ask for pending changes "
        "(default: http://127.0.0.1:<metricsPort>)",
    )
    return parser


def main(argv: Sequence[str]) -> int:
    options = build_parser().parse_args(list(argv))
    if options.command == "run":
        from gpuconf.node.commands.run import run
    elif options.command == "apply-runtime":
        from gpuconf.node.commands.apply_runtime import run
    else:
        from gpuconf.node.commands.check import run
    return run(options)
