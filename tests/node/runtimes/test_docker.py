"""Docker: daemon.json merged key by key, with the key dockerd really reads for arguments."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from builders import NVIDIA_RUNTIME, HostTree, setup_config

DAEMON = "/etc/docker/daemon.json"


@pytest.fixture
def host(tmp_path: Path) -> HostTree:
    return HostTree(tmp_path)


def test_merge_keeps_every_other_key_and_runtime_and_the_file_mode(host: HostTree) -> None:
    existing = {"log-driver": "journald", "runtimes": {"runsc": {"path": "/usr/bin/runsc"}}}
    host.write(DAEMON, json.dumps(existing), mode=0o600)
    assert host.setup(setup_config("docker")).code == 0
    assert json.loads(host.read(DAEMON)) == {
        "default-runtime": "nvidia",
        "log-driver": "journald",
        "runtimes": {
            "nvidia": {"path": NVIDIA_RUNTIME, "runtimeArgs": []},
            "runsc": {"path": "/usr/bin/runsc"},
        },
    }
    assert host.at(DAEMON).stat().st_mode & 0o777 == 0o600


def test_an_old_args_key_of_our_runtime_is_replaced_by_runtime_args(host: HostTree) -> None:
    host.write(DAEMON, json.dumps({"runtimes": {"nvidia": {"path": "x", "args": []}}}))
    host.setup(setup_config("docker", setAsDefault=False))
    assert json.loads(host.read(DAEMON)) == {
        "runtimes": {"nvidia": {"path": NVIDIA_RUNTIME, "runtimeArgs": []}}
    }


def test_an_already_configured_file_is_left_byte_for_byte(host: HostTree) -> None:
    text = f'{{"default-runtime":"nvidia","runtimes":{{"nvidia":{{"path":"{NVIDIA_RUNTIME}","runtimeArgs":[]}}}}}}'
    host.write(DAEMON, text)
    result = host.setup(setup_config("docker"))
    assert host.read(DAEMON) == text
    assert "engine config unchanged; nothing restarted" in result.err


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"a": 1,}', "/etc/docker/daemon.json:1:9: not valid JSON"),
        ("[1, 2]", "holds a JSON list, not an object"),
        ('{"runtimes": []}', "`runtimes` is not an object"),
    ],
)
def test_a_file_it_cannot_merge_is_left_untouched_with_the_reason(
    host: HostTree, text: str, message: str
) -> None:
    host.write(DAEMON, text)
    result = host.setup(setup_config("docker"))
    assert result.code == 1
    assert message in result.err
    assert host.read(DAEMON) == text
    assert not host.at("/run/gpuconf/setup-ready").exists()


def test_cdi_turns_on_the_feature_and_is_refused_before_docker_25(host: HostTree) -> None:
    host.write(DAEMON, '{"features": {"buildkit": true}}')
    host.program("dockerd", "echo 'Docker version 26.1.4, build 5650f9b'")
    host.setup(setup_config("docker", enableCdi=True))
    assert json.loads(host.read(DAEMON))["features"] == {"buildkit": True, "cdi": True}
    host.program("dockerd", "echo 'Docker version 20.10.24+dfsg1, build 5d6db84'")
    result = host.setup(setup_config("docker", device_list_strategy="cdi"))
    assert result.code == 1
    assert "dockerd 20.10.24 has no CDI support (it came in 25.0)" in result.err
