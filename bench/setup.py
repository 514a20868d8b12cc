"""Benchmark `gpuconf node setup` on 1 MB host configs: peak memory beside the pod's limit.

Runs the real command in a child process per case (containerd main file with a 1 MB CRI
table, which the version-2 drop-in copies whole; a 1 MB daemon.json), once as --dry-run and
once for real, and prints the child's peak RSS beside the setup container's 128 MiB limit
and the floor of importing setup's modules alone.
Run: .venv/bin/python bench/setup.py
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import tempfile
from pathlib import Path

LIMIT_MIB = 128
BINARY = "/usr/bin/nvidia-container-runtime"
NODE_CONFIG = """\
apiVersion: gpuconf.dev/v1alpha1
kind: NodeConfig
cluster: bench
pool: gpus
runtime: {{engine: {engine}, setAsDefault: true, binaryPath: {binary}, restart: none}}
health: {{ignoredXids: [], recoverAfterSeconds: 0}}
inventory: {{default: []}}
"""
MEASURE = """\
import resource, sys
from gpuconf.cli import main
code = main(sys.argv[1:])
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr)
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
    while len(text) + sum(map(len, mirrors)) < size:
        mirrors.append(
            f'[{cri}.registry.mirrors."mirror-{i}.example.com"]\n'
            f'endpoint = ["https://mirror-{i}.example.com", "https://backup-{i}.example.com"]\n'
        )
        i += 1
    return text + "".join(mirrors)


def daemon_json(size: int) -> str:
    labels = []
    while len(json.dumps(labels)) < size:
        labels.append(f"rack=r{len(labels):07d}")
    return json.dumps({"log-driver": "journald", "labels": labels}, indent=2)


FLOOR = """\
import resource, sys
import gpuconf.node.commands.setup
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr)
"""


def peak_mib(argv: list[str], script: str = MEASURE) -> float:
    result = subprocess.run(
        [sys.executable, "-c", script, *argv], capture_output=True, text=True, check=False
    )
    if result.returncode != 0:
        raise SystemExit(f"setup failed: {result.stderr}")
    return int(result.stderr.strip().splitlines()[-1]) / 1024


def case(folder: Path, engine: str, path: str, text: str) -> list[float]:
    root = folder / engine
    target = root / path.lstrip("/")
    target.parent.mkdir(parents=True)
    target.write_text(text)
    (root / BINARY.lstrip("/")).parent.mkdir(parents=True, exist_ok=True)
    (root / BINARY.lstrip("/")).write_text("")
    (folder / "proc" / "driver" / "nvidia").mkdir(parents=True, exist_ok=True)
    (folder / "proc" / "driver" / "nvidia" / "version").write_text("bench\n")
    config = folder / f"{engine}.yaml"
    config.write_text(NODE_CONFIG.format(engine=engine, binary=BINARY))
    argv = ["node", "setup", "--config", str(config), "--root", str(root)]
    argv += ["--host-commands", "direct", "--proc", str(folder / "proc")]
    return [peak_mib([*argv, "--dry-run"]), peak_mib([*argv, "--once"])]


def main() -> None:
    floor = peak_mib([], FLOOR)
    print(f"floor (setup's imports alone): {floor:.0f} MiB; setup container limit: {LIMIT_MIB} MiB")
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        for engine, path, text in (
            ("containerd", "/etc/containerd/config.toml", containerd_main(1_000_000)),
            ("docker", "/etc/docker/daemon.json", daemon_json(1_000_000)),
        ):
            dry, real = case(folder, engine, path, text)
            print(
                f"{engine}: {len(text) / 1e6:.1f} MB config: dry-run {dry:.0f} MiB, "
                f"setup {real:.0f} MiB peak RSS (limit {LIMIT_MIB} MiB)"
            )
    print(f"(this process: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB)")


if __name__ == "__main__":
    main()
