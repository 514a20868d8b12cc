"""templates/: every emitted file comes from one template; values cannot change a document's
structure; a site's overrides are checked like gpuconf's own and refused where they break."""

from __future__ import annotations

import shutil
from functools import partial
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
from builders import (
    CLUSTERS,
    EXAMPLES,
    REPO,
    load_yaml,
    node_daemonset_refusal,
    run_cli,
    site_block,
    valid,
)
from crd_schemas import crd_errors

from gpuconf.compiler.pipeline import compile_paths
from gpuconf.compiler.plan import plan
from gpuconf.compiler.plan.artifact import Artifact
from gpuconf.compiler.render import RenderFailed, render, render_artifact
from gpuconf.compiler.templating.check import checked_yaml
from gpuconf.compiler.templating.engine import Templates
from gpuconf.compiler.templating.shipped import shipped_names

SITE = REPO / "examples" / "site-templates"
SITE_TEMPLATES = SITE / "templates"
HOSTILE = [
    "a\nb: c",
    "x: y",
    "---\nkind: Secret",
    "{{ 7 * 7 }}",
    "{% raw %}",
    "'\"quoted\"'",
    "&anchor *alias",
    "line\u2028separator\u2029para",
    "# comment",
    "key: [1, 2]",
    "tab\there",
    "\\u0000 ! %tag",
    "|\n  block",
]


def _artifacts() -> list[tuple[str, Artifact]]:
    found = []
    for name in EXAMPLES:
        located = compile_paths([CLUSTERS / f"{name}.yaml"], relative_to=REPO, render_output=False)
        validated = located.validated[name]
        found += [(name, a) for a in plan(validated, f"clusters/{name}.yaml")]
    return found


ARTIFACTS = _artifacts()


def test_every_rendered_file_comes_from_a_shipped_template() -> None:
    shipped = set(shipped_names())
    mapping = {(name, a.path): a.template for name, a in ARTIFACTS}
    rendered = {
        (cluster, "/".join(rest))
        for p in (REPO / "rendered").rglob("*")
        if p.is_file()
        for cluster, *rest in [p.relative_to(REPO / "rendered").parts]
    }
    assert set(mapping) == rendered
    assert set(mapping.values()) <= shipped
    helpers = {n for n in shipped if n.startswith("_")}
    gitops = {n for n in shipped if n.startswith(("argocd-", "flux-", "gitops-"))}
    assert shipped - helpers - gitops == set(mapping.values())


def _replaced(value: Any, strings: list[str], seen: list[int]) -> Any:
    """`value` with every string value replaced by the next of `strings` (keys are the names
    templates read; label keys a user writes are checked by the cluster schema)."""
    if isinstance(value, str):
        seen[0] += 1
        return strings[seen[0] % len(strings)] + f"#{seen[0]}"
    if isinstance(value, dict):
        return {k: _replaced(v, strings, seen) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_replaced(v, strings, seen) for v in value]
    return value


def _shape(value: Any) -> Any:
    """A document's structure without its strings: which mappings, lists and scalars where."""
    if isinstance(value, dict):
        return ("map", len(value), sorted(repr(_shape(v)) for v in value.values()))
    if isinstance(value, list):
        return ("list", [_shape(v) for v in value])
    return type(value).__name__


@pytest.mark.parametrize(
    "example", ["fleet", "dra-lab", "training-fleet", "mig", "nvidia-plugin", "jetson-edge"]
)
def test_hostile_strings_in_every_value_never_change_a_documents_structure(example: str) -> None:
    templates = Templates()
    for cluster, artifact in ARTIFACTS:
        if cluster != example or not artifact.template.endswith(".yaml.j2"):
            continue
        name = artifact.template
        # A patch's schema has enums (the GPU Operator's migManager.config.default), which any
        # replaced string breaks: its check has a test of its own, this one is about structure.
        artifact = artifact._replace(patch_of=None)
        benign = artifact._replace(values=_replaced(artifact.values, ["plain"], [0]))
        hostile = artifact._replace(values=_replaced(artifact.values, HOSTILE, [0]))
        plain = load_yaml(render_artifact(benign, templates))
        written = render_artifact(hostile, templates)
        attacked = load_yaml(written)
        assert _shape(attacked) == _shape(plain), artifact.path
        assert attacked.get("kind") == plain.get("kind")
        # A manifest is the kind the plan asked for; a file that is no object (Kueue's
        # Configuration, kueue-configuration.yaml) has no kind asked.
        assert artifact.kind in ("", plain.get("kind"))
        # The values JSON-encoded in place (the path taken where tokens cannot be) parse to
        # the same document, byte for byte once written.
        in_place = templates.render(hostile.template, hostile.values)
        assert (
            checked_yaml(in_place, hostile.kind, partial(templates.chain, name)).encode() == written
        )


