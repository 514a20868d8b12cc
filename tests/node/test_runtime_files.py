from __future__ import annotations

import json
import tomllib
from typing import Any

import pytest

from gpuconf.api import runtime_files
from gpuconf.api.node_config import RuntimeSettings

BINARY = "/usr/bin/nvidia-container-runtime"


def settings(
    engine: str = "containerd", default: bool = False, version: int = 2
) -> RuntimeSettings:
    return RuntimeSettings.model_validate(
        {
            "engine": engine,
            "setAsDefault": default,
            "binaryPath": BINARY,
            "containerdConfigVersion": version,
        }
    )


def test_docker_fragment_adds_the_runtime_only() -> None:
    assert runtime_files.docker_daemon_fragment(settings("docker")) == {
        "runtimes": {"nvidia": {"args": [], "path": BINARY}}
    }


def test_docker_fragment_sets_the_default_when_asked() -> None:
    fragment = runtime_files.docker_daemon_fragment(settings("docker", default=True))
    assert fragment["default-runtime"] == "nvidia"


def test_docker_merge_keeps_every_other_key_and_runtime() -> None:
    existing: dict[str, Any] = {
        "log-driver": "journald",
        "runtimes": {"runsc": {"path": "/usr/bin/runsc"}},
        "default-runtime": "runc",
    }
    merged = runtime_files.merge_docker_daemon(existing, settings("docker"))
    assert merged == {
        "log-driver": "journald",
        "default-runtime": "runc",
        "runtimes": {"runsc": {"path": "/usr/bin/runsc"}, "nvidia": {"args": [], "path": BINARY}},
    }
    assert "nvidia" not in existing["runtimes"]


def test_docker_merge_replaces_the_default_when_asked() -> None:
    merged = runtime_files.merge_docker_daemon(
        {"default-runtime": "runc"}, settings("docker", default=True)
    )
    assert merged["default-runtime"] == "nvidia"


def test_docker_daemon_text_is_sorted_with_a_trailing_newline() -> None:
    text = runtime_files.docker_daemon_text({"b": 1, "a": {"d": 2, "c": 3}})
    assert text == '{\n  "a": {\n    "c": 3,\n    "d": 2\n  },\n  "b": 1\n}\n'
    assert json.loads(text) == {"a": {"c": 3, "d": 2}, "b": 1}


def test_containerd_v2_dropin() -> None:
    text = runtime_files.containerd_dropin(settings())
    assert text == (
        "version = 2\n"
        "\n"
        '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia]\n'
        'runtime_type = "io.containerd.runc.v2"\n'
        "\n"
        '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia.options]\n'
        f'BinaryName = "{BINARY}"\n'
    )


def test_containerd_default_runtime_only_when_asked() -> None:
    plain = tomllib.loads(runtime_files.containerd_dropin(settings()))
    default = tomllib.loads(runtime_files.containerd_dropin(settings(default=True)))
    assert "default_runtime_name" not in plain["plugins"]["io.containerd.grpc.v1.cri"]["containerd"]
    assert (
        default["plugins"]["io.containerd.grpc.v1.cri"]["containerd"]["default_runtime_name"]
        == "nvidia"
    )


def test_containerd_v3_uses_the_cri_runtime_plugin() -> None:
    parsed = tomllib.loads(runtime_files.containerd_dropin(settings(default=True, version=3)))
    assert parsed["version"] == 3
    assert set(parsed["plugins"]) == {"io.containerd.cri.v1.runtime"}
    containerd = parsed["plugins"]["io.containerd.cri.v1.runtime"]["containerd"]
    assert containerd["default_runtime_name"] == "nvidia"
    assert containerd["runtimes"]["nvidia"]["options"] == {"BinaryName": BINARY}


def test_k3s_template_adds_nothing_k3s_already_declares() -> None:
    text = runtime_files.k3s_config_template(settings("k3s", default=True))
    assert text == '{{ template "base" . }}\n'


def test_k3s_template_declares_a_runtime_k3s_would_not_find() -> None:
    custom = RuntimeSettings.model_validate(
        {
            "engine": "k3s",
            "setAsDefault": True,
            "binaryPath": "/opt/nvidia/bin/nvidia-container-runtime",
        }
    )
    first, _, rest = runtime_files.k3s_config_template(custom).partition("\n")
    assert first == '{{ template "base" . }}'
    containerd = tomllib.loads(rest)["plugins"]["io.containerd.grpc.v1.cri"]["containerd"]
    assert containerd == {
        "runtimes": {
            "nvidia": {
                "runtime_type": "io.containerd.runc.v2",
                "options": {"BinaryName": "/opt/nvidia/bin/nvidia-container-runtime"},
            }
        }
    }


def test_k3s_default_runtime_goes_through_k3s_own_setting() -> None:
    assert (
        runtime_files.k3s_agent_config(settings("k3s", default=True)) == "default-runtime: nvidia\n"
    )
    assert runtime_files.k3s_agent_config(settings("k3s", default=False)) is None


@pytest.mark.parametrize(
    "path", [BINARY, '/opt/a "quoted"\\path', "/opt/new\nline = 1", "/opt/\x7fdel"]
)
def test_any_binary_path_stays_one_toml_value(path: str) -> None:
    tricky = RuntimeSettings.model_validate(
        {"engine": "containerd", "setAsDefault": False, "binaryPath": path}
    )
    parsed = tomllib.loads(runtime_files.containerd_dropin(tricky))
    options = parsed["plugins"]["io.containerd.grpc.v1.cri"]["containerd"]["runtimes"]["nvidia"][
        "options"
    ]
    assert options == {"BinaryName": path}


def test_output_is_deterministic_with_lf_and_trailing_newline() -> None:
    texts = {runtime_files.containerd_dropin(settings(default=True)) for _ in range(3)}
    (text,) = texts
    assert text.endswith("\n")
    assert not text.endswith("\n\n")
    assert "\r" not in text
