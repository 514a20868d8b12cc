"""The toolkit's config.toml and the node's CDI spec: what the device list strategy and driver need."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest
from builders import HostTree, fake_nvidia_ctk, gpu_uuid, mig_uuid, setup_config

TOOLKIT = "/etc/nvidia-container-runtime/config.toml"
CDI_SPEC = "/var/run/cdi/nvidia.json"
HOST_TOOLKIT = """\
disable-require = false
#swarm-resource = "DOCKER_RESOURCE_GPU"

[nvidia-container-cli]
environment = []
ldconfig = "@/sbin/ldconfig.real"
load-kmods = true

[nvidia-container-runtime]
log-level = "info"
mode = "auto"
"""


@pytest.fixture
def host(tmp_path: Path) -> HostTree:
    tree = HostTree(tmp_path)
    tree.write("/etc/docker/daemon.json", "{}")
    return tree


def test_envvar_with_a_host_driver_leaves_the_toolkit_config_alone(host: HostTree) -> None:
    host.setup(setup_config("docker"))
    assert not host.at(TOOLKIT).exists()


def test_a_toolkit_config_setup_leaves_alone_is_not_judged(host: HostTree) -> None:
    host.write(TOOLKIT, "this is [not toml\n")
    result = host.setup(setup_config("docker"))
    assert result.code == 0, result.err
    assert host.read(TOOLKIT) == "this is [not toml\n"


def test_volume_mounts_stops_unprivileged_envvar_requests_and_keeps_host_keys(
    host: HostTree,
) -> None:
    host.write(TOOLKIT, HOST_TOOLKIT)
    host.setup(setup_config("docker", device_list_strategy="volume-mounts"))
    written = tomllib.loads(host.read(TOOLKIT))
    before = tomllib.loads(HOST_TOOLKIT)
    assert written == {
        **before,
        "accept-nvidia-visible-devices-envvar-when-unprivileged": False,
        "accept-nvidia-visible-devices-as-volume-mounts": True,
    }


def test_a_containerised_driver_moves_the_cli_root_and_ldconfig(host: HostTree) -> None:
    host.write(TOOLKIT, HOST_TOOLKIT)
    host.write("/run/nvidia/validations/driver-ready", "")
    host.setup(setup_config("docker", driverRoot="/run/nvidia/driver"))
    cli = tomllib.loads(host.read(TOOLKIT))["nvidia-container-cli"]
    assert cli["root"] == "/run/nvidia/driver"
    assert cli["ldconfig"] == "@/run/nvidia/driver/sbin/ldconfig.real"
    assert cli["load-kmods"] is True


def test_cdi_generates_the_spec_with_uuid_names_through_the_host_s_nvidia_ctk(
    host: HostTree,
) -> None:
    fake_nvidia_ctk(host, [gpu_uuid(0), mig_uuid(1, 1), "all"])
    host.program("dockerd", "echo 'Docker version 27.3.1, build ce12230'")
    assert host.setup(setup_config("docker", device_list_strategy="cdi")).code == 0
    spec = json.loads(host.read(CDI_SPEC))
    assert spec["kind"] == "nvidia.com/gpu"
    assert [d["name"] for d in spec["devices"]] == [gpu_uuid(0), mig_uuid(1, 1), "all"]
    args = (host.folder / "ctk-args").read_text().split()
    assert args == ["cdi", "generate", "--format=json", "--device-name-strategy=uuid"]
    assert json.loads(host.read("/etc/docker/daemon.json"))["features"] == {"cdi": True}
    toolkit = tomllib.loads(host.read(TOOLKIT))
    assert toolkit == {"accept-nvidia-visible-devices-envvar-when-unprivileged": False}


def test_cdi_spec_follows_a_var_run_symlink_inside_the_host_root(host: HostTree) -> None:
    host.at("/run").mkdir(parents=True, exist_ok=True)
    host.at("/var").mkdir(parents=True, exist_ok=True)
    host.at("/var/run").symlink_to("/run")
    fake_nvidia_ctk(host, [gpu_uuid(0)])
    host.setup(setup_config("cri-o", device_list_strategy="cdi"))
    assert json.loads(host.at("/run/cdi/nvidia.json").read_text())["devices"][0][
        "name"
    ] == gpu_uuid(0)


@pytest.mark.parametrize(
    ("devices", "kind", "message"),
    [
        (["0", "all"], "nvidia.com/gpu", "names no device by GPU or MIG UUID (names: 0, all)"),
        ([gpu_uuid(0)], "nvidia.com/mig", "has kind 'nvidia.com/mig', not 'nvidia.com/gpu'"),
    ],
)
def test_a_spec_the_plugin_s_names_would_not_resolve_in_is_refused(
    host: HostTree, devices: list[str], kind: str, message: str
) -> None:
    fake_nvidia_ctk(host, devices, kind)
    result = host.setup(setup_config("cri-o", device_list_strategy="cdi"))
    assert result.code == 1
    assert message in result.err
    assert not host.at(CDI_SPEC).exists()


def test_cdi_without_nvidia_ctk_on_the_host_says_what_to_install(host: HostTree) -> None:
    result = host.setup(setup_config("cri-o", device_list_strategy="cdi"))
    assert result.code == 1
    assert "needs nvidia-ctk on the host" in result.err


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ("nvidia-container-cli = 1\n", "nvidia-container-cli"),
        ("[nvidia-container-cli]\nldconfig = 5\n", "nvidia-container-cli.ldconfig"),
    ],
    ids=["cli", "ldconfig"],
)
def test_a_toolkit_setting_of_the_wrong_type_is_refused_naming_the_key(
    host: HostTree, text: str, key: str
) -> None:
    host.write(TOOLKIT, text)
    host.write("/run/nvidia/validations/driver-ready", "")
    result = host.setup(setup_config("docker", driverRoot="/run/nvidia/driver"))
    assert result.code == 1, result.err
    assert f"{TOOLKIT}: `{key}` is " in result.err
    assert host.read(TOOLKIT) == text