def test_hostile_strings_stay_text_in_the_readme() -> None:
    [(_, readme)] = [(n, a) for n, a in ARTIFACTS if n == "mig" and a.path == "README.md"]
    text = render_artifact(
        readme._replace(values=_replaced(readme.values, HOSTILE, [0])), Templates()
    ).decode()
    plain = render_artifact(
        readme._replace(values=_replaced(readme.values, ["plain"], [0])), Templates()
    ).decode()
    assert len(text.splitlines()) == len(plain.splitlines())
    fences = [n for n, line in enumerate(plain.splitlines()) if line.startswith("```")]
    assert [n for n, line in enumerate(text.splitlines()) if line.startswith("```")] == fences


def test_a_value_printed_without_an_encoding_filter_is_refused_at_its_line(tmp_path: Path) -> None:
    (tmp_path / "namespace.yaml.j2").write_text(
        '{% extends "gpuconf/namespace.yaml.j2" %}\n'
        "{% block extra_labels %}\n"
        "    raw: {{ meta.name }}\n"
        "{% endblock %}\n"
    )
    result = run_cli(
        "render", "clusters/lab.yaml", "--templates", str(tmp_path), "--check", cwd=REPO
    )
    assert result.code == 1
    assert (
        f"{tmp_path.as_posix()}/namespace.yaml.j2:3:1: (document): rendering namespaces/"
        in result.err
    )
    assert "printed without an encoding filter" in result.err


def test_the_site_example_is_rendered_and_passes_kubernetes_validate() -> None:
    clusters, rendered = "examples/site-templates/clusters", "examples/site-templates/rendered"
    assert run_cli("render", clusters, "-o", rendered, "--check", cwd=REPO).code == 0
    tree = SITE / "rendered" / "site-lab"
    node = load_yaml((tree / "pools/t4/daemonset-gpuconf-node.yaml").read_bytes())
    pod = node["spec"]["template"]["spec"]
    assert pod["priorityClassName"] == "gpu-node-critical"
    dedicated = {"key": "example.com/dedicated", "operator": "Equal", "value": "gpu"}
    assert {**dedicated, "effect": "NoSchedule"} in pod["tolerations"]
    assert {c["image"] for c in pod["containers"] + pod["initContainers"]} == {
        "registry.example.com/mirror/gpuconf/gpuconf:0.1.0"
    }
    for path in tree.rglob("*.yaml"):
        obj = load_yaml(path.read_bytes())
        if obj["apiVersion"].startswith("monitoring.coreos.com/"):
            assert crd_errors(obj) == [], path
        elif obj["kind"] != "Kustomization":
            kubernetes_validate.validate(obj, "1.34.0", strict=True)


def test_the_command_line_folder_is_part_of_what_check_compares(tmp_path: Path) -> None:
    out = tmp_path / "out"
    args = ("clusters/lab.yaml", "--templates", "examples/site-templates/templates", "-o", str(out))
    assert run_cli("render", *args, cwd=REPO).code == 0
    assert run_cli("render", *args, "--check", cwd=REPO).code == 0
    # Without the folder the tree reads as stale.
    assert run_cli("render", "clusters/lab.yaml", "-o", str(out), "--check", cwd=REPO).code == 1


def test_a_cluster_naming_a_missing_templates_folder_is_refused_there(tmp_path: Path) -> None:
    text = (SITE / "clusters" / "site-lab.yaml").read_text()
    (tmp_path / "site-lab.yaml").write_text(text.replace("../templates", "nowhere"))
    result = run_cli("render", str(tmp_path / "site-lab.yaml"), "-o", str(tmp_path / "out"))
    assert result.code == 1
    assert "spec.templates: no folder 'nowhere' beside this file" in result.err


@pytest.mark.parametrize("command", ["render", "diff"])
def test_an_empty_templates_path_is_a_usage_error_not_the_working_folder(
    command: str, tmp_path: Path
) -> None:
    (tmp_path / "node-daemonset.yaml.j2").write_text("{{ broken\n")
    result = run_cli(command, str(REPO / "clusters" / "lab.yaml"), "--templates", "", cwd=tmp_path)
    assert result.code == 2
    assert "--templates: an empty path names no folder" in result.err


def test_an_override_that_breaks_a_manifest_is_refused_with_its_file_and_line(
    tmp_path: Path,
) -> None:
    site = tmp_path / "site"
    shutil.copytree(SITE_TEMPLATES, site)
    template = site / "node-daemonset.yaml.j2"
    text = template.read_text().replace(
        "priorityClassName: gpu-node-critical", "priorityClassName: [gpu-node-critical"
    )
    template.write_text(text)
    result = run_cli("render", "clusters/lab.yaml", "--templates", str(site), "--check", cwd=REPO)
    assert result.code == 1
    where, line, rest = result.err.split(":", 2)
    assert where == f"{site.as_posix()}/node-daemonset.yaml.j2"
    assert "priorityClassName: [" in text.splitlines()[int(line) - 1]
    assert rest.startswith("1: spec.nodePools[0]: rendering pools/t4/daemonset-gpuconf-node.yaml")


