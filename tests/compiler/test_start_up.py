"""Each command loads only what it needs: `validate` never imports pydantic (nor pydantic-core's
Python package, only its compiled module), the plan, the template engine, jsonschema, CEL (but
for a DRA cluster's selector proofs), the node's models or the DRA device model of a
device-plugin cluster, with Kueue or without."""

from __future__ import annotations

import gc
import subprocess
import sys
from pathlib import Path

import pytest
from builders import REPO

NOT_FOR_VALIDATE = (
    "gpuconf.compiler.plan",
    "gpuconf.compiler.render",
    "gpuconf.compiler.emit",
    "jinja2",
    "markupsafe",
    "jsonschema",
    "gpuconf.compiler.templating",
    "celpy",
    "ruamel",
    "grpc",
    "grpclib",
    "kubernetes",
    "prometheus_client",
    "gpuconf.api.node_config",
    "gpuconf.api.runtime_files",
    # Cluster files are validated by pydantic-core against the frozen schema (api/validators.py).
    "pydantic.",
    "gpuconf.api.freeze_schema",
    "gpuconf.api.schema",
    "gpuconf.node",
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


@pytest.mark.parametrize("cluster", ["lab", "fleet", "training-fleet"])
def test_validate_imports_no_plan_template_or_cel_module(cluster: str) -> None:
    imported = _imported("validate", f"clusters/{cluster}.yaml")
    assert "gpuconf.compiler.validate" in imported
    heavy = sorted(m for m in imported if m.startswith(NOT_FOR_VALIDATE) or m == "pydantic")
    assert heavy == []
    assert "gpuconf.api.core_validator" in imported


def test_validate_loads_only_pydantic_cores_compiled_module() -> None:
    code = (
        "import sys; from gpuconf.cli import main; code = main(['validate', 'clusters/lab.yaml']); "
        "print(sorted(m for m in sys.modules if m.startswith('pydantic')), file=sys.stderr); "
        "sys.exit(code)"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True
    )
    assert result.stderr.splitlines()[-1] == "['pydantic_core._pydantic_core']"


@pytest.mark.parametrize(
    "probe", ["", "import importlib.util; importlib.util.find_spec('pydantic_core'); "]
)
def test_the_compiled_validator_is_pydantic_cores_own_when_the_package_loads_later(
    probe: str,
) -> None:
    code = (
        f"from gpuconf.api import core_validator; {probe}import pydantic_core; "
        "assert core_validator.ValidationError is pydantic_core.ValidationError; "
        "assert core_validator.SchemaValidator is pydantic_core.SchemaValidator; "
        "assert pydantic_core._pydantic_core.ValidationError is core_validator.ValidationError; "
        "import sys; assert not any(type(f).__name__ == '_PackageFinder' for f in sys.meta_path); "
        "import pydantic; pydantic.TypeAdapter(int).validate_python(1)"
    )
    subprocess.run([sys.executable, "-c", code], cwd=REPO, check=True)


def test_render_imports_neither_jinja2_nor_pydantic_nor_jsonschema(tmp_path: Path) -> None:
    # gpuconf's own templates run from their compiled code (templating/compiled_runtime.py);
    # jinja2 loads for a site's templates. lab renders PodMonitors and a PrometheusRule (CRD
    # kinds): gpuconf's own templates' output is checked against their schemas by the tests,
    # not by importing jsonschema.
    imported = _imported("render", "clusters/lab.yaml", "-o", str(tmp_path / "out"))
    assert {"gpuconf.compiler.render", "gpuconf.compiler.templating.compiled_runtime"} <= imported
    heavy = {
        m
        for m in imported
        if m == "pydantic" or m.startswith(("pydantic.", "jsonschema", "jinja2", "markupsafe"))
    }
    assert sorted(heavy) == []
    # Quantities (decimal, fractions) are read where a cluster's values need them, or where
    # an output is refused: not for every render.
    assert sorted(imported & {"decimal", "fractions", "gpuconf.formats.quantity"}) == []
    # What kube-apiserver refuses of a site's output is checked for that output only.
    assert "gpuconf.compiler.templating.server_rules" not in imported
    # Digests come from CPython's own SHA-256 (formats/sha256.py), not OpenSSL's binding.
    assert sorted(imported & {"hashlib", "_hashlib"}) == []


@pytest.mark.parametrize("cluster", ["lab", "fleet"])
def test_validating_defines_no_dataclass(cluster: str) -> None:
    # dataclasses imports inspect (ast, dis, tokenize) and compiles each class's methods:
    # together a fifth of `validate`'s start-up, so compiler values are NamedTuples.
    imported = _imported("validate", f"clusters/{cluster}.yaml")
    assert sorted(imported & {"dataclasses", "inspect"}) == []


def test_rendering_defines_no_dataclass(tmp_path: Path) -> None:
    # Render imports jinja2 (inspect) and jsonschema (dataclasses, attrs) only where a site's
    # template or gitops's input is checked; gpuconf's own values stay tuples.
    imported = _imported("render", "clusters/lab.yaml", "-o", str(tmp_path / "out"))
    assert sorted(imported & {"dataclasses", "inspect"}) == []


def test_a_device_plugin_cluster_imports_no_dra_module() -> None:
    for command in ("validate", "render"):
        imported = _imported(
            command, "clusters/lab.yaml", *(["--check"] if command == "render" else [])
        )
        assert sorted(m for m in imported if m.startswith(DRA_ONLY)) == [], command


def test_cel_is_imported_for_a_dra_cluster_that_needs_its_proof() -> None:
    imported = _imported("validate", "clusters/dra-lab.yaml")
    assert {"celpy", "gpuconf.compiler.rules.dra_selectors"} <= imported


def test_validate_of_a_kueue_cluster_checks_kueues_limits_by_rule_without_rendering() -> None:
    """Kueue's limits (e.g. at most 8 tolerations on a pool's ResourceFlavor) are rules on the
    cluster file (compiler/rules/kueue_limits.py): validate of a Kueue cluster loads them, and
    never the render-time check of the rendered objects (jinja2, jsonschema, cel-python)."""
    imported = _imported("validate", "clusters/training-fleet.yaml")
    assert "gpuconf.compiler.rules.kueue_limits" in imported
    heavy = {"gpuconf.compiler.kueue_check", "gpuconf.compiler.kueue.crd_schema", "jinja2"}
    assert sorted(imported & (heavy | {"jsonschema", "celpy"})) == []


KUEUE_CHECK = ("gpuconf.compiler.kueue.crd_schema", "gpuconf.compiler.kueue.admission")


def test_render_checks_kueues_objects_of_a_kueue_cluster_only() -> None:
    """The render-time check of Kueue's objects against its CRD schemas and admission loads
    for a cluster that declares Kueue, and for no other."""
    lab = _imported("render", "clusters/lab.yaml", "--check")
    assert sorted(lab & set(KUEUE_CHECK)) == []
    training = _imported("render", "clusters/training-fleet.yaml", "--check")
    assert set(KUEUE_CHECK) <= training


@pytest.mark.parametrize(
    "program",
    [[sys.executable, "-m", "gpuconf"], [str(Path(sys.executable).with_name("gpuconf"))]],
    ids=["python -m gpuconf", "the gpuconf script"],
)
def test_the_program_exits_with_the_commands_code_and_says_all(
    program: list[str], tmp_path: Path
) -> None:
    # Both freeze the heap before the interpreter's exit (__main__.run): nothing said may go
    # missing.
    bad = tmp_path / "bad.yaml"
    bad.write_text("apiVersion: gpuconf.dev/v1alpha2\nkind: Cluster\n", encoding="utf-8")
    result = subprocess.run(
        [*program, "validate", str(bad)], cwd=REPO, capture_output=True, text=True
    )
    assert result.returncode == 1
    assert result.stderr.endswith("2 errors, 0 warnings\n")
    out = tmp_path / "out"
    result = subprocess.run(
        [*program, "render", "clusters/lab.yaml", "-o", str(out)],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    assert (result.returncode, result.stderr) == (0, "")
    assert result.stdout.startswith("rendered 1 cluster(s), ")
    assert (out / "lab" / "kustomization.yaml").is_file()


def test_run_leaves_the_heap_frozen_for_the_exit(monkeypatch: pytest.MonkeyPatch) -> None:
    from gpuconf import __main__ as program

    monkeypatch.setattr(program, "main", lambda: 3)
    assert gc.get_freeze_count() == 0
    try:
        assert program.run() == 3
        assert gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()


KUEUE_PLAN = (
    "gpuconf.compiler.kueue.queues",
    "gpuconf.compiler.kueue.releases",
    "gpuconf.compiler.kueue.limits",
    "gpuconf.compiler.kueue.flavors",
    "gpuconf.compiler.rules.kueue_limits",
)


def test_render_plans_kueues_queues_for_a_kueue_cluster_only(tmp_path: Path) -> None:
    """Kueue's queue plan, releases and limits load where a cluster declares Kueue (its rules
    run there, and the README's capacity table lists its queues), for no other."""
    lab = _imported("render", "clusters/lab.yaml", "-o", str(tmp_path / "lab"))
    assert sorted(lab & set(KUEUE_PLAN)) == []
    training = _imported("render", "clusters/training-fleet.yaml", "-o", str(tmp_path / "tf"))
    assert set(KUEUE_PLAN) <= training


FEATURE_PLANS = (
    "gpuconf.compiler.plan.nvidia_plugin",
    "gpuconf.compiler.plan.mig_parted",
    "gpuconf.compiler.plan.gpu_operator",
)


def test_render_plans_nvidias_plugin_mig_and_the_gpu_operator_where_a_cluster_uses_them(
    tmp_path: Path,
) -> None:
    lab = _imported("render", "clusters/lab.yaml", "-o", str(tmp_path / "lab"))
    assert sorted(lab & set(FEATURE_PLANS)) == []
    # The README of a device-plugin cluster names no DRA driver release.
    assert "gpuconf.gpus.dra_attributes" not in lab
    # mig-nvidia: NVIDIA's plugin on MIG pools, handed to the GPU Operator.
    mig = _imported("render", "clusters/mig-nvidia.yaml", "-o", str(tmp_path / "mig"))
    assert set(FEATURE_PLANS) <= mig
