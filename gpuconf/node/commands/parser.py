"""`gpuconf node …`: the command line of the node runtime (the DaemonSet calls exactly this)."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from gpuconf.api.driver_upgrade import CONFIG_STATE_FILE
from gpuconf.api.node_facts import KUBELET_PLUGIN_DIR
from gpuconf.api.runtime_files import DRIVER_READY_MARKER, SETUP_READY_MARKER
from gpuconf.errors import ArgumentParser
from gpuconf.gpus.gfd_labels import MACHINE_TYPE_FILE

DEFAULT_PLUGIN_DIR = KUBELET_PLUGIN_DIR
DEFAULT_POD_RESOURCES_SOCKET = "/var/lib/kubelet/pod-resources/kubelet.sock"
DEFAULT_STATE_DIR = "/run/gpuconf"


def _tcp_port(text: str) -> int:
    """A --metrics-port value: argparse reports anything else as a usage error."""
    try:
        port = int(text)
    except ValueError:
        port = -1
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"a TCP port is 0 to 65535 (0: off), not {text!r}")
    return port


def build_parser(prog: str = "gpuconf node") -> ArgumentParser:
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
        "--state-dir",
        default=DEFAULT_STATE_DIR,
        help="where GPUs awaiting a reset and what Allocate handed out are remembered across "
        "restarts (tmpfs: a reboot clears it)",
    )
    run.add_argument(
        "--pod-resources-socket",
        default=DEFAULT_POD_RESOURCES_SOCKET,
        help="the kubelet's PodResources socket (which devices running containers hold)",
    )
    run.add_argument(
        "--metrics-port",
        type=_tcp_port,
        default=None,
        help="Prometheus metrics and /healthz port (0: off)",
    )

    setup = commands.add_parser(
        "setup",
        help="configure this host's container engine for GPUs, reload it, write the ready marker",
    )
    setup.add_argument("--config", required=True, help="node config file")
    setup.add_argument("--root", default="/", help="where the host's / is mounted")
    setup.add_argument("--dry-run", action="store_true", help="print the diff, write nothing")
    setup.add_argument(
        "--once", action="store_true", help="exit once ready instead of waiting for SIGTERM"
    )
    setup.add_argument(
        "--host-commands",
        choices=["chroot", "direct"],
        default="chroot",
        help="run host programs (systemctl, containerd --version, nvidia-ctk) chrooted into "
        "--root, or run the ones found under --root directly",
    )
    setup.add_argument("--proc", default="/proc", help="the host's /proc (the pod uses hostPID)")
    setup.add_argument(
        "--driver-timeout", type=float, default=0, help="seconds to wait for the driver (0: ever)"
    )
    setup.add_argument("--wait-interval", type=float, default=5.0, help=argparse.SUPPRESS)
    setup.add_argument(
        "--metrics-port", type=_tcp_port, default=0, help="Prometheus metrics (0: off)"
    )

    wait = commands.add_parser("wait", help="wait until every FILE exists (init containers)")
    wait.add_argument("files", nargs="+", metavar="FILE")
    wait.add_argument("--timeout", type=float, default=0, help="seconds (0: wait forever)")
    wait.add_argument("--interval", type=float, default=2.0, help=argparse.SUPPRESS)

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
    check.add_argument(
        "--root",
        default=None,
        help="also check the host's engine config, with the host's / here (as setup sees it): "
        "is it as setup leaves it, and does a file loading after setup's undo it?",
    )
    check.add_argument(
        "--host-commands",
        choices=["chroot", "direct"],
        default="chroot",
        help="with --root: run host programs chrooted into it, or the ones under it directly",
    )

    labels = commands.add_parser(
        "labels", help="print the labels this node would publish (GFD's and gpuconf's)"
    )
    labels.add_argument("--config", required=True, help="node config file")
    labels.add_argument("--node-name", required=True, help="this node's Kubernetes name")
    labels.add_argument("--nvml", default="real", help="real, tegra[:DIR], auto, or fake:FILE")
    labels.add_argument(
        "--machine-type-file",
        default=MACHINE_TYPE_FILE,
        help="where the machine type is read from (GFD's default)",
    )

    drain = commands.add_parser(
        "driver-drain",
        help="before a driver change: cordon this node and evict the pods holding its GPUs",
    )
    drain.add_argument("--config", required=True, help="node config file (the pool's resources)")
    drain.add_argument("--node-name", required=True, help="this node's Kubernetes name")
    drain.add_argument(
        "--timeout",
        type=float,
        default=600,
        help="seconds to keep retrying evictions a PodDisruptionBudget refuses (0: for ever)",
    )
    drain.add_argument("--interval", type=float, default=5.0, help=argparse.SUPPRESS)
    drain.add_argument(
        "--sys-module",
        default="/sys/module",
        help="where the kernel lists its modules (no nvidia module: nothing to evict)",
    )
    drain.add_argument(
        "--config-digest",
        default="",
        help="DRIVER_CONFIG_DIGEST of the driver to install (equal to the loaded one's: no drain)",
    )
    drain.add_argument(
        "--state-file",
        default=CONFIG_STATE_FILE,
        help="where the driver container stores the loaded driver's digest",
    )
    drain.add_argument(
        "--host-root",
        default="/host",
        help="the host's root (a driver installed there: not gpuconf's to drain)",
    )

    uncordon = commands.add_parser(
        "driver-uncordon",
        help="after a driver change: once validated and set up, label the version and uncordon",
    )
    uncordon.add_argument("--node-name", required=True, help="this node's Kubernetes name")
    uncordon.add_argument(
        "--version", required=True, help="the driver version the marker must name (declared)"
    )
    uncordon.add_argument(
        "--driver-ready",
        default=DRIVER_READY_MARKER,
        help="the marker the driver's startup probe writes, with nvidia-smi's versions",
    )
    uncordon.add_argument(
        "--setup-ready", default=SETUP_READY_MARKER, help="the marker setup writes"
    )
    uncordon.add_argument(
        "--done-file", default=None, help="write the version here when done (a startup probe's)"
    )
    uncordon.add_argument(
        "--then-sleep", action="store_true", help="stay up afterwards as `sleep infinity`"
    )
    uncordon.add_argument("--interval", type=float, default=2.0, help=argparse.SUPPRESS)
    return parser


_PATH_OPTIONS = (
    "config", "root", "proc", "plugin_dir", "state_dir", "pod_resources_socket",
    "machine_type_file", "sys_module", "state_file", "host_root", "driver_ready", "setup_ready",
    "done_file",
)  # fmt: skip
_NVML_WITH_PATH = ("fake:", "tegra:")


def _anchor(options: argparse.Namespace, base: Path) -> None:
    """`gpuconf -C DIR node …`: relative paths given are relative to DIR, as for the compiler's
    commands (absolute ones, every default among them, stay)."""
    for name in _PATH_OPTIONS:
        value = getattr(options, name, None)
        if isinstance(value, str):
            setattr(options, name, str(base / value))
    if getattr(options, "files", None):
        options.files = [str(base / path) for path in options.files]
    nvml = getattr(options, "nvml", None)
    for prefix in _NVML_WITH_PATH:
        if isinstance(nvml, str) and nvml.startswith(prefix) and len(nvml) > len(prefix):
            options.nvml = prefix + str(base / nvml[len(prefix) :])


def main(argv: Sequence[str], directory: Path | None = None) -> int:
    """Run a node command; ``directory``: the -C DIR given before `node`."""
    options = build_parser().parse_command_line(argv)
    if directory is not None:
        _anchor(options, directory.absolute())
    if options.command == "run":
        from gpuconf.node.commands.run import run
    elif options.command == "setup":
        from gpuconf.node.commands.setup import run
    elif options.command == "wait":
        from gpuconf.node.commands.wait import run
    elif options.command == "labels":
        from gpuconf.node.commands.labels import run
    elif options.command == "driver-drain":
        from gpuconf.node.commands.driver_drain import run
    elif options.command == "driver-uncordon":
        from gpuconf.node.commands.driver_uncordon import run
    else:
        from gpuconf.node.commands.check import run
    return run(options)