def test_an_override_folder_named_through_dot_dot_is_shown_as_the_site_s_own_file(
    tmp_path: Path,
) -> None:
    """spec.templates is relative to the cluster file, so it is often `../templates`."""
    site = tmp_path / "site"
    shutil.copytree(SITE, site, ignore=shutil.ignore_patterns("rendered"))
    template = site / "templates" / "node-daemonset.yaml.j2"
    text = template.read_text()
    template.write_text(
        text.replace("{% block pod_spec %}\n", "{% block pod_spec %}\n{{ nowhere.x }}\n")
    )
    line = text.splitlines().index("{% block pod_spec %}") + 2
    result = run_cli("render", "clusters", "-o", "out", cwd=site)
    assert result.code == 1
    assert result.err.startswith(f"templates/node-daemonset.yaml.j2:{line}:1: "), result.err
    assert "'nowhere' is undefined" in result.err
    assert not (site / "out").exists()


def test_an_override_folder_reached_through_a_linked_clusters_folder_is_the_one_read(
    tmp_path: Path,
) -> None:
    """`../templates` from a symbolically linked folder is the link target's sibling, as the
    operating system resolves it; folding `..` in the text would read gpuconf's templates."""
    real = tmp_path / "real"
    shutil.copytree(SITE, real, ignore=shutil.ignore_patterns("rendered"))
    work = tmp_path / "work"
    work.mkdir()
    (work / "clusters").symlink_to(real / "clusters")
    assert run_cli("render", "clusters", "-o", "out", cwd=work).code == 0
    node = load_yaml(
        (work / "out" / "site-lab" / "pools/t4/daemonset-gpuconf-node.yaml").read_bytes()
    )
    assert node["spec"]["template"]["spec"]["priorityClassName"] == "gpu-node-critical"


def test_a_template_line_that_repeats_a_key_is_refused_at_that_line(tmp_path: Path) -> None:
    (tmp_path / "runtimeclass.yaml.j2").write_text(
        '{% extends "gpuconf/runtimeclass.yaml.j2" %}\n'
        "{% block body %}\n"
        "handler: {{ handler | yaml }}\n"
        "handler: runc\n"
        "{% endblock %}\n"
    )
    result = run_cli(
        "render", "clusters/lab.yaml", "--templates", str(tmp_path), "--check", cwd=REPO
    )
    assert result.code == 1
    assert f"{tmp_path.as_posix()}/runtimeclass.yaml.j2:4:1: (document): " in result.err
    assert "duplicate key 'handler'" in result.err


def test_an_override_may_not_change_the_kind_the_plan_asked_for(tmp_path: Path) -> None:
    (tmp_path / "resourcequota.yaml.j2").write_text(
        '{% extends "gpuconf/resourcequota.yaml.j2" %}\n'
        "{% block kind %}\napiVersion: v1\nkind: Secret\n{% endblock %}\n"
    )
    with pytest.raises(RenderFailed, match="must be a ResourceQuota"):
        render(plan(valid_lab(), "lab.yaml"), Templates(tmp_path))


def test_a_crd_kind_is_checked_against_its_vendored_schema(tmp_path: Path) -> None:
    (tmp_path / "podmonitor.yaml.j2").write_text(
        '{% extends "gpuconf/podmonitor.yaml.j2" %}\n'
        "{% block body %}\nspec:\n  selector: {}\n  podMetricsEndpoint: []\n{% endblock %}\n"
    )
    compiled = compile_paths([CLUSTERS / "fleet.yaml"], relative_to=REPO, templates=tmp_path)
    [error] = [d for d in compiled.diagnostics if d.is_error]
    assert error.line == 5  # the unknown field's own line
    assert "podMetricsEndpoint" in error.message
    assert "PodMonitor CRD" in error.message


@pytest.mark.parametrize(
    ("template", "text", "wrong_line"),
    [
        ("gpu-operator-values.yaml.j2", "migManager:\n  config: {create: true}\n", 2),
        ("gpu-operator-clusterpolicy-patch.yaml.j2", "spec:\n  gfd:\n    enabled: 'no'\n", 3),
    ],
)
def test_the_gpu_operator_files_are_checked_as_patches_of_the_release_clusterpolicy(
    tmp_path: Path, template: str, text: str, wrong_line: int
) -> None:
    (tmp_path / template).write_text(text)
    compiled = compile_paths([CLUSTERS / "mig.yaml"], relative_to=REPO, templates=tmp_path)
    [error] = [d for d in compiled.diagnostics if d.is_error]
    assert error.file == f"{tmp_path.as_posix()}/{template}"
    assert error.line == wrong_line
    assert "ClusterPolicy CRD's schema in crds/gpu-operator/clusterpolicy-v26.7.0.json" in (
        error.message
    )


def test_templates_list_and_show_print_the_shipped_ones() -> None:
    listed = run_cli("templates", "list").out.split()
    assert listed == shipped_names()
    shown = run_cli("templates", "show", "resourcequota.yaml.j2").out
    assert shown == (REPO / "templates" / "resourcequota.yaml.j2").read_text()
    assert run_cli("templates", "show", "nope.j2").code == 2


@pytest.mark.parametrize("argv", [("show",), ("list", "resourcequota.yaml.j2")])
def test_templates_show_needs_a_name_and_list_takes_none(argv: tuple[str, ...]) -> None:
    result = run_cli("templates", *argv)
    assert result.code == 2
    assert result.err == (
        "gpuconf: templates show NAME prints one template; templates list takes no name "
        "(see 'gpuconf templates --help')\n"
    )


