"""k3s: the template k3s reads is merged, never replaced; nothing k3s declares itself is declared twice."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from builders import (
    NVIDIA_RUNTIME,
    CliResult,
    HostTree,
    fake_nvidia_ctk,
    gpu_uuid,
    nvlink_box,
    run_cli,
    setup_config,
)

from gpuconf.node.runtimes.k3s import declares_runtime, searches_path, ships_containerd_2

TEMPLATES = "/var/lib/rancher/k3s/agent/etc/containerd"
V2 = f"{TEMPLATES}/config.toml.tmpl"
V3 = f"{TEMPLATES}/config-v3.toml.tmpl"
DEFAULT_DROPIN = "/etc/rancher/k3s/config.yaml.d/90-gpuconf-nvidia.yaml"
CUSTOM = "/opt/nvidia/bin/nvidia-container-runtime"


@pytest.fixture
def host(tmp_path: Path) -> HostTree:
    tree = HostTree(tmp_path)
    tree.write(CUSTOM, "#!/bin/sh\n")
    tree.at(NVIDIA_RUNTIME).unlink()  # only the custom binary, unless a test installs k3s's own
    return tree


def test_a_binary_k3s_finds_itself_gets_no_template_only_the_default_runtime(
    host: HostTree,
) -> None:
    host.write(NVIDIA_RUNTIME, "#!/bin/sh\n")
    assert host.setup(setup_config("k3s")).code == 0
    assert not host.at(V2).exists()
    assert not host.at(V3).exists()
    assert host.read(DEFAULT_DROPIN) == "default-runtime: nvidia\n"


def test_an_existing_custom_template_keeps_its_runtimes_and_gains_ours(host: HostTree) -> None:
    custom = (
        '{{ template "base" . }}\n\n'
        '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes."runsc"]\n'
        '  runtime_type = "io.containerd.runsc.v1"\n'
    )
    host.write(V2, custom)
    host.setup(setup_config("k3s", binaryPath=CUSTOM))
    merged = host.read(V2)
    assert merged.startswith(custom)
    assert '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes."nvidia"]' in merged
    assert f'BinaryName = "{CUSTOM}"' in merged
    assert "SystemdCgroup = {{ .SystemdCgroup }}" in merged
    assert not host.at(V3).exists()


def test_the_v3_template_wins_when_the_host_has_one(host: HostTree) -> None:
    host.write(V2, '{{ template "base" . }}\n')
    host.write(V3, '{{ template "base" . }}\n')
    host.setup(setup_config("k3s", binaryPath=CUSTOM))
    assert "'io.containerd.cri.v1.runtime'" in host.read(V3)
    assert host.read(V2) == '{{ template "base" . }}\n'


@pytest.mark.parametrize(
    ("version", "template"),
    [("v1.30.9+k3s1", V2), ("v1.31.6+k3s1", V3), ("v1.32.1+k3s1", V2), ("v1.33.0+k3s1", V3)],
)
def test_a_new_template_takes_the_name_the_k3s_release_reads(
    host: HostTree, version: str, template: str
) -> None:
    host.program("k3s", f"echo 'k3s version {version} (abcdef)'; echo 'go version go1.23'")
    host.setup(setup_config("k3s", binaryPath=CUSTOM))
    assert host.read(template).startswith('{{ template "base" . }}\n')
    other = V3 if template == V2 else V2
    assert not host.at(other).exists()


def test_an_unknown_k3s_release_gets_the_template_name_every_release_reads(host: HostTree) -> None:
    host.setup(setup_config("k3s", binaryPath=CUSTOM))
    assert host.at(V2).exists()
    assert not host.at(V3).exists()


def test_a_template_that_declares_nvidia_already_is_left_alone(host: HostTree) -> None:
    custom = (
        '{{ template "base" . }}\n'
        "[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.nvidia.options]\n"
        '  BinaryName = "/x"\n'
    )
    host.write(V3, custom)
    host.setup(setup_config("k3s", binaryPath=CUSTOM))
    assert host.read(V3) == custom


def test_setting_nothing_as_default_writes_no_default_runtime(host: HostTree) -> None:
    host.write(NVIDIA_RUNTIME, "#!/bin/sh\n")
    host.setup(setup_config("k3s", setAsDefault=False))
    assert not host.at(DEFAULT_DROPIN).exists()


def test_k3s_is_never_signalled(host: HostTree) -> None:
    result = host.setup(setup_config("k3s", binaryPath=CUSTOM, restart="signal"))
    assert result.code == 1
    assert "k3s has no config reload" in result.err


@pytest.mark.parametrize(
    ("header", "declared"),
    [
        ('[plugins."io.containerd.grpc.v1.cri".containerd.runtimes."nvidia"]', True),
        ("[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.'nvidia'.options]", True),
        ('[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia-cdi]', False),
        ("# [plugins.x.containerd.runtimes.nvidia]", False),
    ],
)
def test_declared_runtimes_are_read_from_table_headers(header: str, declared: bool) -> None:
    assert declares_runtime(header + "\n", "nvidia") is declared


def test_containerd_2_came_with_1_31_6_and_1_32_2() -> None:
    assert [ships_containerd_2((1, m, p)) for m, p in [(31, 5), (31, 6), (32, 1), (32, 2), (34, 0)]] == [
        False, True, False, True, True,
    ]  # fmt: skip


def test_a_custom_binary_next_to_one_k3s_finds_is_refused(host: HostTree) -> None:
    host.write("/usr/local/bin/nvidia-container-runtime", "#!/bin/sh\n")
    result = host.setup(setup_config("k3s", binaryPath=CUSTOM))
    assert result.code == 1
    assert "k3s declares the nvidia runtime itself for /usr/local/bin/nvidia-container-runtime" in (
        result.err
    )
    assert not host.at(V2).exists()


@pytest.mark.parametrize("version", [None, "v1.31.5+k3s1", "v1.32.1+k3s1"])
def test_cdi_on_a_k3s_release_without_containerd_2_is_refused_and_nothing_is_written(
    host: HostTree, version: str | None
) -> None:
    if version is not None:
        host.program("k3s", f"echo 'k3s version {version} (abcdef)'; echo 'go version go1.23'")
    before = host.files()
    result = host.setup(setup_config("k3s", "cdi", binaryPath=CUSTOM))
    assert result.code == 1
    assert "pods would get no GPU" in result.err
    assert "volume-mounts" in result.err
    written = {p for p in host.files().keys() - before.keys() if not p.startswith("/run/gpuconf/")}
    assert not written


def test_cdi_on_a_k3s_release_with_containerd_2_is_written(host: HostTree) -> None:
    host.program("k3s", "echo 'k3s version v1.32.2+k3s1 (abcdef)'; echo 'go version go1.23'")
    fake_nvidia_ctk(host, [gpu_uuid(0)])
    assert host.setup(setup_config("k3s", "cdi", binaryPath=CUSTOM)).code == 0
    assert host.at(V3).exists()


# k3s's own detection, per release (pkg/agent/containerd: nvidia.go, then runtimes.go's
# findNvidiaContainerRuntimes; from the October 2024 releases exec.LookPath over
# config_linux.go's runtimesPath and the service PATH, k3s issue 10761).
LOCAL_BIN = "/usr/local/bin/nvidia-container-runtime"


@pytest.mark.parametrize(
    "version", ["v1.27.16+k3s1", "v1.28.14+k3s1", "v1.29.9+k3s1", "v1.30.5+k3s1", "v1.31.1+k3s1"]
)
def test_before_its_path_search_k3s_misses_a_binary_outside_its_two_folders_so_setup_declares_it(
    host: HostTree, version: str
) -> None:
    host.program("k3s", f"echo 'k3s version {version} (abcdef)'")
    host.write(LOCAL_BIN, "#!/bin/sh\n")
    assert host.setup(setup_config("k3s", binaryPath=LOCAL_BIN)).code == 0
    assert f'BinaryName = "{LOCAL_BIN}"' in host.read(V2)
    assert host.read(DEFAULT_DROPIN) == "default-runtime: nvidia\n"


@pytest.mark.parametrize(
    "version", ["v1.28.15+k3s1", "v1.29.10+k3s1", "v1.30.6+k3s1", "v1.31.2+k3s1", "v1.32.0+k3s1"]
)
def test_from_its_path_search_k3s_finds_a_binary_on_its_path_itself_so_setup_declares_nothing(
    host: HostTree, version: str
) -> None:
    host.program("k3s", f"echo 'k3s version {version} (abcdef)'")
    host.write(LOCAL_BIN, "#!/bin/sh\n")
    assert host.setup(setup_config("k3s", binaryPath=LOCAL_BIN)).code == 0
    assert not host.at(V2).exists()
    assert not host.at(V3).exists()
    assert host.read(DEFAULT_DROPIN) == "default-runtime: nvidia\n"


def test_an_unknown_k3s_release_with_a_binary_only_newer_releases_find_is_refused(
    host: HostTree,
) -> None:
    host.write(LOCAL_BIN, "#!/bin/sh\n")
    result = host.setup(setup_config("k3s", binaryPath=LOCAL_BIN))
    assert result.code == 1
    assert f"cannot tell whether k3s finds {LOCAL_BIN} itself" in result.err
    assert not host.at(DEFAULT_DROPIN).exists()


def test_an_old_k3s_that_finds_its_own_binary_in_usr_bin_refuses_a_second_declaration(
    host: HostTree,
) -> None:
    host.program("k3s", "echo 'k3s version v1.30.5+k3s1 (abcdef)'")
    host.write(NVIDIA_RUNTIME, "#!/bin/sh\n")
    host.write(LOCAL_BIN, "#!/bin/sh\n")
    result = host.setup(setup_config("k3s", binaryPath=LOCAL_BIN))
    assert result.code == 1
    assert f"k3s declares the nvidia runtime itself for {NVIDIA_RUNTIME}" in result.err


def test_the_path_search_came_with_the_october_2024_patch_of_each_release_line() -> None:
    # The first builds k3s's backports validated (k3s-io/k3s issues 11001, 11000, 10998 for
    # 1.28, 1.29, 1.31; 10761 upstream), not k3s.py's table read back.
    firsts = [(1, 28, 15), (1, 29, 10), (1, 30, 6), (1, 31, 2), (1, 32, 0), (1, 34, 1)]
    assert all(searches_path(v) for v in firsts)
    assert not any(searches_path((1, m, p - 1)) for _, m, p in firsts[:4])
    assert not searches_path((1, 27, 99))


# k3s merges config.yaml.d in lexical order, the last value kept (pkg/configfilearg parser.go).
@pytest.mark.parametrize("name", ["95-site.yaml", "99-z.YML", "90-gpuconf-nvidia2.yaml"])
def test_a_dropin_k3s_reads_after_ours_that_sets_the_default_runtime_back_is_refused(
    host: HostTree, name: str
) -> None:
    host.write(NVIDIA_RUNTIME, "#!/bin/sh\n")
    later = f"/etc/rancher/k3s/config.yaml.d/{name}"
    host.write(later, "node-label: [a=b]\ndefault-runtime: runc\n")
    result = host.setup(setup_config("k3s"))
    assert result.code == 1
    assert f"{later}:2:1: default-runtime: 'runc' wins over {DEFAULT_DROPIN}" in result.err
    assert not host.at(DEFAULT_DROPIN).exists()


LATER_DROPIN = "/etc/rancher/k3s/config.yaml.d/95-site.yaml"


def later_dropin_refusal(host: HostTree, text: str) -> str:
    """What setup prints on stderr, failing, where a drop-in read after gpuconf's holds `text`."""
    host.write(NVIDIA_RUNTIME, "#!/bin/sh\n")
    host.write(LATER_DROPIN, text)
    result = host.setup(setup_config("k3s"))
    assert result.code == 1
    return result.err


