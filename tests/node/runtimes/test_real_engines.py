"""The real engines load what setup writes: containerd's `config dump` and dockerd's own validation.

Runs the binaries when they are installed (`make test-runtimes` installs Debian's containerd
1.6 and docker.io 20.10); more containerd builds can be named in GPUCONF_TEST_CONTAINERD
(colon-separated paths, e.g. containerd 2.x built from its tags). Skips cleanly otherwise.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import tomllib
from pathlib import Path
from typing import Any

import pytest
from builders import NVIDIA_RUNTIME, RUNTIME_FACTS, HostTree, setup_config

from gpuconf.node.runtimes.containerd import globs_from_importer, native_config_version
from gpuconf.node.runtimes.versions import parse_version

pytestmark = pytest.mark.runtimes

MAIN = "/etc/containerd/config.toml"
DROPIN_GLOB = "/etc/containerd/conf.d/*.toml"
V2, V3 = "io.containerd.grpc.v1.cri", "io.containerd.cri.v1.runtime"


def containerd_binaries() -> list[str]:
    found = [shutil.which("containerd") or ""]
    found += os.environ.get("GPUCONF_TEST_CONTAINERD", "").split(":")
    return [path for path in found if path and os.access(path, os.X_OK)]


def release(binary: str) -> tuple[int, int, int]:
    output = subprocess.run([binary, "--version"], capture_output=True, text=True, check=True)
    version = parse_version(output.stdout)
    assert version is not None, output.stdout
    return version


def fact(name: str, **replace: str) -> str:
    text = (RUNTIME_FACTS / name).read_text()
    for old, new in replace.items():
        text = text.replace(old, new)
    return text


CUSTOM_V2 = """\
version = 2
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "registry.example.com/pause:3.9"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = true
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runsc]
      runtime_type = "io.containerd.runsc.v1"
  [plugins."io.containerd.grpc.v1.cri".registry]
    config_path = "/etc/containerd/certs.d"
[plugins."io.containerd.internal.v1.opt"]
  path = "/opt/site/containerd"
"""
CUSTOM_V3 = """\
version = 3
[plugins."io.containerd.cri.v1.images".pinned_images]
  sandbox = "registry.example.com/pause:3.10"
[plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc.options]
  SystemdCgroup = true
[plugins."io.containerd.cri.v1.runtime".containerd.runtimes.kata]
  runtime_type = "io.containerd.kata.v2"
