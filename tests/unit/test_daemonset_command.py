"""The DaemonSet the compiler renders runs exactly the command line the node runtime accepts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ruamel.yaml import YAML

from gpuconf.api.node_config import NODE_CONFIG_FILE
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


def test_the_init_container_applies_the_runtime_config_from_the_same_file() -> None:
    pod = _daemonset()["spec"]["template"]["spec"]
    init = pod["initContainers"][0]
    options = build_parser().parse_args(_arguments(init["command"]))
    plugin = build_parser().parse_args(_arguments(pod["containers"][0]["command"]))
    assert options.command == "apply-runtime"
    assert options.config == plugin.config
    assert not options.dry_run
    assert any(m["mountPath"].startswith(options.root) for m in init["volumeMounts"])


def test_the_plugin_runs_without_privilege() -> None:
    container = _daemonset()["spec"]["template"]["spec"]["containers"][0]
    security = container["securityContext"]
    assert security["privileged"] is False
    assert security["allowPrivilegeEscalation"] is False
    assert security["readOnlyRootFilesystem"] is True
    assert security["capabilities"] == {"drop": ["ALL"]}
    assert set(container["resources"]) == {"requests", "limits"}
