"""`gpuconf explain --host`: per pool, what setup writes on the hosts and how it reloads the engine."""

from __future__ import annotations

from builders import CLUSTERS, run_cli


def test_each_pool_shows_its_files_reload_and_marker() -> None:
    result = run_cli("explain", "--host", "fleet", cwd=CLUSTERS.parent)
    assert result.code == 0, result.err
    pools = result.out.split("\n\npool ")[1:]
    assert [p.split(" ", 1)[0] for p in pools] == ["t4", "a100", "h100", "l4"]
    t4, a100, _, l4 = pools
    assert "writes       /etc/docker/daemon.json: merged" in t4
    assert "reload       SIGHUP to dockerd" in t4
    assert "waits for    /run/nvidia/validations/driver-ready" in a100
    assert 'nvidia-container-cli.root = "/run/nvidia/driver"' in a100
    assert "reload       none: k3s reads its config at start" in l4
    assert all("ready        /run/gpuconf/setup-ready" in p for p in pools)


def test_without_host_explain_still_prints_the_capacity_table() -> None:
    result = run_cli("explain", "lab", cwd=CLUSTERS.parent)
    assert result.code == 0
    assert "what `gpuconf node setup` does" not in result.out
    assert result.out.startswith("cluster lab")