"""
HOSTS_1X = {
    "1.6 kubeadm main": lambda: fact("containerd-1.6-main-systemd.toml"),
    "1.6 default": lambda: fact("containerd-1.6.20-config-default.toml"),
    "custom v2 with runsc": lambda: CUSTOM_V2,
    "bare version 2": lambda: "version = 2\n",
    "no main file": lambda: None,
}
HOSTS_2X = {
    "2.0 default, systemd": lambda: fact(
        "containerd-2.0.11-config-default.toml", **{"SystemdCgroup = false": "SystemdCgroup = true"}
    ),
    "2.1 default": lambda: fact("containerd-2.1.5-config-default.toml"),
    "custom v3 with kata": lambda: CUSTOM_V3,
    "v2 main kept from 1.x": lambda: fact("containerd-1.6-main-systemd.toml"),
    "custom v2 with runsc": lambda: CUSTOM_V2,
    "no main file": lambda: None,
}
CASES = [
    pytest.param(binary, host, id=f"{release(binary)[0]}.{release(binary)[1]}-{host}")
    for binary in containerd_binaries()
    for host in (HOSTS_1X if release(binary) < (2, 0, 0) else HOSTS_2X)
]


def dump(binary: str, main: Path, tmp: Path) -> dict[str, Any]:
    result = subprocess.run(
        [binary, "--config", str(main), "config", "dump"],
        capture_output=True,
        text=True,
        cwd=tmp,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return tomllib.loads(result.stdout)


def leaves(table: Any, prefix: tuple[str, ...] = ()) -> dict[tuple[str, ...], Any]:
    if not isinstance(table, dict):
        return {prefix: table}
    found: dict[tuple[str, ...], Any] = {}
    for key, value in table.items():
        found.update(leaves(value, (*prefix, key)))
    return found


@pytest.mark.skipif(not CASES, reason="no containerd binary installed (make test-runtimes)")
@pytest.mark.parametrize(("binary", "shape"), CASES)
def test_containerd_loads_nvidia_as_intended_and_keeps_every_host_setting(
    tmp_path: Path, binary: str, shape: str
) -> None:
    text = (HOSTS_1X | HOSTS_2X)[shape]()
    host = HostTree(tmp_path)
    (host.at("/usr/local/bin")).mkdir(parents=True)
    host.at("/usr/local/bin/containerd").symlink_to(binary)
    if text is not None:
        host.write(MAIN, text)
    result = host.setup(setup_config("containerd"))
    assert result.code == 0, result.err
    # The main file imports the host path; point it at this test's root to load it here.
    rooted = tmp_path / "main-rooted.toml"
    rooted.write_text(host.read(MAIN).replace(DROPIN_GLOB, str(host.at(DROPIN_GLOB))))
    after = dump(binary, rooted, tmp_path)
    cri = after["plugins"][V3 if release(binary) >= (2, 0, 0) else V2]
    runtimes = cri["containerd"]["runtimes"]
    assert cri["containerd"]["default_runtime_name"] == "nvidia"
    assert runtimes["nvidia"]["options"]["BinaryName"] == NVIDIA_RUNTIME
    assert runtimes["nvidia"]["runtime_type"] == "io.containerd.runc.v2"
    assert runtimes["nvidia"]["options"].get("SystemdCgroup") == runtimes["runc"]["options"].get(
        "SystemdCgroup"
    )
    if text is None:
        return
    original = tmp_path / "main-original.toml"
    original.write_text(text)
    before = leaves(dump(binary, original, tmp_path))
    now = leaves(after)
    ours = {("imports",), ("version",)}
    lost = {
        key: (value, now.get(key, "<absent>"))
        for key, value in before.items()
        if key not in ours and key[-1] != "default_runtime_name" and now.get(key) != value
    }
    assert lost == {}


@pytest.mark.skipif(not containerd_binaries(), reason="no containerd binary (make test-runtimes)")
@pytest.mark.parametrize("binary", containerd_binaries())
def test_a_main_file_setup_creates_is_one_the_host_s_containerd_loads_whatever_the_pool_declares(
    tmp_path: Path, binary: str
) -> None:
    native = native_config_version(release(binary))
    declared = 3 if native == 2 else 2  # a stale declaration: the binary's own version wins
    host = HostTree(tmp_path)
    host.at("/usr/local/bin").mkdir(parents=True)
    host.at("/usr/local/bin/containerd").symlink_to(binary)
    assert host.setup(setup_config("containerd", containerdConfigVersion=declared)).code == 0
    assert tomllib.loads(host.read(MAIN))["version"] == native
    rooted = tmp_path / "main-rooted.toml"
    rooted.write_text(host.read(MAIN).replace(DROPIN_GLOB, str(host.at(DROPIN_GLOB))))
    after = dump(binary, rooted, tmp_path)
    cri = after["plugins"][V3 if native >= 3 else V2]
    assert cri["containerd"]["default_runtime_name"] == "nvidia"
    assert cri["containerd"]["runtimes"]["nvidia"]["options"]["BinaryName"] == NVIDIA_RUNTIME


DAEMON_JSON_HOSTS = {
    "absent": None,
    "empty": "",
    "logging and runsc": json.dumps(
        {"log-driver": "journald", "runtimes": {"runsc": {"path": "/usr/bin/runsc"}}}
    ),
    "old nvidia args key": json.dumps(
        {"default-runtime": "nvidia", "runtimes": {"nvidia": {"path": "x", "args": []}}}
    ),
    "live-restore and mirrors": json.dumps(
        {"live-restore": True, "registry-mirrors": ["https://mirror.example.com"]}
    ),
}


@pytest.mark.skipif(
    shutil.which("dockerd") is None, reason="dockerd not installed (make test-runtimes)"
)
@pytest.mark.parametrize("shape", sorted(DAEMON_JSON_HOSTS))
@pytest.mark.parametrize("default", [True, False], ids=["default", "runtime-class"])
def test_dockerd_accepts_every_daemon_json_setup_writes(
    tmp_path: Path, shape: str, default: bool
) -> None:
    host = HostTree(tmp_path)
    text = DAEMON_JSON_HOSTS[shape]
    if text is not None:
        host.write("/etc/docker/daemon.json", text)
    assert host.setup(setup_config("docker", setAsDefault=default)).code == 0
    # A copy nobody can read: pytest's folders are private to root.
    readable = Path(tempfile.mkdtemp(prefix="gpuconf-daemon-"))
    try:
        readable.chmod(0o755)
        daemon = readable / "daemon.json"
        daemon.write_bytes(host.at("/etc/docker/daemon.json").read_bytes())
        daemon.chmod(0o644)
        result = _validate_as_nobody(daemon)
    finally:
        shutil.rmtree(readable)
    assert "unable to configure the Docker daemon" not in result.stderr, result.stderr
    assert "needs to be started with root privileges" in result.stderr, result.stderr


def _validate_as_nobody(daemon: Path) -> subprocess.CompletedProcess[str]:
    # dockerd loads and validates --config-file before it checks for root: as nobody it stops
    # right after validation and creates nothing (facts/runtimes docker-20.10).
    return subprocess.run(
        ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
         "dockerd", "--config-file", str(daemon)],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip


CONTAINERD_1X = [b for b in containerd_binaries() if release(b) < (2, 0, 0)]


@pytest.mark.skipif(not CONTAINERD_1X, reason="no containerd 1.x installed (make test-runtimes)")
@pytest.mark.parametrize("binary", CONTAINERD_1X)
def test_containerd_1x_loads_imports_breadth_first_and_the_last_cri_table_wins_whole(
    tmp_path: Path, binary: str
) -> None:
    """What setup's load order (runtimes/containerd.py) models: a file imported by an import
    loads after every file queued before it, relative to its importer's folder, and its CRI
    table replaces the drop-in's, nvidia and all (so setup refuses such a host)."""
    conf, site = tmp_path / "conf.d", tmp_path / "site"
    conf.mkdir()
    site.mkdir()
    (tmp_path / "main.toml").write_text(
        f'version = 2\nimports = ["site/a.toml", "{conf}/*.toml"]\n'
    )
    (site / "a.toml").write_text('version = 2\nimports = ["b.toml"]\n')
    (site / "b.toml").write_text(f'version = 2\n[plugins."{V2}"]\nsandbox_image = "b"\n')
    (conf / "99-nvidia.toml").write_text(
        f'version = 2\n[plugins."{V2}".containerd]\ndefault_runtime_name = "nvidia"\n'
        f'[plugins."{V2}".containerd.runtimes.nvidia]\nruntime_type = "io.containerd.runc.v2"\n'
    )
    cri = dump(binary, tmp_path / "main.toml", tmp_path)["plugins"][V2]
    assert cri["sandbox_image"] == "b"
    assert "nvidia" not in cri["containerd"].get("runtimes", {})
    assert cri["containerd"]["default_runtime_name"] != "nvidia"


