"""Which configuration `gpuconf status` and `gpuconf import cluster` use, in kubectl's order: a
kubeconfig wherever one is ($KUBECONFIG, ~/.kube/config), a pod's service account only without."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuconf.adopt.live import cluster_api


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1")
    return tmp_path


def test_in_a_pod_without_a_kubeconfig_the_service_account_is_used(home: Path) -> None:
    assert cluster_api._in_pod_without_kubeconfig()


def test_a_kubeconfig_in_home_wins_over_the_service_account(home: Path) -> None:
    (home / ".kube").mkdir()
    (home / ".kube" / "config").write_text("{}")
    assert not cluster_api._in_pod_without_kubeconfig()
    assert cluster_api._kubeconfig_files(None) == str(home / ".kube" / "config")


def test_kubeconfig_lists_are_passed_whole_for_the_client_to_merge(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first, second = home / "a", home / "b"
    second.write_text("{}")
    monkeypatch.setenv("KUBECONFIG", f"{first}:{second}")
    assert not cluster_api._in_pod_without_kubeconfig()
    assert cluster_api._kubeconfig_files(None) == f"{first}:{second}"


def test_outside_a_pod_the_kubeconfig_is_used_even_when_missing(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST")
    assert not cluster_api._in_pod_without_kubeconfig()
