"""Render a large generated fleet through the real CLI path and print wall time and peak memory.

2,000 nodes in 40 pools (10 of them declared node by node, with UUIDs), 12 classes,
500 namespaces with quotas. Figures only, no assertions: `make bench`.
"""

from __future__ import annotations

import contextlib
import io
import resource
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML

from gpuconf.cli import main

POOLS = 40
NODES_PER_POOL = 50
DECLARED_EVERY = 4
CLASSES = 12
NAMESPACES = 500
MODELS = ["Tesla-T4", "L4", "A10", "L40S", "A100-SXM4-80GB", "H100-SXM5-80GB"]
ENGINES = ["docker", "containerd", "k3s"]
GPUS_PER_NODE = 8


def _uuid(pool: int, node: int, gpu: int) -> str:
    return f"GPU-{pool:08x}-{node:04x}-4000-8000-{gpu:012x}"


def _pool(i: int) -> dict[str, Any]:
    pool: dict[str, Any] = {
        "name": f"pool-{i:02d}",
        "runtime": {"engine": ENGINES[i % len(ENGINES)]},
        "driver": {"version": "550.90.07", "install": i % 5 == 0},
        "gpus": {"model": MODELS[i % len(MODELS)], "count": GPUS_PER_NODE},
        "tolerations": [{"key": "example.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
    }
    if i % DECLARED_EVERY == 0:
        pool["nodes"] = [
            {
                "name": f"pool-{i:02d}-node-{n:03d}",
                "gpus": [{"index": g, "uuid": _uuid(i, n, g)} for g in range(GPUS_PER_NODE)],
            }
            for n in range(NODES_PER_POOL)
        ]
    else:
        pool["size"] = NODES_PER_POOL
    return pool


def _classes() -> list[dict[str, Any]]:
    """Every pool belongs to one class for GPUs 0-3 and another for GPUs 4-7."""
    classes = []
    for c in range(CLASSES):
        pools = [f"pool-{i:02d}" for i in range(POOLS) if i % (CLASSES // 2) == c // 2]
        half = [0, 1, 2, 3] if c % 2 == 0 else [4, 5, 6, 7]
        sharing: dict[str, Any] = (
            {"strategy": "time-slicing", "replicas": 4} if c % 4 == 0 else {"strategy": "none"}
        )
        classes.append(
            {
                "name": f"class-{c:02d}",
                "select": {"pools": pools, "indices": half},
                "sharing": sharing,
            }
        )
    return classes


def fleet() -> dict[str, Any]:
    return {
        "apiVersion": "gpuconf.dev/v1alpha1",
        "kind": "Cluster",
        "metadata": {"name": "bench"},
        "spec": {
            "kubernetes": {"version": "1.34"},
            "nodePools": [_pool(i) for i in range(POOLS)],
            "resourceClasses": _classes(),
            "quotas": [
                {
                    "namespace": f"team-{n:03d}",
                    "classes": {f"class-{n % CLASSES:02d}": 2, f"class-{(n + 5) % CLASSES:02d}": 1},
                }
                for n in range(NAMESPACES)
            ],
        },
    }


def _timed(argv: list[str]) -> float:
    start = time.perf_counter()
    with (
        contextlib.redirect_stdout(io.StringIO()),
        contextlib.redirect_stderr(io.StringIO()) as err,
    ):
        code = main(argv)
    elapsed = time.perf_counter() - start
    if code != 0:
        sys.exit(f"gpuconf {' '.join(argv)} exited {code}:\n{err.getvalue()}")
    return elapsed


def run() -> None:
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        cluster = root / "bench.yaml"
        with cluster.open("w", encoding="utf-8") as handle:
            YAML(typ="safe", pure=True).dump(fleet(), handle)
        size_kib = cluster.stat().st_size / 1024
        validate_s = _timed(["validate", str(cluster)])
        render_s = _timed(["render", str(cluster), "-o", str(root / "out")])
        files = sum(1 for p in (root / "out").rglob("*") if p.is_file())
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"fleet: {POOLS} pools, {POOLS * NODES_PER_POOL} nodes, {CLASSES} classes, "
          f"{NAMESPACES} namespaces; cluster file {size_kib:.0f} KiB; {files} files rendered")  # fmt: skip
    print(f"validate: {validate_s:.2f} s")
    print(f"render (load, validate, plan, render, write): {render_s:.2f} s")
    print(f"total: {validate_s + render_s:.2f} s")
    print(f"peak memory (max RSS): {peak_mib:.0f} MiB")


if __name__ == "__main__":
    run()
