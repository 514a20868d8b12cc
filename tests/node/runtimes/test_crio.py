"""CRI-O: a drop-in copying the host's low-level runtime, reloaded by SIGHUP only where CRI-O can."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
from builders import NVIDIA_RUNTIME, HostTree, runtime_settings, setup_config

from gpuconf.node.runtimes import reload
from gpuconf.node.runtimes.host import Host

DROPIN = "/etc/crio/crio.conf.d/99-nvidia.conf"


@pytest.fixture
def host(tmp_path: Path) -> HostTree:
    return HostTree(tmp_path)


def test_the_nvidia_runtime_copies_the_default_runtime_s_table(host: HostTree) -> None:
    host.write(
        "/etc/crio/crio.conf",
        '[crio.runtime]\ndefault_runtime = "crun"\n'
        '[crio.runtime.runtimes.crun]\nruntime_path = "/usr/bin/crun"\nruntime_root = "/run/crun"\n'
        'monitor_path = "/usr/libexec/crio/conmon"\nallowed_annotations = ["io.containers.trace-syscall"]\n',
    )
    host.write(
        "/etc/crio/crio.conf.d/10-site.conf",
        '[crio.runtime.runtimes.crun]\nmonitor_cgroup = "pod"\n',
    )
    assert host.setup(setup_config("cri-o")).code == 0
    written = tomllib.loads(host.read(DROPIN))
    assert written == {
        "crio": {
            "runtime": {
                "default_runtime": "nvidia",
                "runtimes": {
                    "nvidia": {
                        "runtime_path": NVIDIA_RUNTIME,
                        "runtime_type": "oci",
                        "monitor_cgroup": "pod",
                    }
                },
            }
        }
    }


def test_drop_ins_in_sub_folders_and_dotfiles_count_as_crio_walks_them(host: HostTree) -> None:
    # pkg/config UpdateFromPath: filepath.Walk over crio.conf.d, every file, lexical order.
    host.write(
        "/etc/crio/crio.conf.d/.00-hidden.conf",
        '[crio.runtime]\ndefault_runtime = "runsc"\n'
        '[crio.runtime.runtimes.runsc]\nruntime_path = "/usr/bin/runsc"\n',
    )
    host.write(
        "/etc/crio/crio.conf.d/site/10-runsc.conf",
        '[crio.runtime.runtimes.runsc]\nruntime_root = "/run/runsc"\n',
    )
    assert host.setup(setup_config("cri-o")).code == 0
    nvidia = tomllib.loads(host.read(DROPIN))["crio"]["runtime"]["runtimes"]["nvidia"]
    assert nvidia == {
        "runtime_path": NVIDIA_RUNTIME,
        "runtime_type": "oci",
        "runtime_root": "/run/runsc",
    }


def test_without_host_runtimes_the_dropin_names_only_the_binary(host: HostTree) -> None:
    host.setup(setup_config("cri-o", setAsDefault=False))
    assert tomllib.loads(host.read(DROPIN)) == {
        "crio": {
            "runtime": {
                "runtimes": {"nvidia": {"runtime_path": NVIDIA_RUNTIME, "runtime_type": "oci"}}
            }
        }
    }


@pytest.mark.parametrize(
    ("version", "mode"),
    [("1.25.4", "systemd"), ("1.26.0", "signal"), ("1.31.2", "signal"), (None, "systemd")],
)
def test_auto_restart_signals_only_releases_that_reload_runtimes(
    host: HostTree, version: str | None, mode: str
) -> None:
    if version is not None:
        host.program("crio", f"echo 'crio version {version}'")
    settings = runtime_settings(
        {"engine": "cri-o", "setAsDefault": True, "binaryPath": NVIDIA_RUNTIME, "restart": "auto"}
    )
    assert reload.chosen(settings, Host(host.root, chroot=False)).mode == mode


@pytest.mark.parametrize(
    ("content", "key"),
    [
        ('[crio.runtime]\ndefault_runtime = "crun"\n', "default_runtime"),
        ('[crio.runtime.runtimes.nvidia]\nruntime_path = "/usr/bin/runc"\n', "runtimes.nvidia"),
    ],
)
def test_a_file_read_after_the_dropin_that_overrides_it_is_refused(
    host: HostTree, content: str, key: str
) -> None:
    # "site/" sorts after "99-nvidia.conf", and CRI-O walks into it: its value wins.
    later = "/etc/crio/crio.conf.d/site/10-default.conf"
    host.write(later, content)
    result = host.setup(setup_config("cri-o"))
    assert result.code == 1
    assert (
        f"{later} is read after /etc/crio/crio.conf.d/99-nvidia.conf and sets crio.runtime.{key}"
        in result.err
    )
    assert not host.at(DROPIN).exists()


def test_more_drop_ins_than_setup_reads_are_refused_not_guessed(host: HostTree) -> None:
    for number in range(300):
        host.write(f"/etc/crio/crio.conf.d/{number:03d}.conf", "")
    result = host.setup(setup_config("cri-o"))
    assert result.code == 1
    assert "holds more than 256 files" in result.err


def test_a_link_to_a_folder_among_the_drop_ins_is_refused_as_crio_cannot_read_it(
    host: HostTree,
) -> None:
    # filepath.Walk does not follow links: CRI-O reads the link as a file and fails to start.
    host.write("/etc/crio/site/10-site.conf", "[crio.runtime]\n")
    host.at("/etc/crio/crio.conf.d").mkdir(parents=True, exist_ok=True)
    host.at("/etc/crio/crio.conf.d/site").symlink_to("/etc/crio/site")
    result = host.setup(setup_config("cri-o"))
    assert result.code == 1
    assert "/etc/crio/crio.conf.d/site is a link to a folder" in result.err
    assert not host.at(DROPIN).exists()


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ("crio = 1\n", "crio"),
        ("[crio]\nruntime = []\n", "crio.runtime"),
        ("[crio.runtime]\nruntimes = 1\n", "crio.runtime.runtimes"),
        ("[crio.runtime.runtimes]\nrunc = 1\n", "crio.runtime.runtimes.runc"),
    ],
    ids=["crio", "runtime", "runtimes", "runc"],
)
@pytest.mark.parametrize("where", ["/etc/crio/crio.conf", "/etc/crio/crio.conf.d/50-site.conf"])
def test_a_runtime_table_of_the_wrong_type_is_refused_naming_the_file_and_key(
    host: HostTree, text: str, key: str, where: str
) -> None:
    host.write(where, text)
    result = host.setup(setup_config("cri-o"))
    assert result.code == 1, result.err
    assert f"{where}: `{key}` is " in result.err
    assert not host.at(DROPIN).exists()
