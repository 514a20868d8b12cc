"""Robustness: whatever shape the host's file has, setup merges into it or refuses; it never loses it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from builders import HostTree, setup_config

from gpuconf.node.runtimes.host import HostPathError, resolve_in_root

BACKUP = "/var/lib/gpuconf/backup"
DOCKER = (
    "docker",
    "/etc/docker/daemon.json",
    '{\n  "log-driver": "journald",\n  "data-root": "/srv/docker"\n}\n',
)
CONTAINERD = (
    "containerd",
    "/etc/containerd/config.toml",
    '# site config\nversion = 2\n\n[plugins."io.containerd.grpc.v1.cri"]\n  sandbox_image = "pause:3.9"\n'
    '  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]\n    SystemdCgroup = true\n',
)
CRIO = ("cri-o", "/etc/crio/crio.conf", '# site\n[crio.runtime]\nlog_level = "debug"\n')
ENGINES = [DOCKER, CONTAINERD, CRIO]


def parsed(path: str, text: str) -> dict[str, Any]:
    if not text.strip():
        return {}
    return json.loads(text) if path.endswith(".json") else tomllib.loads(text)


def contains(whole: Any, part: Any) -> bool:
    """Every key of ``part`` is in ``whole`` with the same value (tables compared key by key)."""
    if isinstance(part, dict):
        return isinstance(whole, dict) and all(
            k in whole and contains(whole[k], v) for k, v in part.items()
        )
    return bool(whole == part)


def effective(host: HostTree, engine: str, path: str) -> dict[str, Any]:
    """What the engine reads after setup, as one table (the drop-in over the main file)."""
    data = parsed(path, host.read(path))
    if engine == "containerd":
        dropin = tomllib.loads(host.read("/etc/containerd/conf.d/99-nvidia.toml"))
        data = {**data, "plugins": {**data.get("plugins", {}), **dropin["plugins"]}}
    if engine == "cri-o":
        dropin = tomllib.loads(host.read("/etc/crio/crio.conf.d/99-nvidia.conf"))
        runtime = {**data.get("crio", {}).get("runtime", {}), **dropin["crio"]["runtime"]}
        data = {**data, "crio": {**data.get("crio", {}), "runtime": runtime}}
    return data


@pytest.fixture
def host(tmp_path: Path) -> HostTree:
    return HostTree(tmp_path)


Shape = Callable[[HostTree, str, str], str]
"""Puts the host file in place in some shape; returns the host path whose bytes hold it."""


def plain(host: HostTree, path: str, text: str) -> str:
    host.write(path, text)
    return path


def empty(host: HostTree, path: str, text: str) -> str:
    host.write(path, "")
    return path


def comments_only(host: HostTree, path: str, text: str) -> str:
    host.write(path, "# managed by ansible\n" if not path.endswith(".json") else "")
    return path


def relative_symlink(host: HostTree, path: str, text: str) -> str:
    target = str(Path(path).parent / "real" / Path(path).name)
    host.write(target, text)
    host.at(path).symlink_to(Path("real") / Path(path).name)
    return target


def absolute_symlink(host: HostTree, path: str, text: str) -> str:
    """An absolute link means the host's /opt, not this container's: it dangles outside the root."""
    target = "/opt/site" + path
    host.write(target, text)
    host.at(path).parent.mkdir(parents=True, exist_ok=True)
    host.at(path).symlink_to(target)
    return target


def read_only(host: HostTree, path: str, text: str) -> str:
    host.write(path, text, mode=0o444)
    return path


def one_megabyte(host: HostTree, path: str, text: str) -> str:
    """Just under the 1 MiB setup reads."""
    if path.endswith(".json"):
        big = json.loads(text) | {"labels": [f"rack=r{i:06d}" for i in range(50_500)]}
        host.write(path, json.dumps(big, indent=2))
    else:
        comment = "".join(f"# padding line {i:07d} keeps the file large\n" for i in range(23_000))
        host.write(path, text + comment)
    assert 1_000_000 <= host.at(path).stat().st_size <= 2**20
    return path


@pytest.mark.parametrize(("engine", "path", "text"), ENGINES, ids=[e[0] for e in ENGINES])
@pytest.mark.parametrize(
    "shape",
    [plain, empty, comments_only, relative_symlink, absolute_symlink, read_only, one_megabyte],
    ids=lambda f: f.__name__,
)
def test_the_host_s_settings_survive_and_the_original_is_kept(
    host: HostTree, engine: str, path: str, text: str, shape: Shape
) -> None:
    real = shape(host, path, text)
    original = host.at(real).read_bytes()
    mode = host.at(real).stat().st_mode
    result = host.setup(setup_config(engine))
    assert result.code == 0, result.err
    assert contains(effective(host, engine, real), parsed(real, original.decode()))
    assert host.at(real).stat().st_mode == mode
    if host.at(path).is_symlink() or shape is relative_symlink:
        assert host.at(path).is_symlink(), "the link itself is kept"
    kept = host.at(BACKUP + path)  # kept under the name the engine reads it by
    if engine == "cri-o" or host.at(real).read_bytes() == original:
        return  # CRI-O's main file is only read, never written; nothing to back up
    assert kept.read_bytes() == original


@pytest.mark.parametrize(("engine", "path", "text"), ENGINES, ids=[e[0] for e in ENGINES])
def test_a_link_leaving_the_host_root_is_refused_by_name(
    host: HostTree, engine: str, path: str, text: str
) -> None:
    host.at(path).parent.mkdir(parents=True, exist_ok=True)
    depth = len(Path(path).parts) + 2
    host.at(path).symlink_to("../" * depth + "etc/passwd")
    result = host.setup(setup_config(engine))
    assert result.code == 1
    assert f"{path} is a symlink to ../" in result.err
    assert "outside the host root" in result.err
    assert host.at(path).is_symlink()


def test_absolute_links_resolve_inside_the_root_link_by_link(tmp_path: Path) -> None:
    (tmp_path / "etc").mkdir()
    (tmp_path / "data" / "containerd").mkdir(parents=True)
    (tmp_path / "etc" / "containerd").symlink_to("/data/containerd")
    (tmp_path / "data" / "containerd" / "config.toml").symlink_to("../../srv/config.toml")
    assert str(resolve_in_root(tmp_path, "/etc/containerd/config.toml")) == "/srv/config.toml"
    (tmp_path / "loop").symlink_to("/loop")
    with pytest.raises(HostPathError, match="too many levels of symbolic links"):
        resolve_in_root(tmp_path, "/loop/x")


def test_concurrent_runs_write_once_and_keep_the_first_original(host: HostTree) -> None:
    original = b'{"log-driver": "journald"}'
    host.write("/etc/docker/daemon.json", original)
    argv = [sys.executable, "-m", "gpuconf", *host.setup_argv(setup_config("docker"), "--once")]
    runs = [
        subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE) for _ in range(4)
    ]
    logs = [run.communicate(timeout=60)[1].decode() for run in runs]
    assert [run.returncode for run in runs] == [0, 0, 0, 0], logs
    assert sum("wrote" in log for log in logs) == 1
    assert host.at(BACKUP + "/etc/docker/daemon.json").read_bytes() == original
    leftovers = [p for p in host.root.rglob(".*") if p.is_file() and p.name != ".gpuconf-absent"]
    assert leftovers == []
    assert json.loads(host.read("/etc/docker/daemon.json"))["log-driver"] == "journald"


def test_an_unreadable_directory_in_place_of_the_file_is_refused(host: HostTree) -> None:
    host.at("/etc/docker/daemon.json").mkdir(parents=True)
    result = host.setup(setup_config("docker"))
    assert result.code == 1
    assert "/etc/docker/daemon.json is a directory; left untouched" in result.err
    assert os.path.isdir(host.at("/etc/docker/daemon.json"))


def _peak_of_setup(host: HostTree, config: dict[str, Any]) -> tuple[int, str, float]:
    """Exit code, stderr and peak RSS (MiB, the child's own VmHWM) of setup in a new process."""
    script = (
        "import sys\nfrom gpuconf.cli import main\ncode = main(sys.argv[1:])\n"
        "peak = next(l.split()[1] for l in open('/proc/self/status') if l.startswith('VmHWM'))\n"
        "print(f'peak={peak}', file=sys.stderr)\nsys.exit(code)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script, *host.setup_argv(config, "--once")],
        capture_output=True, text=True, check=False, timeout=120,
    )  # fmt: skip
    peak = int(result.stderr.rsplit("peak=", 1)[1]) / 1024
    return result.returncode, result.stderr, peak


@pytest.mark.parametrize(("engine", "path", "text"), ENGINES, ids=lambda v: str(v)[:12])
def test_a_16_mib_host_file_is_refused_unread_and_setup_stays_far_under_its_memory_limit(
    tmp_path: Path, engine: str, path: str, text: str
) -> None:
    host = HostTree(tmp_path)
    large = text.encode() + b"#" * (16 * 2**20) + b"\n"
    host.write(path, large)
    code, err, peak = _peak_of_setup(host, setup_config(engine))
    assert code == 1
    assert f"{path} is 16.0 MiB; setup reads host files up to 1 MiB" in err
    assert peak < 64, f"{peak:.0f} MiB: the file was held"
    assert host.at(path).read_bytes() == large
    assert not host.at("/run/gpuconf/setup-ready").exists()


def test_containerd_files_that_import_each_other_count_together_toward_the_limit(
    tmp_path: Path,
) -> None:
    host = HostTree(tmp_path)
    half = "#" * (600 * 1024) + "\n"
    host.write("/etc/containerd/config.toml", 'version = 2\nimports = ["site.toml"]\n' + half)
    host.write("/etc/containerd/site.toml", "version = 2\n" + half)
    result = host.setup(setup_config("containerd"))
    assert result.code == 1
    assert "/etc/containerd/config.toml with the files it imports is 1.2 MiB" in result.err