# readConfigFile: `key+` appends; each value becomes a flag and the last string flag wins.
@pytest.mark.parametrize("text", ["default-runtime+: runc\n", "default-runtime+: [nvidia, runc]\n"])
def test_a_later_dropin_appending_another_default_runtime_is_refused(
    host: HostTree, text: str
) -> None:
    assert (
        f"{LATER_DROPIN}:1:1: default-runtime+: 'runc' wins over {DEFAULT_DROPIN}"
        in later_dropin_refusal(host, text)
    )


def test_a_later_dropin_setting_the_default_runtime_to_a_mapping_is_shown_as_written(
    host: HostTree,
) -> None:
    assert (
        f"{LATER_DROPIN}:1:1: default-runtime: 'name: nvidia' wins over {DEFAULT_DROPIN}"
        in later_dropin_refusal(host, "default-runtime:\n  name: nvidia\n")
    )


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("95-site.yaml", "default-runtime+: [runc, nvidia]\n"),  # the last appended is ours
        ("10-site.yaml", "default-runtime: runc\n"),  # read before ours: ours wins
        ("95-site.yaml", "default-runtime: nvidia\n"),
        ("95-site.yaml", "node-label: [a=b]\n"),
        ("95-site.yaml", ""),
        ("95-site.yaml", "# nothing set here yet\n"),  # yaml.v2: no keys, no error
        ("95-site.yaml", "default-runtime: runc\ndefault-runtime: nvidia\n"),  # the last wins
        ("95-site.yaml", "default-runtime: yes\ndefault-runtime: nvidia\n"),
        ("95-site.conf", "default-runtime: runc\n"),  # not read by k3s
        # `+` appends to the value so far: [runc, nvidia], one flag each, the last wins.
        ("95-site.yaml", "default-runtime: runc\ndefault-runtime+: nvidia\n"),
        # A plain key replaces whatever was appended before it.
        ("95-site.yaml", "default-runtime+: runc\ndefault-runtime: nvidia\n"),
        ("95-site.yaml", "default-runtime: runc\ndefault-runtime+: [nvidia]\n"),
    ],
)
def test_dropins_that_leave_our_default_runtime_standing_are_accepted(
    host: HostTree, name: str, text: str
) -> None:
    host.write(NVIDIA_RUNTIME, "#!/bin/sh\n")
    host.write(f"/etc/rancher/k3s/config.yaml.d/{name}", text)
    assert host.setup(setup_config("k3s")).code == 0
    assert host.read(DEFAULT_DROPIN) == "default-runtime: nvidia\n"


