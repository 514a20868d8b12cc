"""The vendored schemas of Kubernetes' built-in kinds (compiler/templating/kubernetes-schemas/):
fresh from kubernetes-validate, passed by everything gpuconf emits, refusing what
kubernetes-validate refuses, and applied at render time to a site's templates' output only."""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
from builders import (
    REPO,
    as_dra,
    cluster_file,
    compile_folder,
    load_yaml,
    manifest_paths,
    rendered,
    run_cli,
)

from gpuconf.compiler.pipeline import compile_paths
from gpuconf.compiler.templating import check, output_schemas
from gpuconf.compiler.templating.check import crd_validator
from gpuconf.compiler.templating.engine import Templates
from gpuconf.compiler.templating.kubernetes_schema import (
    SCHEMAS,
    kubernetes_validator,
    vendored_kinds,
    vendored_release,
)
from gpuconf.compiler.templating.vendor_kubernetes import vendored_text

KUEUE_GROUP = "kueue.x-k8s.io/"
"""Kueue's kinds: checked against the declared release's CRDs (compiler/kueue_check.py)."""


def test_the_vendored_schemas_are_what_the_generator_writes_today() -> None:
    assert SCHEMAS.read_text(encoding="utf-8") == vendored_text(), (
        "kubernetes-schemas/kinds.json is stale: run "
        "`python -m gpuconf.compiler.templating.vendor_kubernetes`"
    )


def test_the_schemas_come_from_the_release_the_control_plane_tests_run() -> None:
    go_mod = (REPO / "tests" / "control_plane" / "go.mod").read_text()
    major_minor = vendored_release().rpartition(".")[0]
    assert f"k8s.io/kubernetes v{major_minor}." in go_mod


def _built_in(obj: dict[str, Any]) -> bool:
    """A kind Kubernetes itself serves: not a CRD's, not kustomize's own file."""
    group = obj["apiVersion"].rpartition("/")[0]
    if obj["kind"] == "Kustomization" and group.startswith("kustomize."):
        return False
    return group == "" or "." not in group or group.endswith(".k8s.io")


@pytest.fixture(scope="module")
def emitted(compiled_examples) -> dict[str, dict[str, Any]]:  # type: ignore[no-untyped-def]
    """Every manifest gpuconf emits for clusters/, the examples and each DRA API version, by
    folder, cluster and path (gpuconf gitops writes only CRD kinds, checked at every render)."""
    trees = {f"clusters/{name}": tree for name, tree in compiled_examples.rendered.items()}
    for folder in ("examples/starter/clusters", "examples/site-templates/clusters"):
        compiled = compile_folder(REPO / folder)
        assert compiled.ok, [d.as_text() for d in compiled.diagnostics]
        trees.update({f"{folder}/{name}": tree for name, tree in compiled.rendered.items()})
    for version in ("1.32", "1.33"):
        trees[f"dra-lab@{version}"] = rendered(as_dra(cluster_file("dra-lab"), version))
    return {
        f"{name}/{path}": load_yaml(tree[path])
        for name, tree in trees.items()
        for path in manifest_paths(tree)
    }


def test_every_built_in_kind_gpuconf_emits_has_a_vendored_schema_and_passes_it(
    emitted: dict[str, dict[str, Any]],
) -> None:
    built_in = {where: obj for where, obj in emitted.items() if _built_in(obj)}
    kinds = {(obj["apiVersion"], obj["kind"]) for obj in built_in.values()}
    every_dra_version = {f"resource.k8s.io/{v}" for v in ("v1beta1", "v1beta2", "v1")}
    assert every_dra_version <= {api_version for api_version, _ in kinds}
    assert kinds <= set(vendored_kinds())
    for where, obj in built_in.items():
        validator = kubernetes_validator(obj["apiVersion"], obj["kind"])
        assert [error.message for error in validator.iter_errors(obj)] == [], where


def test_every_other_kind_gpuconf_emits_has_a_crd_schema_and_passes_it(
    emitted: dict[str, dict[str, Any]],
) -> None:
    # What render no longer checks for gpuconf's own templates (output_schemas.py); Kueue's
    # objects are checked against their release's CRDs in test_kueue.py.
    for where, obj in emitted.items():
        if _built_in(obj) or obj["apiVersion"].startswith(KUEUE_GROUP):
            continue
        if obj["kind"] == "Kustomization" and obj["apiVersion"].startswith("kustomize."):
            continue
        validator = crd_validator(obj["apiVersion"], obj["kind"])
        assert validator is not None, where
        assert [error.message for error in validator.iter_errors(obj)] == [], where


