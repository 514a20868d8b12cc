"""Helpers the compiler tests share: where things are, an in-process CLI runner, tree reading."""

from __future__ import annotations

import contextlib
import io
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CLUSTERS = REPO / "clusters"
RENDERED = REPO / "rendered"
CASES = REPO / "tests" / "cases"
EXAMPLES = sorted(p.stem for p in CLUSTERS.glob("*.yaml"))


@dataclass(frozen=True)
class CliResult:
    code: int
    out: str
    err: str


def run_cli(*argv: str) -> CliResult:
    """Run `gpuconf ARGV…` in this process, as a user would, capturing what it prints."""
    from gpuconf.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return CliResult(int(code), out.getvalue(), err.getvalue())


@contextlib.contextmanager
def working_directory(path: Path) -> Iterator[None]:
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(path)
        yield


def read_tree(folder: Path) -> dict[str, bytes]:
    return {
        p.relative_to(folder).as_posix(): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def manifest_paths(tree: dict[str, bytes]) -> list[str]:
    """The Kubernetes manifests of a rendered cluster: what its kustomization.yaml lists."""
    from ruamel.yaml import YAML

    kustomization = YAML(typ="safe", pure=True).load(tree["kustomization.yaml"])
    return list(kustomization["resources"])


def compile_folder(folder: Path, *names: str):  # type: ignore[no-untyped-def]
    """Compile cluster files in `folder` (all of them when no names are given), in memory."""
    from gpuconf.compiler.pipeline import compile_paths

    with working_directory(folder):
        return compile_paths([Path(n) for n in names] or [Path(".")])