# readConfigFile folds every file in order into one value per key: a later file's value, not
# the first file that differs, decides.
@pytest.mark.parametrize(
    "files",
    [
        {"95-a.yaml": "default-runtime: runc\n", "96-b.yaml": "default-runtime: nvidia\n"},
        {"95-a.yaml": "default-runtime: runc\n", "96-b.yaml": "default-runtime+: nvidia\n"},
        {"95-a.yaml": "default-runtime+: runc\n", "96-b.yaml": "default-runtime: nvidia\n"},
    ],
)
def test_later_dropins_that_together_end_on_nvidia_are_accepted(
    host: HostTree, files: dict[str, str]
) -> None:
    host.write(NVIDIA_RUNTIME, "#!/bin/sh\n")
    for name, text in files.items():
        host.write(f"/etc/rancher/k3s/config.yaml.d/{name}", text)
    assert host.setup(setup_config("k3s")).code == 0
    assert host.read(DEFAULT_DROPIN) == "default-runtime: nvidia\n"


@pytest.mark.parametrize(
    ("files", "at", "value"),
    [
        # The refusal names the entry that set the final value, once, not the first that differs.
        (
            {"95-a.yaml": "default-runtime: runsc\n", "96-b.yaml": "default-runtime: runc\n"},
            "96-b.yaml:1:1: default-runtime",
            "'runc'",
        ),
        (
            # Appending nothing leaves 95-a's value last.
            {"95-a.yaml": "default-runtime: runc\n", "96-b.yaml": "default-runtime+: []\n"},
            "95-a.yaml:1:1: default-runtime",
            "'runc'",
        ),
        # A null or an empty slice: k3s passes `--default-runtime=` or no flag, no runtime.
        ({"95-a.yaml": "default-runtime:\n"}, "95-a.yaml:1:1: default-runtime", "''"),
        ({"95-a.yaml": "default-runtime: []\n"}, "95-a.yaml:1:1: default-runtime", "''"),
    ],
)
def test_later_dropins_that_together_end_on_another_runtime_are_refused_where_it_is_set(
    host: HostTree, files: dict[str, str], at: str, value: str
) -> None:
    host.write(NVIDIA_RUNTIME, "#!/bin/sh\n")
    for name, text in files.items():
        host.write(f"/etc/rancher/k3s/config.yaml.d/{name}", text)
    result = host.setup(setup_config("k3s"))
    assert result.code == 1
    assert f"/etc/rancher/k3s/config.yaml.d/{at}: {value} wins over" in result.err
    assert result.err.count("wins over") == 1


