"""`gpuconf node run` keeps serving its last good config whatever file replaces it."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from builders import gpu_uuid, node_config, nvlink_box, resource
from plugin_process import NodeProcess, allocate, serving, wait_until

WHOLE = "gpuconf.dev/h100"
CONFIG = node_config([resource("h100", [0, 1, 2, 3])])
GOOD = json.dumps(CONFIG)
RESOURCES = json.dumps(CONFIG["resources"])
INVENTORY = CONFIG["inventory"]

REPLACEMENTS: dict[str, bytes] = {
    # The good config with its resources list tagged: JSON is YAML, tags may go in front.
    "tagged sequence": GOOD.replace('"resources": [', '"resources": !!python/tuple [').encode(),
    "set tag": GOOD.replace('"resources": [', '"resources": !!set [').encode(),
    "custom tag": GOOD.replace('"resources": [', '"resources": !resources [').encode(),
    "omap": b"apiVersion: gpuconf.dev/v1alpha1\nkind: !!omap [a: 1]\n",
    "merge key": b"base: &b {kind: NodeConfig}\nconfig:\n  <<: *b\n",
    "integer beyond int-string limit": b"metricsPort: " + b"9" * 5000 + b"\n",
    "nul byte": b"apiVersion: gpuconf.dev/v1al\x00pha1\n",
    "not utf-8": b"apiVersion: \xff\xfe\n",
    "deep nesting": b"resources: " + b"[" * 100_000 + b"]" * 100_000 + b"\n",
    "alias bomb": b"a: &a [x, x, x, x, x, x, x, x, x, x]\n"
    + b"".join(
        f"{n}: &{n} [{', '.join([f'*{p}'] * 10)}]\n".encode()
        for p, n in zip("abcdef", "bcdefg", strict=True)
    ),
    "uuids that do not match the common GPUs": json.dumps(
        {**CONFIG, "inventory": {**INVENTORY, "common": INVENTORY["default"], "uuids": {"n": []}}}
    ).encode(),
    "two documents": GOOD.encode() + b"\n---\n" + GOOD.encode(),
    "a list": b"- 1\n",
    "empty": b"",
    "binary garbage": bytes(range(256)),
}


@pytest.fixture(scope="module")
def node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NodeProcess]:
    process = NodeProcess(tmp_path_factory.mktemp("replacements"), CONFIG, nvlink_box())
    with serving(process) as kubelet:
        kubelet.wait_devices(WHOLE, timeout=10)
        yield process


def _replace(path: Path, data: bytes) -> None:
    partial = path.with_name(path.name + ".partial")
    partial.write_bytes(data)
    os.replace(partial, path)


def test_every_bad_replacement_is_refused_located_and_the_process_keeps_serving(
    node: NodeProcess,
) -> None:
    failures = node.metric("gpuconf_node_config_reload_failures_total")
    for name, data in REPLACEMENTS.items():
        _replace(node.config_path, data)
        failures += 1
        wait_until(
            lambda expected=failures: (
                node.metric("gpuconf_node_config_reload_failures_total") == expected
            ),
            timeout=10,
            what=f"the refusal of {name}",
        )
        assert node.alive(), name
        with node.plugin(WHOLE) as plugin:
            assert allocate(plugin, [gpu_uuid(3)]).container_responses[0].envs, name
    log = node.log()
    assert "Traceback" not in log
    assert "internal error" not in log
    refusals = [line for line in log.splitlines() if "refused the changed node config" in line]
    problems = [line for line in log.splitlines() if "node config problem" in line]
    assert len(refusals) == len(problems) == len(REPLACEMENTS)
    location = re.compile(re.escape(str(node.config_path)) + r":\d+:\d+: ")
    assert all(location.search(line) for line in problems), problems