def valid_lab() -> Any:
    return valid(load_yaml((CLUSTERS / "lab.yaml").read_bytes()))


@pytest.mark.parametrize(
    ("line", "refusal"),
    [
        ("    raw: {{ meta['name'] ~ ('x' | yaml) }}", "printed without an encoding filter"),
        ("    raw: {{ self.extra_labels() }}", "printed without an encoding filter"),
        (
            "    {% filter replace('X', meta['name']) %}raw: X{% endfilter %}",
            "{% filter %} blocks are refused",
        ),
    ],
    ids=["joined-to-an-encoded-value", "a-blocks-text", "a-filter-block"],
)
def test_no_way_around_the_encoding_filters(tmp_path: Path, line: str, refusal: str) -> None:
    (tmp_path / "namespace.yaml.j2").write_text(
        '{% extends "gpuconf/namespace.yaml.j2" %}\n{% block body %}\n'
        + line
        + "\n{% endblock %}\n"
    )
    result = run_cli(
        "render", "clusters/lab.yaml", "--templates", str(tmp_path), "--check", cwd=REPO
    )
    assert result.code == 1
    assert f"{tmp_path.as_posix()}/namespace.yaml.j2:3:1: " in result.err
    assert refusal in result.err


def test_toml_values_stay_values_whatever_they_hold(tmp_path: Path) -> None:
    import tomllib

    (tmp_path / "dropin.toml.j2").write_text(
        "[plugins]\nname = {{ name | toml }}\nargs = {{ args | toml }}\n"
    )
    values = {"name": HOSTILE[0], "args": HOSTILE}
    artifact = Artifact("dropin.toml", "dropin.toml.j2", values)
    assert tomllib.loads(render_artifact(artifact, Templates(tmp_path)).decode()) == {
        "plugins": values
    }


def test_a_value_printed_in_a_site_block_is_written_as_the_value(tmp_path: Path) -> None:
    """A block's text is parsed back into data (with_entries): a `| yaml` value inside it must
    reach the file as itself, never as the placeholder the template pass printed for it."""
    (tmp_path / "namespace.yaml.j2").write_text(
        '{% extends "gpuconf/namespace.yaml.j2" %}\n'
        '{% block extra_labels %}owner: {{ meta["name"] | yaml }}{% endblock %}\n'
    )
    tree = render(plan(valid_lab(), "lab.yaml"), Templates(tmp_path))
    namespace = load_yaml(tree["namespaces/research.yaml"])
    assert namespace["metadata"]["labels"]["owner"] == "research"
    assert b"@gpuconf-value-" not in b"".join(tree.values())


@pytest.mark.parametrize(
    ("template", "block", "label", "gpuconf_s", "read_by"),
    [
        (
            "namespace.yaml.j2",
            "extra_labels",
            "app.kubernetes.io/managed-by",
            "gpuconf",
            "a re-render keeps the Namespaces it created by it",
        ),
        (
            "node-daemonset.yaml.j2",
            "pod_labels",
            "gpuconf.dev/pool",
            "t4",
            "the DaemonSet's selector matches a pool's pods by it",
        ),
        (
            "node-daemonset.yaml.j2",
            "pod_labels",
            "app.kubernetes.io/name",
            "gpuconf-node",
            "the PodMonitors select gpuconf's pods by it",
        ),
    ],
)
def test_a_site_label_block_changing_a_label_gpuconf_writes_is_refused_at_its_line(
    tmp_path: Path, template: str, block: str, label: str, gpuconf_s: str, read_by: str
) -> None:
    site_block(tmp_path, template, block, f"team: gpu\n{label}: site")
    result = run_cli(
        "render", "clusters/lab.yaml", "--templates", str(tmp_path), "--check", cwd=REPO
    )
    assert result.code == 1
    assert f"{tmp_path.as_posix()}/{template}:4:1: " in result.err
    assert (
        f"the block changes the label {label}: '{gpuconf_s}' gpuconf writes to 'site'" in result.err
    )
    assert read_by in result.err
    assert "add labels of your own instead" in result.err


SYNC_OPTIONS = "argocd.argoproj.io/sync-options"
SYNC_WAVE = "argocd.argoproj.io/sync-wave"


def test_a_site_block_replacing_a_namespace_s_sync_options_is_refused_and_nothing_is_written(
    tmp_path: Path,
) -> None:
    """Without Prune=false and Delete=false Argo CD deletes a Namespace, and every workload in it,
    when it leaves the tree or the Application goes (plan/annotation_readers.py)."""
    site = tmp_path / "site"
    site.mkdir()
    site_block(
        site,
        "namespace.yaml.j2",
        "extra_annotations",
        f"team.example.com/owner: gpu\n{SYNC_OPTIONS}: ServerSideApply=true",
    )
    out = tmp_path / "out"
    result = run_cli(
        "render", "clusters/lab.yaml", "--templates", str(site), "-o", str(out), cwd=REPO
    )
    assert result.code == 1
    assert f"{site.as_posix()}/namespace.yaml.j2:4:1: " in result.err
    assert (
        f"the block changes the annotation {SYNC_OPTIONS}: 'Prune=false,Delete=false' gpuconf "
        "writes to 'ServerSideApply=true': it drops Prune=false: without it a sync deletes the "
        "object once it leaves the rendered tree"
    ) in result.err
    assert "GetAnnotationOptionValue" in result.err
    assert "add options of your own after gpuconf's" in result.err
    assert not out.exists()