def _check(host: HostTree, config: dict[str, Any]) -> CliResult:
    fake = host.folder / "fake-nvml.json"
    fake.write_text(json.dumps({"driverVersion": "550.54.15", "gpus": nvlink_box(1)}))
    return run_cli(
        "node", "check", "--config", str(host.config_file(config)), "--node-name", "n1",
        "--nvml", f"fake:{fake}", "--runtime-url", "http://127.0.0.1:9", "--root", str(host.root),
        "--host-commands", "direct",
    )  # fmt: skip


def test_node_check_reports_a_later_dropin_that_undoes_setups_default_runtime(
    host: HostTree,
) -> None:
    host.write(NVIDIA_RUNTIME, "#!/bin/sh\n")
    config = setup_config("k3s")
    assert host.setup(config).code == 0
    configured = _check(host, config)
    assert configured.code == 0, configured.err
    assert "host runtime (k3s): configured as setup leaves it" in configured.out
    host.write("/etc/rancher/k3s/config.yaml.d/99-site.yaml", "default-runtime: runc\n")
    undone = _check(host, config)
    assert undone.code == 1
    assert (
        "host runtime (k3s): setup would refuse: "
        "/etc/rancher/k3s/config.yaml.d/99-site.yaml:1:1: default-runtime: 'runc' wins over"
    ) in undone.out


def test_a_later_dropin_whose_repeated_key_ends_on_another_runtime_is_refused_at_that_key(
    host: HostTree,
) -> None:
    # yaml.v2 keeps both entries of a repeated key in order; k3s's flags take the last.
    assert (
        f"{LATER_DROPIN}:2:1: default-runtime: 'runc' wins over {DEFAULT_DROPIN}"
        in later_dropin_refusal(host, "default-runtime: nvidia\ndefault-runtime: runc\n")
    )
