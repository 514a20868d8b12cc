"""A site's container_env block may give a resourceFieldRef a divisor; kube-apiserver takes only
the divisors its validateContainerResourceDivisor lists for the resource, compared as
Quantity.String() spells them (tests/control_plane/test_server_label_rules.py pins the rule
against the server), so gpuconf refuses any other at the block's line and writes nothing."""

from __future__ import annotations

from pathlib import Path

import pytest
from builders import CLUSTERS, load_yaml, node_daemonset_refusal, site_block, valid

from gpuconf.compiler.plan import plan
from gpuconf.compiler.render import render
from gpuconf.compiler.templating.engine import Templates

BYTES = "only 1, 1k, 1M, 1G, 1T, 1P, 1E, 1Ki, 1Mi, 1Gi, 1Ti, 1Pi, 1Ei"


def _env(resource: str, divisor: str) -> str:
    reference = f"{{resource: {resource}, divisor: {divisor}}}"
    return f"- {{name: AMOUNT, valueFrom: {{resourceFieldRef: {reference}}}}}"


@pytest.mark.parametrize(
    ("resource", "divisor", "message"),
    [
        (
            "limits.memory",
            "'1024'",
            f"divisor '1024' is not supported with the memory resource: {BYTES} "
            "(kube-apiserver refuses it) (hint: the unit to count limits.memory in, such as 1Mi)",
        ),
        (
            "requests.cpu",
            "'1k'",
            "divisor '1k' is not supported with the cpu resource: only 1m and 1",
        ),
        (
            "limits.ephemeral-storage",
            "'2048Ki'",
            "divisor '2048Ki' (kube-apiserver reads it as 2Mi) is not supported with the local "
            f"ephemeral storage resource: {BYTES}",
        ),
        (
            "requests.hugepages-2Mi",
            "'+1Mi'",
            "divisor '+1Mi' is not supported with the hugepages resource: "
            f"{BYTES} (kube-apiserver refuses it) (hint: write 1Mi: kube-apiserver compares "
            "'+1Mi' as it is written)",
        ),
        (
            "limits.memory",
            "'1e3'",
            "divisor '1e3' is not supported with the memory resource",
        ),
        (
            "requests.cpu",
            "1.5e-07",
            "divisor 1.5e-07 (kube-apiserver reads it as 150e-9) is not supported with the cpu "
            "resource",
        ),
    ],
    ids=["memory-1024", "cpu-1k", "storage-2048Ki", "hugepages-plus-1Mi", "memory-1e3", "float"],
)
def test_a_divisor_the_server_does_not_take_is_refused_at_the_block_s_line_and_nothing_is_written(
    tmp_path: Path, resource: str, divisor: str, message: str
) -> None:
    site = tmp_path / "site"
    site.mkdir()
    first, _ = node_daemonset_refusal(
        site, "container_env", _env(resource, divisor), output=tmp_path / "out"
    )
    assert first.startswith(f"{site.as_posix()}/node-daemonset.yaml.j2:3:1: spec.nodePools[0]: ")
    where = "spec.template.spec.containers[0].env"
    assert f"{where}[" in first
    assert f"].valueFrom.resourceFieldRef.divisor: {message}" in first


@pytest.mark.parametrize(
    ("resource", "divisor", "written"),
    [
        ("limits.memory", "1Mi", "1Mi"),
        ("limits.memory", "'1024Ki'", "1024Ki"),
        ("requests.memory", "'1000'", "1000"),
        ("limits.cpu", "1m", "1m"),
        ("requests.cpu", "'1000m'", "1000m"),
        ("limits.ephemeral-storage", "1Gi", "1Gi"),
        ("limits.memory", "'0'", "0"),
        # YAML numbers: a Go client sends 1000.0 as 1000 (1k) and 1e18 as 1E.
        ("limits.memory", "1e3", 1000.0),
        ("limits.memory", "1e18", 1e18),
        ("limits.cpu", "1", 1),
    ],
)
def test_a_divisor_the_server_takes_is_kept_as_written(
    tmp_path: Path, resource: str, divisor: str, written: object
) -> None:
    site_block(tmp_path, "node-daemonset.yaml.j2", "container_env", _env(resource, divisor))
    cluster = valid(load_yaml((CLUSTERS / "lab.yaml").read_bytes()))
    tree = render(plan(cluster, "lab.yaml"), Templates(tmp_path))
    daemonset = load_yaml(tree["pools/t4/daemonset-gpuconf-node.yaml"])
    env = daemonset["spec"]["template"]["spec"]["containers"][0]["env"]
    [amount] = [entry for entry in env if entry["name"] == "AMOUNT"]
    assert amount["valueFrom"]["resourceFieldRef"] == {"resource": resource, "divisor": written}