@pytest.mark.parametrize(
    ("template", "annotation", "value", "refusal"),
    [
        (
            "namespace.yaml.j2",
            SYNC_OPTIONS,
            "Prune=false,Delete=true,Delete=false",
            "it sets Delete=true beside Delete=false, and Argo CD reads only one value",
        ),
        (
            "namespace.yaml.j2",
            "kustomize.toolkit.fluxcd.io/prune",
            "enabled",
            "'disabled' gpuconf writes to 'enabled' (hint: Flux's kustomize-controller deletes",
        ),
        (
            "podmonitor.yaml.j2",
            SYNC_OPTIONS,
            "Validate=false",
            "it drops SkipDryRunOnMissingResource=true: without it a cluster lacking the kind's",
        ),
        (
            "node-daemonset.yaml.j2",
            SYNC_WAVE,
            "5",
            "'1' gpuconf writes to '5': wave 2 needs wave 1's objects applied first: the objects of "
            "CRDs",
        ),
        (
            "configmap.yaml.j2",
            SYNC_WAVE,
            "-2",
            "'-1' gpuconf writes to '-2': wave -1's objects need wave -2 applied first: the "
            "Namespaces",
        ),
        (
            "podmonitor.yaml.j2",
            SYNC_WAVE,
            "2.5",
            "Argo CD reads a wave as a Go int and takes anything else as wave 0",
        ),
    ],
)
def test_a_site_block_changing_an_annotation_its_reader_depends_on_is_refused_at_its_line(
    tmp_path: Path, template: str, annotation: str, value: str, refusal: str
) -> None:
    site_block(tmp_path, template, "extra_annotations", f"team: gpu\n{annotation}: '{value}'")
    result = run_cli(
        "render", "clusters/lab.yaml", "--templates", str(tmp_path), "--check", cwd=REPO
    )
    assert result.code == 1
    assert f"{tmp_path.as_posix()}/{template}:4:1: " in result.err
    assert f"the block changes the annotation {annotation}: " in result.err
    assert refusal in result.err


def test_a_site_annotation_block_adds_annotations_and_keeps_what_argo_cd_reads(
    tmp_path: Path,
) -> None:
    site_block(
        tmp_path,
        "namespace.yaml.j2",
        "extra_annotations",
        f"team.example.com/owner: gpu\n{SYNC_OPTIONS}: Prune=false, Delete=false,Validate=false\n"
        f"{SYNC_WAVE}: '-5'",
    )
    site_block(tmp_path, "podmonitor.yaml.j2", "extra_annotations", f"{SYNC_WAVE}: '+10'")
    tree = render(plan(valid_lab(), "lab.yaml"), Templates(tmp_path))
    plain = render(plan(valid_lab(), "lab.yaml"), Templates())
    namespaces = [p for p in tree if p.startswith("namespaces/")]
    assert namespaces
    for path in namespaces:
        assert load_yaml(tree[path])["metadata"]["annotations"] == {
            **load_yaml(plain[path])["metadata"]["annotations"],
            "team.example.com/owner": "gpu",
            SYNC_OPTIONS: "Prune=false, Delete=false,Validate=false",
            SYNC_WAVE: "-5",
        }
    monitors = [p for p in tree if p.startswith("monitoring/podmonitor-")]
    assert monitors
    assert {load_yaml(tree[p])["metadata"]["annotations"][SYNC_WAVE] for p in monitors} == {"+10"}
    untouched = tree.keys() - {*namespaces, *monitors}
    assert {p: tree[p] for p in untouched} == {p: plain[p] for p in untouched}


def test_a_site_label_block_may_change_the_labels_nothing_selects_on(tmp_path: Path) -> None:
    site_block(
        tmp_path, "namespace.yaml.j2", "extra_labels", "app.kubernetes.io/part-of: ml-platform"
    )
    tree = render(plan(valid_lab(), "lab.yaml"), Templates(tmp_path))
    namespaces = [load_yaml(d) for p, d in tree.items() if p.startswith("namespaces/")]
    assert namespaces
    assert {n["metadata"]["labels"]["app.kubernetes.io/part-of"] for n in namespaces} == {
        "ml-platform"
    }


def test_a_site_label_block_adds_labels_and_may_repeat_gpuconf_s_own(tmp_path: Path) -> None:
    site_block(
        tmp_path,
        "node-daemonset.yaml.j2",
        "pod_labels",
        "team: gpu\napp.kubernetes.io/name: gpuconf-node",
    )
    tree = render(plan(valid_lab(), "lab.yaml"), Templates(tmp_path))
    plain = render(plan(valid_lab(), "lab.yaml"), Templates())
    path = "pools/t4/daemonset-gpuconf-node.yaml"
    pod_labels = load_yaml(plain[path])["spec"]["template"]["metadata"]["labels"]
    assert load_yaml(tree[path])["spec"]["template"]["metadata"]["labels"] == {
        **pod_labels,
        "team": "gpu",
    }


