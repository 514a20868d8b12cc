"""The DaemonSet the compiler renders runs exactly the command line the node runtime accepts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ruamel.yaml import YAML

from gpuconf.api.node_config import NODE_CONFIG_FILE
from gpuconf.api.runtime_files import SETUP_READY_MARKER
from gpuconf.compiler.pipeline import compile_paths
from gpuconf.node.commands.parser import DEFAULT_PLUGIN_DIR, build_parser

LAB = Path(__file__).resolve().parents[2] / "clusters" / "lab.yaml"


def _daemonset() -> dict[str, Any]:
    compiled = compile_paths([LAB])
    assert compiled.ok, compiled.diagnostics
    text = compiled.rendered["lab"]["pools/t4/daemonset-gpuconf-node.yaml"]
    document: dict[str, Any] = YAML(typ="safe", pure=True).load(text)
    return document


def _arguments(command: list[str]) -> list[str]:
    assert command[:2] == ["gpuconf", "node"]
    return [arg.replace("$(NODE_NAME)", "gpu-node-1") for arg in command[2:]]


def test_the_plugin_container_command_parses_with_the_node_cli() -> None:
    pod = _daemonset()["spec"]["template"]["spec"]
    container = pod["containers"][0]
    options = build_parser().parse_args(_arguments(container["command"]))
    assert options.command == "run"
    assert options.node_name == "gpu-node-1"
    assert options.plugin_dir == DEFAULT_PLUGIN_DIR
    assert options.nvml == "real"
    assert options.metrics_port == container["ports"][0]["containerPort"]
    mounts = {m["mountPath"] for m in container["volumeMounts"]}
    assert str(Path(options.config).parent) in mounts
    assert Path(options.config).name == NODE_CONFIG_FILE
    assert options.plugin_dir in mounts
    assert {
        "name": "NODE_NAME",
        "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}},
    } in container["env"]


def test_the_init_container_waits_for_the_setup_marker_it_mounts() -> None:
    pod = _daemonset()["spec"]["template"]["spec"]
    init = pod["initContainers"][0]
    options = build_parser().parse_args(_arguments(init["command"]))
    assert options.command == "wait"
    assert options.files == [SETUP_READY_MARKER]
    mounts = {m["mountPath"] for m in init["volumeMounts"]}
    assert str(Path(SETUP_READY_MARKER).parent) in mounts


def test_the_setup_container_reads_the_plugin_s_node_config_with_the_host_at_its_root() -> None:
    compiled = compile_paths([LAB])
    text = compiled.rendered["lab"]["pools/t4/daemonset-gpuconf-setup.yaml"]
    setup_pod = YAML(typ="safe", pure=True).load(text)["spec"]["template"]["spec"]
    container = setup_pod["containers"][0]
    options = build_parser().parse_args(_arguments(container["command"]))
    plugin = build_parser().parse_args(
        _arguments(_daemonset()["spec"]["template"]["spec"]["containers"][0]["command"])
    )
    assert options.command == "setup"
    assert options.config == plugin.config
    assert not options.dry_run
    assert not options.once
    assert options.host_commands == "chroot"
    assert {
        "name": "host-root",
        "mountPath": options.root,
        "mountPropagation": "HostToContainer",
    } in (container["volumeMounts"])
    assert "runtimeClassName" not in setup_pod


def test_the_plugin_runs_without_privilege() -> None:
    container = _daemonset()["spec"]["template"]["spec"]["containers"][0]
    security = container["securityContext"]
    assert security["privileged"] is False
    assert security["allowPrivilegeEscalation"] is False
    assert security["readOnlyRootFilesystem"] is True
    assert security["capabilities"] == {"drop": ["ALL"]}
    assert set(container["resources"]) == {"requests", "limits"}
