"""Each command loads only what it needs: `validate` never imports pydantic, the plan,
templates, CEL, the node's models or the DRA device model of a device-plugin cluster."""

from __future__ import annotations

import subprocess
import sys

import pytest
from builders import REPO

NOT_FOR_VALIDATE = (
    "gpuconf.compiler.plan",
    "gpuconf.compiler.render",
    "gpuconf.compiler.emit",
    "jinja2",
    "celpy",
    "ruamel",
    "grpc",
    "kubernetes",
    "prometheus_client",
    "gpuconf.api.node_config",
    "gpuconf.api.runtime_files",
    # Cluster files are validated by pydantic-core against the frozen schema (api/validators.py).
    "pydantic.",
    "gpuconf.api.freeze_schema",
    "gpuconf.api.schema",
    "gpuconf.api.strict_model",
    # Pydantic's plugin discovery: gpuconf runs no plugins (api.strict_model).
    "importlib.metadata",
)
DRA_ONLY = ("gpuconf.compiler.dra", "gpuconf.compiler.rules.dra_selectors")


def _imported(*argv: str) -> set[str]:
    """Every module `python -X importtime -m gpuconf ARGV…` imports."""
    result = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "gpuconf", *argv],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    )
    return {
        line.rsplit("|", 1)[-1].strip()
        for line in result.stderr.splitlines()
        if line.startswith("import time:") and "|" in line
    }


@pytest.mark.parametrize("cluster", ["lab", "fleet"])
def test_validate_imports_no_plan_template_or_cel_module(cluster: str) -> None:
    imported = _imported("validate", f"clusters/{cluster}.yaml")
    assert "gpuconf.compiler.validate" in imported
    heavy = sorted(m for m in imported if m.startswith(NOT_FOR_VALIDATE) or m == "pydantic")
    assert heavy == []
    assert "pydantic_core" in imported


def test_render_imports_no_pydantic() -> None:
    imported = _imported("render", "clusters/lab.yaml", "--check")
    assert "gpuconf.compiler.render" in imported
    assert sorted(m for m in imported if m == "pydantic" or m.startswith("pydantic.")) == []


def test_a_device_plugin_cluster_imports_no_dra_module() -> None:
    for command in ("validate", "render"):
        imported = _imported(
            command, "clusters/lab.yaml", *(["--check"] if command == "render" else [])
        )
        assert sorted(m for m in imported if m.startswith(DRA_ONLY)) == [], command


def test_cel_is_imported_for_a_dra_cluster_that_needs_its_proof() -> None:
    imported = _imported("validate", "clusters/dra-lab.yaml")
    assert {"celpy", "gpuconf.compiler.rules.dra_selectors"} <= imported
