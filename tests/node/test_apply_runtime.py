from __future__ import annotations

import json
import os
import tomllib
from pathlib import Path

import pytest

from gpuconf.cli import main

BINARY = "/usr/bin/nvidia-container-runtime"
DROPIN_GLOB = "/etc/containerd/conf.d/*.toml"


def node_config(tmp_path: Path, engine: str, default: bool = False, version: int = 2) -> Path:
    path = tmp_path / "node-config.yaml"
    path.write_text(
        f"""\
apiVersion: gpuconf.dev/v1alpha1
kind: NodeConfig
cluster: lab
pool: gpus
runtime: {{engine: {engine}, setAsDefault: {str(default).lower()}, binaryPath: {BINARY},
          containerdConfigVersion: {version}}}
health: {{ignoredXids: [], recoverAfterSeconds: 0}}
inventory: {{default: []}}
"""
    )
    return path


def apply(config: Path, root: Path, dry_run: bool = False) -> int:
    """`gpuconf node apply-runtime` through the real command line, in this process."""
    argv = ["node", "apply-runtime", "--config", str(config), "--root", str(root)]
    return main([*argv, "--dry-run"] if dry_run else argv)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    host = tmp_path / "host"
    host.mkdir()
    return host


def host_file(root: Path, path: str, text: str | None = None, mode: int = 0o644) -> Path:
    target = root / path.lstrip("/")
    if text is not None:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
        target.chmod(mode)
    return target


# Docker


