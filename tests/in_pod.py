"""What a container sees of its cluster, for tests of gpuconf's in-cluster calls
(gpuconf/node/in_cluster.py): the service host and port the kubelet puts in its environment,
and the service account folder (token, ca.crt) it mounts, here in a test's own folder."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest
import yaml

from gpuconf.node import in_cluster


def as_pod(
    monkeypatch: pytest.MonkeyPatch, folder: Path, host: str, port: int, token: str, ca: bytes
) -> Path:
    """Set up the pod's view; returns the service account folder (rewrite its token to rotate
    it)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "token").write_text(token, encoding="utf-8")
    (folder / "ca.crt").write_bytes(ca)
    monkeypatch.setattr(in_cluster, "SERVICE_ACCOUNT_DIR", folder)
    monkeypatch.setenv(in_cluster.HOST_ENV, host)
    monkeypatch.setenv(in_cluster.PORT_ENV, str(port))
    return folder


def as_pod_of(monkeypatch: pytest.MonkeyPatch, folder: Path, kubeconfig: Path, token: str) -> Path:
    """A pod of the cluster an admin kubeconfig reaches, holding `token`."""
    config = yaml.safe_load(kubeconfig.read_text(encoding="utf-8"))
    cluster = config["clusters"][0]["cluster"]
    host, port = cluster["server"].removeprefix("https://").rsplit(":", 1)
    ca = base64.b64decode(cluster["certificate-authority-data"])
    return as_pod(monkeypatch, folder, host, int(port), token, ca)