@pytest.mark.parametrize(
    ("overrides", "message", "hint"),
    [
        (
            {"node-daemonset.yaml.j2": '{% extends "node-daemonset.yaml.j2" %}\n'},
            "template 'node-daemonset.yaml.j2' extends or includes itself: "
            "node-daemonset.yaml.j2 → node-daemonset.yaml.j2",
            "to build on gpuconf's template of that name, extend 'gpuconf/node-daemonset.yaml.j2'",
        ),
        (
            {"node-daemonset.yaml.j2": '{% include "node-daemonset.yaml.j2" %}\n'},
            "template 'node-daemonset.yaml.j2' extends or includes itself: "
            "node-daemonset.yaml.j2 → node-daemonset.yaml.j2",
            "to build on gpuconf's template of that name, extend 'gpuconf/node-daemonset.yaml.j2'",
        ),
        (
            {
                "node-daemonset.yaml.j2": '{% extends "_daemonset.j2" %}\n',
                "_daemonset.j2": '{% extends "node-daemonset.yaml.j2" %}\n',
            },
            "template '_daemonset.j2' extends or includes itself: "
            "_daemonset.j2 → node-daemonset.yaml.j2 → _daemonset.j2",
            "to build on gpuconf's template of that name, extend 'gpuconf/_daemonset.j2'",
        ),
        (
            {"node-daemonset.yaml.j2": '{% extends "gpuconf/node-daemonset.yml.j2" %}\n'},
            "template 'gpuconf/node-daemonset.yml.j2' not found",
            "`gpuconf templates list` names gpuconf's templates; a site's template extends one "
            "as gpuconf/<name>",
        ),
        (
            {
                "node-daemonset.yaml.j2": "{% macro again() %}{{ again() }}{% endmacro %}\n"
                "{{ again() }}\n"
            },
            "the template never finishes: a macro or block calls itself without end",
            "",
        ),
    ],
    ids=[
        "extends-itself",
        "includes-itself",
        "extends-in-a-cycle",
        "extends-a-missing-one",
        "calls-itself",
    ],
)
def test_an_override_that_cannot_be_loaded_is_refused_at_its_line_with_what_to_extend(
    tmp_path: Path, overrides: dict[str, str], message: str, hint: str
) -> None:
    site = tmp_path / "site"
    site.mkdir()
    for name, text in overrides.items():
        (site / name).write_text(text)
    out = tmp_path / "out"
    result = run_cli(
        "render", "clusters/lab.yaml", "--templates", str(site), "-o", str(out), cwd=REPO
    )
    assert result.code == 1, result.err
    first = result.err.splitlines()[0]
    assert first.startswith(f"{site.as_posix()}/node-daemonset.yaml.j2:1:1: spec.nodePools[0]: ")
    assert first.endswith(f": {message} (hint: {hint})" if hint else f": {message}")
    assert not out.exists()


@pytest.mark.parametrize("quantity", ["lots", "1Qi", "2 Gi", "1e", "--1"])
def test_a_site_block_s_resource_quantity_the_api_server_cannot_parse_is_refused_at_its_line(
    tmp_path: Path, quantity: str
) -> None:
    """The API server decodes a quantity with apimachinery's resource.ParseQuantity and refuses
    the object ("quantities must match the regular expression …"); kubernetes-validate's
    schema takes any string."""
    site_block(
        tmp_path, "node-daemonset.yaml.j2", "container_resources", f"limits:\n  cpu: '{quantity}'"
    )
    result = run_cli(
        "render", "clusters/lab.yaml", "--templates", str(tmp_path), "--check", cwd=REPO
    )
    assert result.code == 1, result.err
    first = result.err.splitlines()[0]
    assert first.startswith(f"{tmp_path.as_posix()}/node-daemonset.yaml.j2:4:1: "), first
    assert (
        f"resources.limits.cpu: '{quantity}' is not a Kubernetes quantity (e.g. 500m, 2Gi, 1.5)"
        in first
    )


def test_a_site_block_s_quantity_ending_in_a_line_break_is_refused(tmp_path: Path) -> None:
    """ParseQuantity("2Gi\\n") fails; a JSON Schema pattern matched by search with Python's `$`
    would take the line break."""
    site_block(
        tmp_path, "node-daemonset.yaml.j2", "container_resources", 'limits:\n  cpu: "2Gi\\n"'
    )
    result = run_cli(
        "render", "clusters/lab.yaml", "--templates", str(tmp_path), "--check", cwd=REPO
    )
    assert result.code == 1, result.err
    assert "resources.limits.cpu: '2Gi\\n' is not a Kubernetes quantity" in result.err


