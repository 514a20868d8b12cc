"""A plain wheel works from anywhere; start-up stays light; layers are enforced by import-linter."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from builders import CLUSTERS, REPO, read_tree

HEAVY_MODULES = ("grpc", "grpclib", "pynvml", "kubernetes", "prometheus_client")


def _image_build_context(into: Path) -> Path:
    """What the Containerfile's build stage copies from the repository, and nothing else."""
    containerfile = (REPO / "Containerfile").read_text()
    into.mkdir()
    for *sources, destination in (
        line.split()[1:] for line in containerfile.splitlines() if re.match(r"COPY (?!--)", line)
    ):
        for source in sources:
            # Each COPY keeps the repository's layout: the build stage's paths are the repo's.
            lands_at = destination + Path(source).name if destination.endswith("/") else destination
            assert os.path.normpath(lands_at) == source, f"COPY {source} {destination}"
            if (REPO / source).is_dir():
                ignored = shutil.ignore_patterns("__pycache__")
                shutil.copytree(REPO / source, into / source, ignore=ignored)
            else:
                (into / source).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy(REPO / source, into / source)
    return into


@pytest.mark.slow
def test_the_wheel_ships_its_data_and_renders_from_another_directory(tmp_path: Path) -> None:
    """Built from the image's build context, so a file the Containerfile copies but the
    repository lacks, or one the package needs but the image leaves out, fails here."""
    wheels = tmp_path / "wheels"
    context = _image_build_context(tmp_path / "context")
    pip = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q"]
    subprocess.run(
        [*pip, "-w", str(wheels), str(context)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    (wheel,) = wheels.glob("gpuconf-*.whl")
    site = tmp_path / "site"
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(site)
    package = site / "gpuconf"
    assert (package / "gpus" / "catalog.yaml").is_file()
    assert (package / "py.typed").is_file()
    assert {p.name for p in (package / "schemas").iterdir()} >= {"cluster.schema.json"}
    shipped = {p.name for p in (REPO / "templates").iterdir()}
    assert {p.name for p in (package / "templates").iterdir()} == shipped
    assert (package / "compiler" / "templating" / "crds" / "README.md").is_file()
    compiled = package / "compiler" / "templating" / "compiled"
    assert (compiled / "index.json").is_file()
    assert (compiled / "resourcequota_yaml_j2.py").is_file()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    script = (
        "import sys, gpuconf.cli; "
        f"assert gpuconf.cli.__file__.startswith({str(site)!r}), gpuconf.cli.__file__; "
        f"sys.exit(gpuconf.cli.main(['render', {str(CLUSTERS / 'lab.yaml')!r}, '-o', 'out']))"
    )
    env = {**os.environ, "PYTHONPATH": str(site)}
    done = subprocess.run(
        [sys.executable, "-c", script],
        cwd=elsewhere,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    tree = read_tree(elsewhere / "out" / "lab")
    assert "kustomization.yaml" in tree
    assert b"/work/" not in b"".join(tree.values()), "an absolute path leaked into the output"


def test_compiling_never_imports_the_node_runtime_dependencies(tmp_path: Path) -> None:
    script = (
        "import sys\n"
        "import gpuconf.cli, gpuconf.compiler.pipeline\n"
        f"code = gpuconf.cli.main(['render', 'clusters', '-o', {str(tmp_path)!r}])\n"
        f"heavy = sorted(m for m in sys.modules if m.split('.')[0] in {HEAVY_MODULES!r})\n"
        "print('heavy:' + ','.join(heavy))\n"
        "sys.exit(code)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "heavy:", done.stdout


@pytest.mark.slow
def test_import_linter_contracts_hold() -> None:
    lint_imports = shutil.which("lint-imports", path=str(Path(sys.executable).parent))
    assert lint_imports, "lint-imports is part of the test extra"
    done = subprocess.run(
        [lint_imports], cwd=REPO, capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