def test_docker_merge_keeps_other_keys_and_runtimes(
    tmp_path: Path, root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    daemon = host_file(
        root,
        "/etc/docker/daemon.json",
        json.dumps({"log-driver": "journald", "runtimes": {"runsc": {"path": "/usr/bin/runsc"}}}),
        mode=0o600,
    )
    assert apply(node_config(tmp_path, "docker"), root) == 0
    assert json.loads(daemon.read_text()) == {
        "log-driver": "journald",
        "runtimes": {"nvidia": {"args": [], "path": BINARY}, "runsc": {"path": "/usr/bin/runsc"}},
    }
    assert daemon.stat().st_mode & 0o777 == 0o600
    assert "docker: /etc/docker/daemon.json changed; restart docker (systemctl restart docker)" in (
        capsys.readouterr().out
    )


def test_docker_absent_daemon_json_is_created(tmp_path: Path, root: Path) -> None:
    assert apply(node_config(tmp_path, "docker", default=True), root) == 0
    daemon = host_file(root, "/etc/docker/daemon.json")
    assert json.loads(daemon.read_text()) == {
        "default-runtime": "nvidia",
        "runtimes": {"nvidia": {"args": [], "path": BINARY}},
    }
    assert daemon.read_text().endswith("}\n")
    assert not daemon.with_name("daemon.json.gpuconf.bak").exists()


def test_docker_default_runtime_only_when_asked(tmp_path: Path, root: Path) -> None:
    daemon = host_file(root, "/etc/docker/daemon.json", '{"default-runtime": "runc"}')
    assert apply(node_config(tmp_path, "docker"), root) == 0
    assert json.loads(daemon.read_text())["default-runtime"] == "runc"


def test_malformed_daemon_json_is_left_untouched(
    tmp_path: Path, root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    original = '{\n  "log-driver": "journald",\n}\n'
    daemon = host_file(root, "/etc/docker/daemon.json", original)
    assert apply(node_config(tmp_path, "docker"), root) == 1
    assert daemon.read_text() == original
    assert not daemon.with_name("daemon.json.gpuconf.bak").exists()
    error = capsys.readouterr().err
    assert f"{daemon}:3:1: not valid JSON" in error
    assert "left untouched" in error
    assert "Traceback" not in error


def test_second_run_changes_nothing(
    tmp_path: Path, root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = node_config(tmp_path, "docker")
    daemon = host_file(root, "/etc/docker/daemon.json", '{"log-driver": "journald"}')
    assert apply(config, root) == 0
    written = daemon.stat()
    capsys.readouterr()
    assert apply(config, root) == 0
    after = daemon.stat()
    assert (after.st_mtime_ns, after.st_ino) == (written.st_mtime_ns, written.st_ino)
    assert "already configured; nothing changed" in capsys.readouterr().out


def test_an_equivalent_daemon_json_is_not_reformatted(tmp_path: Path, root: Path) -> None:
    compact = f'{{"runtimes":{{"nvidia":{{"path":"{BINARY}","args":[]}}}}}}'
    daemon = host_file(root, "/etc/docker/daemon.json", compact)
    assert apply(node_config(tmp_path, "docker"), root) == 0
    assert daemon.read_text() == compact


def test_original_is_backed_up_once(tmp_path: Path, root: Path) -> None:
    daemon = host_file(root, "/etc/docker/daemon.json", '{"log-driver": "journald"}', mode=0o640)
    backup = daemon.with_name("daemon.json.gpuconf.bak")
    assert apply(node_config(tmp_path, "docker"), root) == 0
    assert backup.read_text() == '{"log-driver": "journald"}'
    assert backup.stat().st_mode & 0o777 == 0o640
    assert apply(node_config(tmp_path, "docker", default=True), root) == 0
    assert backup.read_text() == '{"log-driver": "journald"}'


def test_dry_run_prints_a_diff_and_writes_nothing(
    tmp_path: Path, root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    daemon = host_file(root, "/etc/docker/daemon.json", '{"log-driver": "journald"}\n')
    before = sorted(p.relative_to(root) for p in root.rglob("*"))
    assert apply(node_config(tmp_path, "docker"), root, dry_run=True) == 0
    assert sorted(p.relative_to(root) for p in root.rglob("*")) == before
    assert daemon.read_text() == '{"log-driver": "journald"}\n'
    out = capsys.readouterr().out
    assert "--- /etc/docker/daemon.json\n+++ /etc/docker/daemon.json (gpuconf)\n" in out
    assert '-{"log-driver": "journald"}\n' in out
    assert '+    "nvidia": {\n' in out
    assert "dry run: nothing written" in out


# containerd

MAIN_WITH_TABLES = """\
version = 2
root = "/var/lib/containerd"  # keep me

[grpc]
  address = "/run/containerd/containerd.sock"

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "registry.k8s.io/pause:3.9"
"""


def test_containerd_dropin_written_and_main_config_created(tmp_path: Path, root: Path) -> None:
    assert apply(node_config(tmp_path, "containerd", default=True), root) == 0
    dropin = tomllib.loads(host_file(root, "/etc/containerd/conf.d/99-nvidia.toml").read_text())
    main = host_file(root, "/etc/containerd/config.toml").read_text()
    assert (
        dropin["plugins"]["io.containerd.grpc.v1.cri"]["containerd"]["default_runtime_name"]
        == "nvidia"
    )
    assert tomllib.loads(main) == {"version": 2, "imports": [DROPIN_GLOB]}


def test_containerd_imports_added_before_the_first_table(tmp_path: Path, root: Path) -> None:
    main = host_file(root, "/etc/containerd/config.toml", MAIN_WITH_TABLES)
    assert apply(node_config(tmp_path, "containerd"), root) == 0
    text = main.read_text()
    assert text == MAIN_WITH_TABLES.replace("me\n", f'me\nimports = ["{DROPIN_GLOB}"]\n', 1)
    assert tomllib.loads(text)["grpc"] == {"address": "/run/containerd/containerd.sock"}


def test_containerd_imports_added_once(tmp_path: Path, root: Path) -> None:
    main = host_file(root, "/etc/containerd/config.toml", MAIN_WITH_TABLES)
    config = node_config(tmp_path, "containerd")
    assert apply(config, root) == 0
    once = main.read_text()
    assert apply(config, root) == 0
    assert main.read_text() == once
    assert once.count(DROPIN_GLOB) == 1


def test_containerd_existing_imports_array_is_extended(tmp_path: Path, root: Path) -> None:
    original = 'version = 2\nimports = [\n  "/etc/containerd/other.toml",  # site\n]\n\n[grpc]\n'
    main = host_file(root, "/etc/containerd/config.toml", original)
    assert apply(node_config(tmp_path, "containerd"), root) == 0
    text = main.read_text()
    assert tomllib.loads(text)["imports"] == ["/etc/containerd/other.toml", DROPIN_GLOB]
    assert text.replace(f' "{DROPIN_GLOB}"', "") == original


def test_containerd_v3_dropin(tmp_path: Path, root: Path) -> None:
    assert apply(node_config(tmp_path, "containerd", version=3), root) == 0
    dropin = tomllib.loads(host_file(root, "/etc/containerd/conf.d/99-nvidia.toml").read_text())
    assert set(dropin["plugins"]) == {"io.containerd.cri.v1.runtime"}
    assert tomllib.loads(host_file(root, "/etc/containerd/config.toml").read_text())["version"] == 3


def test_malformed_containerd_config_stops_every_write(
    tmp_path: Path, root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    original = "version = 2\n[grpc\n"
    main = host_file(root, "/etc/containerd/config.toml", original)
    assert apply(node_config(tmp_path, "containerd"), root) == 1
    assert main.read_text() == original
    assert not host_file(root, "/etc/containerd/conf.d/99-nvidia.toml").exists()
    error = capsys.readouterr().err
    assert f"{main}:2:" in error
    assert "not valid TOML" in error


def test_containerd_change_says_to_restart(
    tmp_path: Path, root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert apply(node_config(tmp_path, "containerd"), root) == 0
    assert "restart containerd (systemctl restart containerd)" in capsys.readouterr().out


# k3s


def test_k3s_gets_the_base_template_and_its_default_runtime_setting(
    tmp_path: Path, root: Path
) -> None:
    assert apply(node_config(tmp_path, "k3s", default=True), root) == 0
    template = host_file(root, "/var/lib/rancher/k3s/agent/etc/containerd/config.toml.tmpl")
    assert template.read_text().startswith('{{ template "base" . }}')
    agent = host_file(root, "/etc/rancher/k3s/config.yaml.d/90-gpuconf-nvidia.yaml")
    assert agent.read_text() == "default-runtime: nvidia\n"


# the node config


def test_bad_node_config_is_a_located_message(
    tmp_path: Path, root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "node-config.yaml"
    config.write_text(
        node_config(tmp_path, "docker").read_text().replace("engine: docker", "engine: podman")
    )
    assert apply(config, root) == 1
    error = capsys.readouterr().err
    assert f"{config}:5:" in error
    assert "runtime.engine" in error
    assert not any(root.iterdir())


def test_writes_leave_no_temporary_files(tmp_path: Path, root: Path) -> None:
    assert apply(node_config(tmp_path, "containerd"), root) == 0
    names = sorted(os.listdir(root / "etc/containerd")) + sorted(
        os.listdir(root / "etc/containerd/conf.d")
    )
    assert names == ["conf.d", "config.toml", "99-nvidia.toml"]