@pytest.mark.parametrize("quantity", ["500m", "1.5", "2Gi", "1e3", "+.5", "4"])
def test_a_site_block_s_resource_quantity_kubernetes_reads_is_kept(
    tmp_path: Path, quantity: str
) -> None:
    site_block(
        tmp_path, "node-daemonset.yaml.j2", "container_resources", f"limits:\n  cpu: '{quantity}'"
    )
    tree = render(plan(valid_lab(), "lab.yaml"), Templates(tmp_path))
    daemonset = load_yaml(tree["pools/t4/daemonset-gpuconf-node.yaml"])
    limits = daemonset["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]
    assert limits["cpu"] == quantity


@pytest.mark.parametrize(
    ("block", "text", "message"),
    [
        (
            "pod_labels",
            'foo: "a b"',
            "spec.template.metadata.labels.foo: 'a b' is not a valid label value",
        ),
        (
            "extra_tolerations",
            "[{key: a, operator: Bogus}]",
            "spec.template.spec.tolerations[1].operator: 'Bogus' is not one of Equal, Exists",
        ),
        (
            "extra_tolerations",
            "[{key: a, operator: Exists, effect: noSchedule}]",
            "spec.template.spec.tolerations[1].effect: 'noSchedule' is not one of NoSchedule, "
            "PreferNoSchedule, NoExecute (kube-apiserver refuses it) (hint: did you mean "
            "'NoSchedule'?)",
        ),
        (
            "pod_spec",
            'nodeSelector: {"a b": c}',
            "'a b' is not a valid label key: a qualified name's name part must be letters",
        ),
        ("extra_labels", "team: -x", "metadata.labels.team: '-x' is not a valid label value"),
        (
            "pod_spec",
            "affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: "
            "{nodeSelectorTerms: [{matchExpressions: [{key: gpus, operator: Gt, values: ['1', '2']}]}]}}}",
            "matchExpressions[0].values: operator Gt needs exactly one value",
        ),
        (
            "pod_spec",
            "topologySpreadConstraints: [{maxSkew: 1, topologyKey: zone, whenUnsatisfiable: "
            "DoNotSchedule, labelSelector: {matchExpressions: [{key: app, operator: Bogus}]}}]",
            "operator: 'Bogus' is not one of In, NotIn, Exists, DoesNotExist",
        ),
        (
            "pod_spec",
            "priorityClassName: GPU_Critical",
            "spec.template.spec.priorityClassName: priorityClassName 'GPU_Critical' is not a "
            "valid DNS subdomain",
        ),
        (
            "pod_spec",
            "affinity: {nodeAffinity: {preferredDuringSchedulingIgnoredDuringExecution: "
            "[{weight: 0, preference: {matchExpressions: [{key: gpus, operator: Exists}]}}]}}",
            "preferredDuringSchedulingIgnoredDuringExecution[0].weight: weight 0 is not in the "
            "range 1-100",
        ),
        (
            "pod_spec",
            "affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: "
            "{nodeSelectorTerms: [{matchFields: [{key: metadata.name, operator: In, values: "
            "[node-1, node-2]}]}]}}}",
            "matchFields[0].values: operator In of a matchFields requirement needs exactly one "
            "value (kube-apiserver refuses it) (hint: the one node name it matches; give each "
            "node its own term)",
        ),
        (
            "pod_spec",
            "topologySpreadConstraints: [{maxSkew: 1, topologyKey: zone, whenUnsatisfiable: "
            "DoNotSchedul}]",
            "whenUnsatisfiable: 'DoNotSchedul' is not one of DoNotSchedule, ScheduleAnyway "
            "(kube-apiserver refuses it) (hint: did you mean 'DoNotSchedule'?)",
        ),
        (
            "container_env",
            "- {name: NODE_NAME, valueFrom: {fieldRef: {fieldPath: spec.nodename}}}",
            "valueFrom.fieldRef.fieldPath: 'spec.nodename' is not one of metadata.name",
        ),
        (
            "container_env",
            "- {name: TEAM, valueFrom: {fieldRef: {fieldPath: \"metadata.annotations['Bad Key']\"}}}",
            "'Bad Key' is not a valid annotation key",
        ),
        (
            "pod_spec",
            f"priorityClassName: {'a' * 254}",
            "is not a valid DNS subdomain: 254 characters, at most 253",
        ),
        (
            "container_env",
            "- {name: GPUS, valueFrom: {resourceFieldRef: {resource: limits.nvidia.com/gpu}}}",
            "resourceFieldRef.resource: 'limits.nvidia.com/gpu' is not one of limits.cpu",
        ),
        (
            "container_resources",
            "{limits: {hugepages-2Mi: 2Mi}, requests: {hugepages-2Mi: 2Mi}}",
            "resources.limits.hugepages-2Mi: hugepages need a cpu or memory request or limit beside them",
        ),
        (
            "container_resources",
            "requests: {nvidia.com/gpu: 1}",
            "resources.requests.nvidia.com/gpu: nvidia.com/gpu is requested without a limit "
            "(kube-apiserver refuses it) (hint: set limits.nvidia.com/gpu to the same value",
        ),
    ],
    ids=[
        "pod-label-value",
        "toleration-operator",
        "toleration-effect",
        "node-selector-key",
        "label",
        "node-affinity-gt",
        "spread-selector",
        "priority-class-name",
        "node-affinity-weight",
        "node-affinity-match-fields",
        "spread-when-unsatisfiable",
        "env-field-path",
        "env-annotation-key",
        "class-name-too-long",
        "env-gpu-resource-field",
        "hugepages-alone",
        "gpu-request-without-limit",
    ],
)
def test_a_site_block_the_api_server_would_refuse_is_refused_at_its_line(
    tmp_path: Path, block: str, text: str, message: str
) -> None:
    """Kubernetes' JSON schemas hold none of these; kube-apiserver does
    (tests/control_plane/test_server_label_rules.py pins the rules against it)."""
    first, _ = node_daemonset_refusal(tmp_path, block, text)
    assert first.startswith(f"{tmp_path.as_posix()}/node-daemonset.yaml.j2:3:1: "), first
    assert message in first


def test_a_refused_entry_in_a_multi_line_site_block_is_refused_at_its_own_line(
    tmp_path: Path,
) -> None:
    text = "- name: NODE_NAME\n  value: x\n- name: LIMIT\n  value: y\n  valueFrom:\n    secretKeyRef: {name: s, key: k}"
    site_block(tmp_path, "node-daemonset.yaml.j2", "container_env", text)
    result = run_cli(
        "render", "clusters/lab.yaml", "--templates", str(tmp_path), "--check", cwd=REPO
    )
    assert result.code == 1, result.err
    first = result.err.splitlines()[0]
    assert first.startswith(f"{tmp_path.as_posix()}/node-daemonset.yaml.j2:6:1: "), first
    assert "an env entry with valueFrom may not also have a value" in first


@pytest.mark.parametrize(
    ("text", "key", "hint"),
    [
        ("tolerations: []", "tolerations", "add tolerations in the extra_tolerations block"),
        ("hostNetwork: true\ntolerations:\n  - operator: Exists", "tolerations", "add tolerations in the extra_tolerations block"),
        ("containers: []", "containers", "change containers in the container_image, container_env and container_resources blocks"),
        ("initContainers: []", "initContainers", "change initContainers in the container_image, container_env and container_resources blocks"),
    ],
    ids=["tolerations", "tolerations-after-another-entry", "containers", "initContainers"],
)  # fmt: skip
def test_a_pod_spec_block_setting_what_gpuconf_lays_out_apart_is_refused_at_its_line(
    tmp_path: Path, text: str, key: str, hint: str
) -> None:
    first, result = node_daemonset_refusal(tmp_path, "pod_spec", text)
    line = 3 + text.split("\n").index(next(t for t in text.split("\n") if t.startswith(key)))
    assert first.startswith(f"{tmp_path.as_posix()}/node-daemonset.yaml.j2:{line}:1: "), first
    assert f"the block sets {key}, which gpuconf lays out apart" in first
    assert f"(hint: {hint} (docs/templates.md))" in first
    assert "duplicate key" not in result.err


@pytest.mark.parametrize(
    ("block", "text", "field"),
    [
        ("pod_spec", "nodeSelector: {gpu: 5}", "spec.template.spec.nodeSelector.gpu"),
        ("container_resources", "limits: {cpu: lots}", "resources.limits.cpu"),
        (
            "extra_tolerations",
            '[{key: dedicated, operator: Exists, tolerationSeconds: "x"}]',
            "spec.template.spec.tolerations[1].tolerationSeconds",
        ),
    ],
    ids=["mapping", "nested-mapping", "list-of-mappings"],
)
def test_a_wrong_value_in_a_site_block_s_flow_yaml_is_refused_at_the_block_s_line(
    tmp_path: Path, block: str, text: str, field: str
) -> None:
    first, _ = node_daemonset_refusal(tmp_path, block, text)
    assert first.startswith(f"{tmp_path.as_posix()}/node-daemonset.yaml.j2:3:1: "), first
    assert f"{field}: " in first


@pytest.mark.parametrize(
    ("block", "text", "line", "field"),
    [
        (
            "pod_spec",
            "securityContext:\n  sysctls:\n    - name: net.core.somaxconn",
            5,
            "securityContext.sysctls[0]: 'value' is a required property",
        ),
        ("pod_spec", "topologySpreadConstraints:\n  - 7", 3, "topologySpreadConstraints[0]: 7"),
        ("container_env", "- name: A\n  value: x\n- value: y", 5, "'name' is a required property"),
    ],
    ids=["required-in-an-item", "item-of-a-wrong-type", "env-item-without-a-name"],
)
def test_a_list_item_in_a_site_block_the_schema_refuses_is_refused_at_the_block_s_line(
    tmp_path: Path, block: str, text: str, line: int, field: str
) -> None:
    """An error about a list item (no key of its own) names the line of one of the item's
    entries, else the line of the list's key: the site's, not the gpuconf line that prints
    the block's entries."""
    first, _ = node_daemonset_refusal(tmp_path, block, text)
    assert first.startswith(f"{tmp_path.as_posix()}/node-daemonset.yaml.j2:{line}:1: "), first
    assert field in first
