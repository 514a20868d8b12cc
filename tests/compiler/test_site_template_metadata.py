"""A site's template that replaces a whole file (not extending gpuconf's) writes its metadata any
way it likes: templating/check.py checks the output's labels and annotations against the plan's
with the block guard's rule (resolve/metadata_guard.py), refused at the line that wrote them."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from builders import CLUSTERS, REPO, run_cli, site_block

from gpuconf.compiler import render
from gpuconf.compiler.pipeline import compile_paths
from gpuconf.compiler.templating.engine import Templates

ENFORCE = "pod-security.kubernetes.io/enforce"
# A Namespace as gpuconf's namespace.yaml.j2 writes it, all but its labels.
NAMESPACE = """\
apiVersion: v1
kind: Namespace
metadata:
  name: {{ meta["name"] | yaml }}
  labels:
{labels}
  annotations: {{ meta["annotations"] | yaml }}
"""
OWNER = "    app.kubernetes.io/managed-by: gpuconf\n    gpuconf.dev/cluster: lab"


def _namespace_template(labels: str) -> str:
    return NAMESPACE.replace("{labels}", labels)


def _render(site: Path, *argv: str) -> Any:
    return run_cli("render", "clusters/lab.yaml", "--templates", str(site), *argv, cwd=REPO)


def _in_place_renders(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The templates render.py rendered with their values in place (not as a skeleton)."""
    seen: list[str] = []
    checked_yaml: Callable[..., str] = render.checked_yaml

    def spy(text: str, kind: str, *rest: Any) -> str:
        seen.append(kind)
        return checked_yaml(text, kind, *rest)

    monkeypatch.setattr(render, "checked_yaml", spy)
    return seen


# A value inside a longer string is no skeleton: the template is rendered in place instead.
@pytest.mark.parametrize(
    ("extra", "in_place"), [("", False), ('\n    team: x{{ meta["name"] | yaml }}', True)]
)
def test_a_whole_site_template_lowering_pod_security_is_refused_and_nothing_is_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, extra: str, in_place: bool
) -> None:
    site = tmp_path / "site"
    site.mkdir()
    (site / "namespace.yaml.j2").write_text(
        _namespace_template(f"{OWNER}\n    {ENFORCE}: restricted{extra}")
    )
    in_place_renders = _in_place_renders(monkeypatch)
    out = tmp_path / "out"
    result = _render(site, "-o", str(out))
    assert result.code == 1
    assert result.err.startswith(
        f"{site.as_posix()}/namespace.yaml.j2:8:1: (document): rendering "
        "namespaces/gpuconf-system.yaml from clusters/lab.yaml: the template changes the label "
        f"{ENFORCE}: 'privileged' gpuconf writes to 'restricted': Pod Security admission would "
        "admit there only pods that meet restricted"
    )
    assert "(hint: Pod Security admission admits a pod only where" in result.err
    assert ("Namespace" in in_place_renders) is in_place
    assert not out.exists()


def test_a_whole_site_template_dropping_a_label_gpuconf_is_found_by_is_refused(
    tmp_path: Path,
) -> None:
    (tmp_path / "namespace.yaml.j2").write_text(_namespace_template("    gpuconf.dev/cluster: lab"))
    result = _render(tmp_path, "--check")
    assert result.code == 1
    assert f"{tmp_path.as_posix()}/namespace.yaml.j2:5:1: " in result.err
    assert (
        "the template drops the label app.kubernetes.io/managed-by: 'gpuconf' gpuconf writes "
        "(hint: it marks what gpuconf rendered"
    ) in result.err


def test_a_whole_site_template_adding_a_hook_annotation_is_refused_naming_argo_cd(
    tmp_path: Path,
) -> None:
    (tmp_path / "configmap.yaml.j2").write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n"
        '  name: {{ meta["name"] | yaml }}\n'
        '  namespace: {{ meta["namespace"] | yaml }}\n'
        '  labels: {{ meta["labels"] | yaml }}\n'
        "  annotations:\n"
        '    argocd.argoproj.io/sync-wave: "-1"\n'
        "    argocd.argoproj.io/hook: PreSync\n"
        "data: {{ data | yaml }}\n"
    )
    result = _render(tmp_path, "--check")
    assert result.code == 1
    assert f"{tmp_path.as_posix()}/configmap.yaml.j2:9:1: " in result.err
    assert (
        "the template sets the annotation argocd.argoproj.io/hook to 'PreSync': Argo CD then "
        "takes the object for a hook"
    ) in result.err
    assert "(hint: Argo CD takes any object annotated argocd.argoproj.io/hook" in result.err
    assert "pkg/sync/hook/hook.go, IsHook" in result.err


def test_a_site_daemonset_layout_changing_a_selected_pod_label_is_refused(tmp_path: Path) -> None:
    shipped = (REPO / "templates" / "_daemonset.j2").read_text(encoding="utf-8")
    written = (
        '      labels: {{ pod_meta["labels"] | with_labels(self.pod_labels(), selector) | yaml }}\n'
    )
    assert written in shipped
    (tmp_path / "_daemonset.j2").write_text(
        shipped.replace(
            written,
            "      labels:\n"
            '{% for key, value in pod_meta["labels"] | items %}\n'
            '        {{ key | yaml }}: {{ ("other" if key == "gpuconf.dev/pool" else value) | yaml }}\n'
            "{% endfor %}\n",
        )
    )
    result = _render(tmp_path, "--check")
    assert result.code == 1
    # Its keys are printed values: the line opening the labels wrote them.
    line = 1 + shipped[: shipped.index(written)].count("\n")
    assert f"{tmp_path.as_posix()}/_daemonset.j2:{line}:1: " in result.err
    assert "the template changes the pod label gpuconf.dev/pool: " in result.err
    assert "gpuconf writes to 'other'" in result.err
    assert "the DaemonSet's selector matches a pool's pods by it" in result.err


def test_a_site_block_adding_a_hook_annotation_is_refused_at_its_line(tmp_path: Path) -> None:
    site_block(
        tmp_path,
        "node-daemonset.yaml.j2",
        "extra_annotations",
        "team: gpu\nhelm.sh/hook: post-install",
    )
    result = _render(tmp_path, "--check")
    assert result.code == 1
    assert f"{tmp_path.as_posix()}/node-daemonset.yaml.j2:4:1: " in result.err
    assert "the block sets the annotation helm.sh/hook to 'post-install'" in result.err
    assert "a DaemonSet with every pod" in result.err


def test_gpuconf_s_own_templates_keep_every_guarded_key_the_plan_asks_for(
    compiled_examples: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Why render.py checks the metadata only where a site's file shapes the template: with the
    check run on every output of every example, nothing is refused and nothing changes."""
    monkeypatch.setattr(Templates, "site_shaped", lambda self, name: True)
    monkeypatch.setattr(render.OutputSchemas, "check", lambda self, artifact, output: None)
    checked = compile_paths([CLUSTERS], relative_to=REPO)
    assert checked.ok, [d.as_text() for d in checked.diagnostics]
    assert checked.rendered == compiled_examples.rendered
