"""The `kubectl label` commands of every rendered README work as typed: the real kubectl accepts
each (run with --local on a Node object instead of the API server), and a node labelled by
them, in the README's order, runs every DaemonSet gpuconf renders for its pool. A README that
forgot a label (the pool's, the driver manager's client label, the GPU Operator's deploy
labels) leaves a DaemonSet that runs nowhere."""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from builders import RENDERED, load_yaml

CLUSTERS = sorted(p.name for p in RENDERED.iterdir() if (p / "README.md").is_file())
POOL_LABEL = "gpuconf.dev/pool"


def _commands(cluster: str) -> list[list[str]]:
    readme = (RENDERED / cluster / "README.md").read_text(encoding="utf-8")
    return [
        shlex.split(line, comments=True)
        for line in readme.splitlines()
        if line.startswith("kubectl label nodes ") and "NODE…" not in line
    ]


def _daemonset_pods(cluster: str, pool: str) -> dict[str, dict[str, Any]]:
    folder = RENDERED / cluster / "pools" / pool
    return {
        p.name: load_yaml(p.read_text())["spec"]["template"]["spec"]
        for p in sorted(folder.glob("daemonset-*.yaml"))
    }


def _runs_on(pod: dict[str, Any], labels: dict[str, str]) -> bool:
    if any(labels.get(k) != v for k, v in pod.get("nodeSelector", {}).items()):
        return False
    required = (
        pod.get("affinity", {})
        .get("nodeAffinity", {})
        .get("requiredDuringSchedulingIgnoredDuringExecution", {"nodeSelectorTerms": [{}]})
    )
    for term in required["nodeSelectorTerms"]:
        for expr in term.get("matchExpressions", []):
            assert expr["operator"] == "NotIn"
            if labels.get(expr["key"]) in expr["values"]:
                return False
    return True


def _selects(selector: str, labels: dict[str, str]) -> bool:
    return all(labels.get(k) == v for k, v in (term.split("=") for term in selector.split(",")))


def _kubectl_label(node: dict[str, Any], argv: list[str], folder: Path) -> dict[str, Any]:
    """Run `kubectl label` as typed, but on a local Node file: the selector or names are
    replaced by `--local -f node.json`, everything after them is kept."""
    kubectl = shutil.which("kubectl")
    assert kubectl, "kubectl is needed for this test"
    assert argv[:3] == ["kubectl", "label", "nodes"], argv
    # After `-l SELECTOR` or the node names: the labels and flags.
    rest = list(argv[5:]) if argv[3] == "-l" else [a for a in argv[3:] if "=" in a]
    path = folder / "node.json"
    path.write_text(json.dumps(node))
    result = subprocess.run(
        [kubectl, "label", "--local", "-f", str(path), *rest, "-o", "json"],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert result.returncode == 0, (argv, result.stderr)
    labelled: dict[str, Any] = json.loads(result.stdout)
    return labelled


def _applies_to(argv: list[str], node: dict[str, Any], pool: str) -> bool:
    labels = node["metadata"]["labels"]
    if argv[3] == "-l":
        return _selects(argv[4], labels)
    # By name: the command that puts declared nodes into this pool.
    return f"{POOL_LABEL}={pool}" in argv


@pytest.mark.parametrize("cluster", CLUSTERS)
def test_a_node_labelled_as_the_readme_says_runs_every_daemonset_of_its_pool(
    cluster: str, tmp_path: Path
) -> None:
    commands = _commands(cluster)
    for pool_dir in sorted((RENDERED / cluster / "pools").iterdir()):
        pool = pool_dir.name
        pods = _daemonset_pods(cluster, pool)
        setup = pods["daemonset-gpuconf-setup.yaml"]
        # The node is in its pool: labelled by the README's command where it names the nodes,
        # else by the user's own labels, which the pool selects (a placeholder line says so).
        start = {
            k: v
            for k, v in setup["nodeSelector"].items()
            if not k.startswith("nvidia.com/gpu.deploy.")
            and not any(f"{k}={v}" in argv and argv[3] != "-l" for argv in commands)
        }
        node: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": "n1", "labels": start},
        }
        for argv in commands:
            if _applies_to(argv, node, pool):
                node = _kubectl_label(node, argv, tmp_path)
        labels = node["metadata"]["labels"]
        stranded = [name for name, pod in pods.items() if not _runs_on(pod, labels)]
        assert stranded == [], (pool, labels)


def test_some_readmes_carry_label_commands() -> None:
    assert sum(bool(_commands(c)) for c in CLUSTERS) >= 3
