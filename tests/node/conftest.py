"""Fixtures for the node runtime's API calls: an HTTPS stand-in for its Node and the view of a
pod that reaches it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from in_pod import as_pod
from node_api import NODE, TOKEN, NodeApi, make_pki


@pytest.fixture(scope="session")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_pki(tmp_path_factory.mktemp("pki"))


@pytest.fixture
def node_api(pki: Path) -> Iterator[NodeApi]:
    with NodeApi(NODE, pki) as server:
        yield server


@pytest.fixture
def pod(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, node_api: NodeApi, pki: Path) -> Path:
    """In a pod whose API server is the stand-in; the service account folder."""
    ca = (pki / "ca.crt").read_bytes()
    return as_pod(monkeypatch, tmp_path / "serviceaccount", "127.0.0.1", node_api.port, TOKEN, ca)
