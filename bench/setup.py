"""Benchmark `gpuconf node setup` on large host configs: peak memory beside the pod's limit.

Runs the real command in a child process per case (a containerd main file whose CRI table,
which the version-2 drop-in copies whole, is 1, 2, 4 or 16 MiB; a daemon.json of those
sizes), once as --dry-run and once for real, and prints the child's peak RSS beside the
setup container's 128 MiB limit and the floor of importing setup's modules alone, with
whether setup merged the file or refused it (past the size it reads).
Run: .venv/bin/python bench/setup.py [--sizes 1,2,4,16]
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
from pathlib import Path

LIMIT_MIB = 128
BINARY = "/usr/bin/nvidia-container-runtime"
NODE_CONFIG = """\
apiVersion: gpuconf.dev/v1alpha2
kind: NodeConfig
cluster: bench
pool: gpus
runtime: {{engine: {engine}, setAsDefault: true, binaryPath: {binary}, restart: none}}
health: {{ignoredXids: [], recoverAfterSeconds: 0}}
inventory: {{default: []}}
"""
# VmHWM, the child's own peak: ru_maxrss would carry over this parent's peak across fork and
# exec (Linux keeps it in the signal struct), and this process holds the large texts.
PEAK = "print(next(l.split()[1] for l in open('/proc/self/status') if l.startswith('VmHWM')), file=sys.stderr)"
MEASURE = f"""\
import sys
from gpuconf.cli import main
try:
    code = main(sys.argv[1:])
finally:
    {PEAK}
sys.exit(code)
"""


def containerd_main(size: int) -> str:
    cri = 'plugins."io.containerd.grpc.v1.cri"'
    text = (
        f'version = 2\n[{cri}]\nsandbox_image = "registry.k8s.io/pause:3.9"\n'
        f'[{cri}.containerd.runtimes.runc]\nruntime_type = "io.containerd.runc.v2"\n'
        f"[{cri}.containerd.runtimes.runc.options]\nSystemdCgroup = true\n"
    )
    mirrors = []
    i = 0
    length = len(text)
    while length < size:
        mirrors.append(
            f'[{cri}.registry.mirrors."mirror-{i}.example.com"]\n'
            f'endpoint = ["https://mirror-{i}.example.com", "https://backup-{i}.example.com"]\n'
        )
        length += len(mirrors[-1])
        i += 1
    return text + "".join(mirrors)


def daemon_json(size: int) -> str:
    label_size = len('    "rack=r0000000",\n')  # one line of the indented list
    labels = [f"rack=r{i:07d}" for i in range(size // label_size + 1)]
    return json.dumps({"log-driver": "journald", "labels": labels}, indent=2)


FLOOR = f"""\
import sys
import gpuconf.node.commands.setup
{PEAK}
"""


def peak_mib(argv: list[str], script: str = MEASURE) -> tuple[float, str]:
    """The child's peak RSS, and "merged" or "refused" (exit 1 with a message)."""
    result = subprocess.run(
        [sys.executable, "-c", script, *argv], capture_output=True, text=True, check=False
    )
    if result.returncode not in (0, 1):
        raise SystemExit(f"setup failed: {result.stderr}")
    outcome = "merged" if result.returncode == 0 else "refused"
    return int(result.stderr.strip().splitlines()[-1]) / 1024, outcome


def case(folder: Path, engine: str, path: str, text: str) -> list[tuple[float, str]]:
    root = folder / engine / str(len(text))
    target = root / path.lstrip("/")
    target.parent.mkdir(parents=True)
    target.write_text(text)
    (root / BINARY.lstrip("/")).parent.mkdir(parents=True, exist_ok=True)
    (root / BINARY.lstrip("/")).write_text("")
    proc = folder / "proc" / "driver" / "nvidia"
    proc.mkdir(parents=True, exist_ok=True)
    (proc / "version").write_text("bench\n")
    config = folder / f"{engine}-{len(text)}.yaml"
    config.write_text(NODE_CONFIG.format(engine=engine, binary=BINARY))
    argv = ["node", "setup", "--config", str(config), "--root", str(root)]
    argv += ["--host-commands", "direct", "--proc", str(folder / "proc")]
    return [peak_mib([*argv, "--dry-run"]), peak_mib([*argv, "--once"])]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1,2,4,16", help="host file sizes in MiB")
    sizes = [float(size) for size in parser.parse_args().sizes.split(",")]
    floor, _ = peak_mib([], FLOOR)
    print(f"floor (setup's imports alone): {floor:.0f} MiB; setup container limit: {LIMIT_MIB} MiB")
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        for size in sizes:
            size_bytes = int(size * 2**20)
            for engine, path, text in (
                ("containerd", "/etc/containerd/config.toml", containerd_main(size_bytes)),
                ("docker", "/etc/docker/daemon.json", daemon_json(size_bytes)),
            ):
                (dry, dry_outcome), (real, outcome) = case(folder, engine, path, text)
                verdict = "ok" if max(dry, real) <= LIMIT_MIB else "OVER"
                print(
                    f"{engine:<10} {len(text) / 2**20:5.1f} MiB file: dry-run {dry:4.0f} MiB "
                    f"({dry_outcome}), setup {real:4.0f} MiB ({outcome}) peak RSS; limit "
                    f"{LIMIT_MIB} MiB {verdict}"
                )
    print(f"(this process: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB)")


if __name__ == "__main__":
    main()
