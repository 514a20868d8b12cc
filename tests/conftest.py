"""Shared fixtures: the repository's example clusters, compiled once in memory, and the real
control plane (tests/control_plane) for tests that need kube-apiserver."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="session")
def compiled_examples():  # type: ignore[no-untyped-def]
    """Every example in clusters/, compiled in memory from the repository root."""
    from gpuconf.compiler.pipeline import compile_paths

    compiled = compile_paths([REPO / "clusters"], relative_to=REPO)
    assert compiled.ok, [d.as_text() for d in compiled.diagnostics]
    return compiled


@pytest.fixture(scope="session")
def kubeconfig() -> Iterator[Path]:
    """The admin kubeconfig of a real etcd + kube-apiserver + kube-controller-manager on
    127.0.0.1: `make test`'s (GPUCONF_TEST_KUBECONFIG), or one this run starts and stops.
    Never skips: without Go to build it, the tests that need it fail and say so."""
    from control_plane.cluster import ControlPlaneError, for_tests

    try:
        with for_tests() as path:
            yield path
    except ControlPlaneError as error:
        pytest.fail(f"the test control plane: {error}", pytrace=False)


@pytest.fixture
def api_server(kubeconfig: Path):  # type: ignore[no-untyped-def]
    """The control plane as the admin (control_plane.server.Server), held alone: the tests
    that use it run one at a time across pytest-xdist's workers (a file lock beside the
    kubeconfig), so each may set up the objects it needs and must remove them again."""
    from control_plane.cluster import locked
    from control_plane.server import Server

    with locked(kubeconfig.parent / "tests.lock"):
        yield Server.from_kubeconfig(kubeconfig)
