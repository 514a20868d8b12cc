"""Go programs the node tests run, built once per machine from the Go modules a folder here pins
(its go.mod and go.sum, and any .go files) and kept under
~/.cache/gpuconf/<cache name>/<hash of those sources>/."""

from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path

import pytest
from control_plane.cluster import cache_root, go_binary, installed_go, locked

BUILD_FLAGS = ["-trimpath", "-ldflags", "-s -w"]


def build_key(source: Path) -> str:
    digest = hashlib.sha256("\0".join(BUILD_FLAGS).encode())
    for path in sorted(p for p in source.iterdir() if p.suffix in (".go", ".mod", ".sum")):
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


def build_program(
    source: Path, cache_name: str, name: str, package: str = ".", go: str | None = None
) -> Path:
    """The built program `name` (the Go package `package`, built in module `source`), building
    it first when these sources have none yet. Raises control_plane.cluster.ControlPlaneError
    when no Go is given and none can be found or fetched."""
    folder = cache_root().parent / cache_name / build_key(source)
    binary = folder / name
    with locked(folder.parent / f"{folder.name}.lock"):
        if binary.is_file():
            return binary
        folder.mkdir(parents=True, exist_ok=True)
        partial = folder / f"{name}.partial"
        result = subprocess.run(
            [go or go_binary(), "build", *BUILD_FLAGS, "-o", str(partial), package],
            cwd=source,
            env={**os.environ, "GOFLAGS": "-mod=mod"},
            capture_output=True,
            text=True,
            check=False,
        )
        if result.returncode != 0:
            raise AssertionError(f"go build {source} failed:\n{result.stdout}{result.stderr}")
        partial.rename(binary)
        return binary


def prebuilt_or_built(
    env: str, what: str, source: Path, cache_name: str, name: str, package: str = "."
) -> Path:
    """The program the variable `env` names (built from these sources elsewhere: a GPU machine
    has no Go), else `build_program` with this machine's own Go (no toolchain is fetched); skips
    where there is neither. The build (GOFLAGS=-mod=mod) fetches the modules go.sum pins through
    the Go module proxy when Go's module cache lacks them, and fails where the proxy cannot be
    reached: build the program elsewhere and set the variable there."""
    given = os.environ.get(env)
    if given:
        assert os.access(given, os.X_OK), f"{env}={given}: not an executable file"
        return Path(given)
    go = installed_go()
    if go is None:
        pytest.skip(
            f"no {what}: set {env}, or install Go to build it from tests/node/{source.name}/"
        )
    return build_program(source, cache_name, name, package, go)
