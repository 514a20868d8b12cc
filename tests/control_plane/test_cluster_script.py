"""`make cluster-up` / `make cluster-down` (tests/control_plane/cluster.py): up is idempotent
and serves on loopback only, down stops every process it started and leaves none behind."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from control_plane.cluster import HERE


def _script(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(HERE / "cluster.py"), *argv],
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )


def _listening(pid: int) -> set[str]:
    """Local addresses of the TCP sockets pid listens on (/proc/net/tcp, state 0A)."""
    inodes = set()
    for descriptor in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = str(descriptor.readlink())
        except OSError:  # closed since the listing
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] == "0A" and fields[9] in inodes:
                found.add(fields[1].rpartition(":")[0])
    return found


def test_up_is_idempotent_listens_on_loopback_and_down_leaves_nothing(tmp_path: Path) -> None:
    folder = tmp_path / "plane"
    first = _script("up", "--dir", str(folder))
    assert first.returncode == 0, first.stderr
    assert first.stdout.strip().endswith(f"{folder}/kubeconfig")
    processes = json.loads((folder / "state.json").read_text())["processes"]
    try:
        assert sorted(processes) == ["etcd", "kube-apiserver", "kube-controller-manager"]
        for pid in processes.values():
            assert _listening(pid) == {"0100007F"}  # 127.0.0.1, and nothing beyond it
        again = _script("up", "--dir", str(folder))
        assert again.returncode == 0, again.stderr
        assert json.loads((folder / "state.json").read_text())["processes"] == processes
    finally:
        down = _script("down", "--dir", str(folder))
    assert down.returncode == 0, down.stderr
    assert down.stdout == "stopped kube-controller-manager, kube-apiserver, etcd\n"
    assert not [pid for pid in processes.values() if Path(f"/proc/{pid}").exists()]
    assert not (folder / "kubeconfig").exists()
    assert _script("down", "--dir", str(folder)).stdout == "nothing was running\n"