@pytest.mark.skipif(
    not containerd_binaries(), reason="no containerd installed (make test-runtimes)"
)
@pytest.mark.parametrize("binary", containerd_binaries())
def test_containerd_matches_a_relative_glob_where_setup_expects_for_its_release(
    tmp_path: Path, binary: str
) -> None:
    """runtimes/containerd.globs_from_importer: the importing file's folder from 1.6.29, 1.7.16
    and 2.0, the working directory before (Debian's 1.6.20 is the latter)."""
    etc, elsewhere = tmp_path / "etc", tmp_path / "cwd"
    for folder, name in ((etc, "importer"), (elsewhere, "working-directory")):
        (folder / "site").mkdir(parents=True)
        (folder / "site" / "10.toml").write_text(
            f'version = 2\n[plugins."{V2}"]\nsandbox_image = "{name}"\n'
        )
    (etc / "main.toml").write_text('version = 2\nimports = ["site/*.toml"]\n')
    cri = dump(binary, etc / "main.toml", elsewhere)["plugins"][V2]
    expected = "importer" if globs_from_importer(release(binary)) else "working-directory"
    assert cri["sandbox_image"] == expected


@pytest.mark.skipif(
    not containerd_binaries(), reason="no containerd installed (make test-runtimes)"
)
@pytest.mark.parametrize("binary", containerd_binaries())
def test_containerd_refuses_to_start_on_a_missing_plain_import(tmp_path: Path, binary: str) -> None:
    """Why setup refuses such a host (runtimes/containerd.load_order)."""
    (tmp_path / "main.toml").write_text(f'version = 2\nimports = ["{tmp_path}/missing.toml"]\n')
    result = subprocess.run(
        [binary, "--config", str(tmp_path / "main.toml"), "config", "dump"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode != 0
    assert "no such file or directory" in result.stderr


@pytest.mark.skipif(
    not containerd_binaries(), reason="no containerd installed (make test-runtimes)"
)
@pytest.mark.parametrize("binary", containerd_binaries())
def test_containerd_matches_a_wildcard_folder_folder_by_folder_in_sorted_order(
    tmp_path: Path, binary: str
) -> None:
    """runtimes/containerd._glob: Go's filepath.Glob, folders sorted, then names in each."""
    for folder in ("b", "a"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "site.toml").write_text(
            f'version = 2\n[plugins."{V2}"]\nsandbox_image = "{folder}"\n'
        )
    (tmp_path / "main.toml").write_text(f'version = 2\nimports = ["{tmp_path}/*/site.toml"]\n')
    assert dump(binary, tmp_path / "main.toml", tmp_path)["plugins"][V2]["sandbox_image"] == "b"