NODE_DAEMONSET = "clusters/lab/pools/t4/daemonset-gpuconf-node.yaml"
QUOTA_FILE = "clusters/lab/quotas/research.yaml"
POD = ("spec", "template", "spec")
REMOVED = object()


@pytest.mark.parametrize(
    ("where", "path", "value"),
    [
        pytest.param(NODE_DAEMONSET, (*POD, "priorityClassName"), 5, id="priorityClassName-a-number"),
        pytest.param(NODE_DAEMONSET, (*POD, "tolerations"), {}, id="tolerations-a-mapping"),
        pytest.param(NODE_DAEMONSET, (*POD, "nodeSelecter"), {}, id="misspelt-pod-field"),
        pytest.param(NODE_DAEMONSET, ("spec", "selector"), REMOVED, id="daemonset-without-selector"),
        pytest.param(QUOTA_FILE, ("spec", "hardd"), {}, id="misspelt-quota-field"),
        pytest.param(QUOTA_FILE, ("spec", "scopes"), "Terminating", id="scopes-a-string"),
    ],
)  # fmt: skip
def test_the_vendored_schemas_refuse_what_kubernetes_validate_refuses(
    emitted: dict[str, dict[str, Any]], where: str, path: tuple[str, ...], value: Any
) -> None:
    broken = copy.deepcopy(emitted[where])
    parent = broken
    for key in path[:-1]:
        parent = parent[key]
    if value is REMOVED:
        del parent[path[-1]]
    else:
        parent[path[-1]] = value
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(broken, "1.34.0", strict=True)
    assert not kubernetes_validator(broken["apiVersion"], broken["kind"]).is_valid(broken)


def _site(tmp_path: Path, name: str, text: str) -> Path:
    (tmp_path / name).write_text(text)
    return tmp_path


def _refusal(site: Path) -> tuple[str, int, str]:
    result = run_cli(
        "render", "clusters/lab.yaml", "--templates", str(site), "-o", str(site / "out"), cwd=REPO
    )
    assert result.code == 1, result.err
    assert not (site / "out").exists()
    where, line, rest = result.err.split(":", 2)
    return where, int(line), rest


DAEMONSET_BLOCK = '{{% extends "gpuconf/node-daemonset.yaml.j2" %}}\n{{% block pod_spec %}}\n{lines}\n{{% endblock %}}\n'


@pytest.mark.parametrize(
    ("lines", "wrong_line", "message"),
    [
        ("priorityClassName: 5", 3, "spec.template.spec.priorityClassName: 5 is not of type 'string', 'null'"),
        ("priorityClasName: gpu-node-critical", 3, "spec.template.spec: Additional properties are not allowed ('priorityClasName' was unexpected)"),
        ("nodeSelector: []", 3, "spec.template.spec.nodeSelector: [] is not of type 'object', 'null'"),
        ("affinity:\n  nodeAfinity:\n    preferred: []", 4, "spec.template.spec.affinity: Additional properties are not allowed ('nodeAfinity' was unexpected)"),
    ],
)  # fmt: skip
def test_a_site_daemonset_with_a_wrong_field_is_refused_at_its_template_line(
    tmp_path: Path, lines: str, wrong_line: int, message: str
) -> None:
    site = _site(tmp_path, "node-daemonset.yaml.j2", DAEMONSET_BLOCK.format(lines=lines))
    where, number, rest = _refusal(site)
    assert (where, number) == (f"{site.as_posix()}/node-daemonset.yaml.j2", wrong_line)
    assert rest.startswith("1: spec.nodePools[0]: rendering pools/t4/daemonset-gpuconf-node.yaml")
    assert f"{message} (Kubernetes 1.34.0's DaemonSet schema)" in rest


