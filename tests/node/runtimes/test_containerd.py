"""containerd: the drop-in follows the host's config version and carries what 1.x would otherwise lose."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import pytest
from builders import NVIDIA_RUNTIME, RUNTIME_FACTS, HostTree, setup_config

from gpuconf.node.runtimes.containerd import native_config_version

DROPIN = "/etc/containerd/conf.d/99-nvidia.toml"
MAIN = "/etc/containerd/config.toml"
V2 = "io.containerd.grpc.v1.cri"
V3 = "io.containerd.cri.v1.runtime"


@pytest.fixture
def host(tmp_path: Path) -> HostTree:
    return HostTree(tmp_path)


def fact(name: str) -> str:
    return (RUNTIME_FACTS / name).read_text()


def dropin(host: HostTree) -> dict[str, Any]:
    return tomllib.loads(host.read(DROPIN))


def test_version_2_dropin_equals_what_nvidia_ctk_writes_for_the_same_host(host: HostTree) -> None:
    host.write(MAIN, fact("containerd-1.6-main-systemd.toml"))
    assert host.setup(setup_config("containerd")).code == 0
    expected = tomllib.loads(fact("nvidia-ctk-1.20-dropin-for-1.6-systemd-main.toml"))
    assert dropin(host) == expected


def test_version_2_dropin_carries_the_host_s_whole_cri_table(host: HostTree) -> None:
    host.write(MAIN, fact("containerd-1.6-main-systemd.toml"))
    host.setup(setup_config("containerd"))
    main_cri = tomllib.loads(fact("containerd-1.6-main-systemd.toml"))["plugins"][V2]
    cri = dropin(host)["plugins"][V2]
    assert cri["sandbox_image"] == main_cri["sandbox_image"] == "registry.k8s.io/pause:3.9"
    assert cri["registry"]["config_path"] == "/etc/containerd/certs.d"
    assert cri["containerd"]["runtimes"]["runc"] == main_cri["containerd"]["runtimes"]["runc"]
    without_ours = {k: v for k, v in cri["containerd"]["runtimes"].items() if k != "nvidia"}
    assert without_ours == main_cri["containerd"]["runtimes"]


def test_the_nvidia_runtime_inherits_runc_options_and_swaps_the_binary(host: HostTree) -> None:
    host.write(MAIN, fact("containerd-1.6-main-systemd.toml"))
    host.setup(setup_config("containerd"))
    runtimes = dropin(host)["plugins"][V2]["containerd"]["runtimes"]
    runc, nvidia = runtimes["runc"], runtimes["nvidia"]
    assert nvidia["options"] == {**runc["options"], "BinaryName": NVIDIA_RUNTIME}
    assert nvidia["options"]["SystemdCgroup"] is True
    assert {k: v for k, v in nvidia.items() if k != "options"} == {
        k: v for k, v in runc.items() if k != "options"
    }


def test_a_main_file_without_cri_table_still_keeps_runc_declared(host: HostTree) -> None:
    host.write(MAIN, "version = 2\n")
    host.setup(setup_config("containerd", setAsDefault=False))
    containerd = dropin(host)["plugins"][V2]["containerd"]
    assert containerd["runtimes"]["runc"] == {"runtime_type": "io.containerd.runc.v2"}
    assert "default_runtime_name" not in containerd


@pytest.mark.parametrize(
    ("fixture", "version"),
    [
        ("containerd-2.0.11-config-default.toml", 3),
        ("containerd-2.1.5-config-default.toml", 3),
        ("containerd-2.4-config-default.toml", 4),
    ],
)
def test_version_3_and_4_hosts_get_a_dropin_of_their_own_version_with_only_our_keys(
    host: HostTree, fixture: str, version: int
) -> None:
    text = fact(fixture).replace("SystemdCgroup = false", "SystemdCgroup = true")
    host.write(MAIN, text)
    host.setup(setup_config("containerd"))
    written = dropin(host)
    assert written["version"] == version
    assert list(written["plugins"]) == [V3]
    containerd = written["plugins"][V3]["containerd"]
    assert containerd["default_runtime_name"] == "nvidia"
    assert list(containerd["runtimes"]) == ["nvidia"]
    assert containerd["runtimes"]["nvidia"]["options"]["SystemdCgroup"] is True
    assert containerd["runtimes"]["nvidia"]["options"]["BinaryName"] == NVIDIA_RUNTIME


def test_a_v2_main_file_on_a_v3_capable_host_gets_a_v2_dropin(host: HostTree) -> None:
    host.write(MAIN, 'version = 2\n[plugins."io.containerd.grpc.v1.cri"]\nsandbox_image = "x"\n')
    host.setup(setup_config("containerd", containerdConfigVersion=3))
    assert dropin(host)["version"] == 2
    assert dropin(host)["plugins"][V2]["sandbox_image"] == "x"


def test_with_no_binary_to_ask_a_missing_main_file_is_created_in_the_pool_s_version(
    host: HostTree,
) -> None:
    host.setup(setup_config("containerd", containerdConfigVersion=3))
    assert host.read(MAIN) == 'version = 3\nimports = ["/etc/containerd/conf.d/*.toml"]\n'
    assert dropin(host)["version"] == 3


@pytest.mark.parametrize(
    ("release", "declared", "version"),
    [
        ("1.6.20~ds1", 3, 2),  # 1.x reads no version 3: the pool's declaration is stale
        ("1.7.30", None, 2),
        ("v2.1.5", 4, 3),
        ("v2.1.5", 2, 3),
        ("v2.4.0", 3, 4),  # what 2.4's own `containerd config default` writes (facts/)
        ("v2.4.0", None, 4),
    ],
)
def test_a_missing_main_file_is_created_in_the_version_the_host_s_containerd_writes(
    host: HostTree, release: str, declared: int | None, version: int
) -> None:
    host.program("containerd", f"echo 'containerd github.com/containerd/containerd {release} abc'")
    assert host.setup(setup_config("containerd", containerdConfigVersion=declared)).code == 0
    assert host.read(MAIN) == f'version = {version}\nimports = ["/etc/containerd/conf.d/*.toml"]\n'
    assert dropin(host)["version"] == version


def test_imports_are_added_without_touching_any_other_byte(host: HostTree) -> None:
    original = (
        "# kubeadm wrote this\nversion = 2\n\n"
        '[plugins."io.containerd.grpc.v1.cri"]\n  sandbox_image = "registry.k8s.io/pause:3.9"  # pinned\n'
    )
    host.write(MAIN, original)
    host.setup(setup_config("containerd"))
    assert host.read(MAIN) == original.replace(
        "version = 2\n", 'version = 2\nimports = ["/etc/containerd/conf.d/*.toml"]\n'
    )


@pytest.mark.parametrize("rest", ["\r\n[plugins]\r\n", ""], ids=["before-a-table", "at-the-end"])
def test_imports_added_to_a_crlf_file_end_their_line_as_the_file_does(
    host: HostTree, rest: str
) -> None:
    original = "# written on Windows\r\nversion = 2\r\n" + rest
    host.write(MAIN, original.encode())
    host.setup(setup_config("containerd"))
    assert (
        host.at(MAIN).read_bytes()
        == original.replace(
            "version = 2\r\n", 'version = 2\r\nimports = ["/etc/containerd/conf.d/*.toml"]\r\n'
        ).encode()
    )


def test_other_imported_files_count_as_the_host_s_cri_table_in_load_order(host: HostTree) -> None:
    host.write(
        MAIN,
        'version = 2\nimports = ["/etc/containerd/conf.d/*.toml"]\n'
        '[plugins."io.containerd.grpc.v1.cri"]\nsandbox_image = "main"\n',
    )
    host.write(
        "/etc/containerd/conf.d/50-site.toml",
        'version = 2\n[plugins."io.containerd.grpc.v1.cri"]\nsandbox_image = "site"\n',
    )
    host.setup(setup_config("containerd"))
    # containerd 1.x: the last file with the table wins it whole.
    assert dropin(host)["plugins"][V2]["sandbox_image"] == "site"


def test_a_dropin_the_host_binary_cannot_read_is_refused(host: HostTree) -> None:
    host.write(MAIN, "version = 4\n")
    host.program("containerd", "echo 'containerd github.com/containerd/containerd/v2 v2.1.5 abc'")
    result = host.setup(setup_config("containerd"))
    assert result.code == 1
    assert "config version 4 is newer than containerd 2.1.5 reads (at most 3)" in result.err
    assert not host.at(DROPIN).exists()


def test_a_version_1_main_file_is_refused_with_the_migration_hint(host: HostTree) -> None:
    original = '[plugins.cri]\nsandbox_image = "x"\n'
    host.write(MAIN, original)
    result = host.setup(setup_config("containerd"))
    assert result.code == 1
    assert "config version 1" in result.err
    assert "containerd config migrate" in result.err
    assert host.read(MAIN) == original


@pytest.mark.parametrize(
    ("release", "version"),
    [((1, 6, 20), 2), ((1, 7, 30), 2), ((2, 0, 0), 3), ((2, 2, 7), 3), ((2, 3, 0), 4)],
)
def test_native_config_version_follows_the_release(
    release: tuple[int, int, int], version: int
) -> None:
    assert native_config_version(release) == version


def test_cdi_is_enabled_in_a_version_2_dropin_with_the_spec_dirs(host: HostTree) -> None:
    host.write(MAIN, fact("containerd-1.6-main-systemd.toml"))
    config = setup_config("containerd", enableCdi=True)
    host.setup(config)
    cri = dropin(host)["plugins"][V2]
    assert cri["enable_cdi"] is True
    assert cri["cdi_spec_dirs"] == ["/etc/cdi", "/var/run/cdi"]


def test_cdi_on_a_version_3_host_is_left_to_its_default_unless_turned_off(host: HostTree) -> None:
    host.write(MAIN, 'version = 3\n[plugins."io.containerd.cri.v1.runtime"]\nenable_cdi = false\n')
    host.setup(setup_config("containerd", enableCdi=True))
    assert dropin(host)["plugins"][V3]["enable_cdi"] is True
    host.write(MAIN, "version = 3\n")
    host.setup(setup_config("containerd", enableCdi=True))
    assert "enable_cdi" not in dropin(host)["plugins"][V3]


def test_a_cri_table_that_loads_after_the_dropin_is_refused_naming_its_file(
    host: HostTree,
) -> None:
    host.write(MAIN, 'version = 2\nimports = ["/etc/containerd/conf.d/*.toml"]\n')
    host.write(
        "/etc/containerd/conf.d/99-site.toml",
        f'version = 2\n[plugins."{V2}"]\nsandbox_image = "site"\n',
    )
    result = host.setup(setup_config("containerd"))
    assert result.code == 1
    assert "/etc/containerd/conf.d/99-site.toml loads after" in result.err
    assert not host.at(DROPIN).exists()


def test_imports_load_breadth_first_relative_to_the_importing_file(host: HostTree) -> None:
    # The layout the real containerd 1.6 loads in test_real_engines: site/b.toml is queued
    # behind our drop-in, so its CRI table would replace ours.
    host.write(MAIN, 'version = 2\nimports = ["site/a.toml", "/etc/containerd/conf.d/*.toml"]\n')
    host.write("/etc/containerd/site/a.toml", 'version = 2\nimports = ["b.toml"]\n')
    host.write(
        "/etc/containerd/site/b.toml", f'version = 2\n[plugins."{V2}"]\nsandbox_image = "b"\n'
    )
    result = host.setup(setup_config("containerd"))
    assert result.code == 1
    assert "/etc/containerd/site/b.toml loads after" in result.err


def test_an_entry_without_a_star_is_one_file_not_a_pattern(host: HostTree) -> None:
    host.write(MAIN, 'version = 2\nimports = ["/etc/containerd/site[1].toml"]\n')
    host.write(
        "/etc/containerd/site[1].toml", f'version = 2\n[plugins."{V2}"]\nsandbox_image = "s"\n'
    )
    host.write("/etc/containerd/site1.toml", 'version = 2\n[plugins."x"]\nk = 1\n')
    assert host.setup(setup_config("containerd")).code == 0
    assert dropin(host)["plugins"][V2]["sandbox_image"] == "s"


def _containerd(host: HostTree, release: str) -> None:
    host.program("containerd", f"echo 'containerd github.com/containerd/containerd {release} abc'")


@pytest.mark.parametrize(
    ("release", "loads_site"),
    [
        ("v1.6.20", False),
        ("v1.6.29", True),
        ("v1.7.15", False),
        ("v1.7.16", True),
        ("v2.1.4", True),
    ],
)
def test_a_relative_glob_is_matched_where_the_release_matches_it(
    host: HostTree, release: str, loads_site: bool
) -> None:
    # containerd commit 0f2068a7: from 1.6.29, 1.7.16 and 2.0 in the importing file's folder,
    # before in the daemon's working directory (/).
    _containerd(host, release)
    host.write(MAIN, 'version = 2\nimports = ["site/*.toml"]\n')
    host.write(
        "/etc/containerd/site/10.toml", f'version = 2\n[plugins."{V2}"]\nsandbox_image = "site"\n'
    )
    host.write("/site/10.toml", f'version = 2\n[plugins."{V2}"]\nsandbox_image = "root"\n')
    assert host.setup(setup_config("containerd")).code == 0
    assert dropin(host)["plugins"][V2]["sandbox_image"] == ("site" if loads_site else "root")


def test_on_containerd_2_a_later_file_may_set_the_cri_table_but_not_the_dropin_s_keys(
    host: HostTree,
) -> None:
    _containerd(host, "v2.1.4")
    host.write(MAIN, 'version = 3\nimports = ["/etc/containerd/conf.d/*.toml"]\n')
    later = "/etc/containerd/conf.d/zz-site.toml"
    host.write(
        later, f'version = 3\n[plugins."{V3}"]\ndevice_ownership_from_security_context = true\n'
    )
    assert host.setup(setup_config("containerd", setAsDefault=True)).code == 0
    host.write(later, f'version = 3\n[plugins."{V3}".containerd]\ndefault_runtime_name = "runc"\n')
    result = host.setup(setup_config("containerd", setAsDefault=True))
    assert result.code == 1
    assert f"{later} loads after" in result.err
    assert "containerd.default_runtime_name" in result.err


@pytest.mark.parametrize("site", ["00-site.toml", "zz-site.toml"], ids=["before", "after"])
def test_on_containerd_2_a_version_2_host_keeps_runc_s_options_beside_a_partial_cri_table(
    host: HostTree, site: str
) -> None:
    # 2.x deep-merges a version-2 file too: a partial CRI table before or after the drop-in
    # leaves the main file's runc (SystemdCgroup on) standing, and the drop-in keeps it so.
    _containerd(host, "v2.1.4")
    host.write(
        MAIN,
        'version = 2\nimports = ["/etc/containerd/conf.d/*.toml"]\n'
        f'[plugins."{V2}".containerd.runtimes.runc]\nruntime_type = "io.containerd.runc.v2"\n'
        f'[plugins."{V2}".containerd.runtimes.runc.options]\nSystemdCgroup = true\n',
    )
    host.write(
        f"/etc/containerd/conf.d/{site}", f'version = 2\n[plugins."{V2}"]\nsandbox_image = "z"\n'
    )
    assert host.setup(setup_config("containerd")).code == 0
    runtimes = dropin(host)["plugins"][V2]["containerd"]["runtimes"]
    assert runtimes["runc"]["options"]["SystemdCgroup"] is True
    assert runtimes["nvidia"]["options"]["SystemdCgroup"] is True


def test_on_containerd_2_a_later_file_may_repeat_what_the_dropin_sets_but_not_change_it(
    host: HostTree,
) -> None:
    _containerd(host, "v2.1.4")
    host.write(MAIN, 'version = 2\nimports = ["/etc/containerd/conf.d/*.toml"]\n')
    later = "/etc/containerd/conf.d/zz-site.toml"
    config = setup_config("containerd", enableCdi=True)
    host.write(later, f'version = 2\n[plugins."{V2}"]\nenable_cdi = true\n')
    assert host.setup(config).code == 0
    host.write(later, f'version = 2\n[plugins."{V2}"]\nenable_cdi = false\n')
    result = host.setup(config)
    assert result.code == 1
    assert f"{later} loads after" in result.err
    assert "sets enable_cdi" in result.err


def test_a_missing_plain_import_is_refused_as_containerd_would_not_start(
    host: HostTree,
) -> None:
    host.write(MAIN, 'version = 2\nimports = ["/etc/containerd/site.toml"]\n')
    result = host.setup(setup_config("containerd"))
    assert result.code == 1
    assert "/etc/containerd/site.toml is imported but does not exist" in result.err
    assert not host.at(DROPIN).exists()


def test_a_wildcard_in_an_import_s_folder_is_matched_folder_by_folder(host: HostTree) -> None:
    # Go's filepath.Glob, which containerd calls for an entry holding `*`.
    host.write(MAIN, 'version = 2\nimports = ["/etc/containerd/*/site.toml"]\n')
    for folder in ("b", "a"):
        host.write(
            f"/etc/containerd/{folder}/site.toml",
            f'version = 2\n[plugins."{V2}"]\nsandbox_image = "{folder}"\n',
        )
    assert host.setup(setup_config("containerd")).code == 0
    assert dropin(host)["plugins"][V2]["sandbox_image"] == "b"


def test_more_imported_files_than_setup_reads_are_refused_not_guessed(host: HostTree) -> None:
    host.write(
        MAIN,
        'version = 2\nimports = ["/etc/containerd/site/*.toml", "/etc/containerd/conf.d/*.toml"]\n',
    )
    for number in range(300):
        host.write(f"/etc/containerd/site/{number:03d}.toml", "version = 2\n")
    result = host.setup(setup_config("containerd"))
    assert result.code == 1
    assert "imports more than 256 files" in result.err


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ("version = 2\nplugins = 1\n", "plugins"),
        (f'version = 2\n[plugins."{V2}"]\ncontainerd = 3\n', f"plugins.{V2}.containerd"),
        (
            f'version = 2\n[plugins."{V2}".containerd]\nruntimes = "runc"\n',
            f"plugins.{V2}.containerd.runtimes",
        ),
        (
            f'version = 2\n[plugins."{V2}".containerd.runtimes]\nrunc = 3\n',
            f"plugins.{V2}.containerd.runtimes.runc",
        ),
        (
            f'version = 2\n[plugins."{V2}".containerd.runtimes.runc]\noptions = []\n',
            f"plugins.{V2}.containerd.runtimes.runc.options",
        ),
        (
            f'version = 2\n[plugins."{V2}".containerd]\ndefault_runtime_name = ["runc"]\n',
            f"plugins.{V2}.containerd.default_runtime_name",
        ),
    ],
    ids=["plugins", "cri", "runtimes", "runc", "options", "default-runtime-name"],
)
def test_a_cri_table_of_the_wrong_type_is_refused_naming_the_file_and_key(
    host: HostTree, text: str, key: str
) -> None:
    # containerd refuses these too: "failed to unmarshal TOML: (2, 1): Can't convert 1(int64)
    # to map[string]toml.Tree(map)" (containerd 1.6.20, `containerd --config F config dump`).
    host.write(MAIN, 'version = 2\nimports = ["/etc/containerd/site.toml"]\n')
    host.write("/etc/containerd/site.toml", text)
    result = host.setup(setup_config("containerd"))
    assert result.code == 1, result.err
    assert f"/etc/containerd/site.toml: `{key}` is " in result.err
    assert "left untouched" in result.err
    assert not host.at(DROPIN).exists()