QUOTA = """{% extends "_manifest.j2" %}
{% block kind %}
apiVersion: v1
kind: ResourceQuota
{% endblock %}
{% block body %}
spec:
  hard: {{ hard | yaml }}
  LINE
{% endblock %}
"""


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("scopes: Terminating", "spec.scopes: 'Terminating' is not of type 'array', 'null'"),
        ("hardLimits: {}", "spec: Additional properties are not allowed ('hardLimits' was unexpected)"),
        ("scopeSelector: {{ hard | yaml }}", "spec.scopeSelector: Additional properties are not allowed"),
    ],
)  # fmt: skip
def test_a_site_resourcequota_with_a_wrong_field_is_refused_at_its_template_line(
    tmp_path: Path, line: str, message: str
) -> None:
    site = _site(tmp_path, "resourcequota.yaml.j2", QUOTA.replace("LINE", line))
    where, number, rest = _refusal(site)
    assert (where, number) == (f"{site.as_posix()}/resourcequota.yaml.j2", 9)
    assert rest.startswith(
        "1: spec.quotas[0]: rendering quotas/research.yaml from clusters/lab.yaml"
    )
    assert message in rest
    assert "(Kubernetes 1.34.0's ResourceQuota schema)" in rest


def test_a_site_layout_is_checked_in_every_kind_that_extends_it(tmp_path: Path) -> None:
    site = _site(
        tmp_path,
        "_manifest.j2",
        '{% extends "gpuconf/_manifest.j2" %}\n{% block extra_labels %}\nteam: 7\n{% endblock %}\n',
    )
    where, number, rest = _refusal(site)
    assert (where, number) == (f"{site.as_posix()}/_manifest.j2", 3)
    assert "metadata.labels.team: 7 is not of type 'string', 'null'" in rest


def test_an_apiversion_without_a_vendored_schema_is_refused_at_its_line(tmp_path: Path) -> None:
    site = _site(
        tmp_path,
        "resourcequota.yaml.j2",
        QUOTA.replace("apiVersion: v1", "apiVersion: v2").replace("  LINE\n", ""),
    )
    where, number, rest = _refusal(site)
    assert (where, number) == (f"{site.as_posix()}/resourcequota.yaml.j2", 3)
    assert "apiVersion: a ResourceQuota must be v1 (the versions gpuconf has" in rest


def test_the_site_example_is_checked_against_the_schema_of_what_it_overrides(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    checked = []

    def recorded(api_version: str, kind: str) -> Any:
        checked.append((api_version, kind))
        return kubernetes_validator(api_version, kind)

    monkeypatch.setattr(output_schemas, "kubernetes_validator", recorded)
    site = compile_folder(REPO / "examples" / "site-templates" / "clusters")
    assert site.ok, [d.as_text() for d in site.diagnostics]
    # Only the node DaemonSet's template is the site's: one per pool, nothing else.
    assert set(checked) == {("apps/v1", "DaemonSet")}
    assert len(checked) == len(site.validated["site-lab"].cluster.spec.node_pools)
    clusters = "examples/site-templates/clusters"
    result = run_cli(
        "render", clusters, "-o", "examples/site-templates/rendered", "--check", cwd=REPO
    )
    assert result.code == 0, result.err


def test_a_render_of_shipped_templates_builds_no_kubernetes_validator(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def refused(api_version: str, kind: str) -> None:
        raise AssertionError(f"{kind} checked at render time though no site template wrote it")

    monkeypatch.setattr(output_schemas, "kubernetes_validator", refused)
    monkeypatch.setattr(output_schemas, "crd_validator", refused)
    monkeypatch.setattr(check, "crd_validator", refused)
    monkeypatch.setattr(Templates, "chain", refused)
    # lab renders PodMonitors and a PrometheusRule: CRD kinds, not checked either.
    compiled = compile_paths([REPO / "clusters" / "lab.yaml"], relative_to=REPO)
    assert compiled.ok, [d.as_text() for d in compiled.diagnostics]


def test_shipped_templates_of_built_in_kinds_only_extend_other_templates() -> None:
    """What Templates.site_shaped relies on: a site's file can shape a built-in kind only
    through the template's extends chain, never through a shipped include or import."""
    built_in = {kind for _, kind in vendored_kinds()}
    for path in sorted((REPO / "templates").glob("*.j2")):
        text = path.read_text(encoding="utf-8")
        if re.search(r"\{%-?\s*(include|import|from)\b", text):
            assert not set(re.findall(r"^kind: (\w+)$", text, re.M)) & built_in, path.name
