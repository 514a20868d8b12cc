"""`gpuconf gitops`: the committed examples are fresh, build with `kubectl kustomize`, validate
against Argo CD's and Flux's own CRD schemas, and Flux's stages cover each rendered tree."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from builders import REPO, load_yaml, run_cli
from crd_schemas import crd_errors
from ruamel.yaml import YAML

from gpuconf.compiler.gitops import GitSource, flux, stages
from gpuconf.compiler.pipeline import Compiled
from gpuconf.compiler.templating.engine import Templates

EXAMPLE_REPO = "https://github.com/example-org/gpu-clusters.git"
GITOPS = REPO / "examples" / "gitops"
FOLDERS = sorted(
    p.parent.relative_to(GITOPS).as_posix() for p in GITOPS.rglob("kustomization.yaml")
)


def _kustomize(folder: Path) -> list[dict[str, Any]]:
    kubectl = shutil.which("kubectl")
    assert kubectl, "kubectl (with kustomize) is needed for this test"
    built = subprocess.run(
        [kubectl, "kustomize", str(folder)], capture_output=True, check=False, timeout=120
    )
    assert built.returncode == 0, built.stderr.decode()
    return [d for d in YAML(typ="safe", pure=True).load_all(built.stdout) if d is not None]


@pytest.mark.parametrize("agent", ["argocd", "flux"])
def test_the_committed_examples_are_what_gitops_writes(agent: str) -> None:
    checked = run_cli(
        "gitops", agent, "--repo", EXAMPLE_REPO, "-o", f"examples/gitops/{agent}", "--check",
        cwd=REPO,
    )  # fmt: skip
    assert checked.code == 0, "run make render, then commit examples/gitops/\n" + checked.out


@pytest.mark.slow
@pytest.mark.parametrize("folder", FOLDERS)
def test_each_example_folder_builds_and_validates_against_the_crd_schemas(folder: str) -> None:
    objects = _kustomize(GITOPS / folder)
    listed = load_yaml((GITOPS / folder / "kustomization.yaml").read_bytes())["resources"]
    assert len(objects) == len(listed)
    for obj in objects:
        assert crd_errors(obj) == [], f"{obj['kind']} {obj['metadata']['name']}"
        assert obj["metadata"]["namespace"] in {"argocd", "flux-system"}


def test_the_schema_check_rejects_a_misspelt_field_and_a_wrong_type() -> None:
    application = load_yaml((GITOPS / "argocd/applications/application-lab.yaml").read_bytes())
    application["spec"]["sourc"] = application["spec"].pop("source")
    application["spec"]["syncPolicy"]["automated"]["prune"] = "yes"
    errors = crd_errors(application)
    assert any("'sourc' was unexpected" in e for e in errors), errors
    assert any(e.startswith("spec.syncPolicy.automated.prune") for e in errors), errors


def test_every_application_points_at_a_rendered_cluster_folder() -> None:
    folder = GITOPS / "argocd" / "applications"
    paths = {
        load_yaml(p.read_bytes())["spec"]["source"]["path"]
        for p in folder.glob("application-*.yaml")
    }
    clusters = {f"rendered/{p.name}" for p in (REPO / "rendered").iterdir() if p.is_dir()}
    assert paths == clusters


def test_flux_stages_cover_every_manifest_once_and_nothing_else(compiled_examples) -> None:  # type: ignore[no-untyped-def]
    for name, tree in compiled_examples.rendered.items():
        listed = set(load_yaml(tree["kustomization.yaml"])["resources"])
        folders = [stage for group in stages(tree) for stage in group]
        # Flux generates a kustomization from every YAML file under a stage's path.
        picked = [p for p in tree if p.endswith((".yaml", ".yml")) and p.split("/")[0] in folders]
        assert sorted(picked) == sorted(listed), name


def test_flux_applies_namespaces_first_and_nothing_waits_on_pools_or_monitoring(
    compiled_examples: Compiled,
) -> None:
    source = GitSource(EXAMPLE_REPO, "main", "rendered")
    for name, folder in flux(source, compiled_examples.rendered, Templates()).items():
        kustomizations = {
            obj["metadata"]["name"]: obj
            for path, data in folder.items()
            if path.startswith("kustomization-")
            for obj in [load_yaml(data)]
        }
        order = _apply_order(kustomizations)
        assert order[0] == f"gpuconf-{name}-namespaces"
        pools = f"gpuconf-{name}-pools"
        assert all(
            d["name"] != pools
            for k in kustomizations.values()
            for d in k["spec"].get("dependsOn", [])
        )
        assert all(k["spec"]["wait"] for k in kustomizations.values())
        # Without the Prometheus Operator's CRDs the monitoring stage fails: nothing waits on it.
        monitoring = f"gpuconf-{name}-monitoring"
        assert all(
            d["name"] != monitoring
            for k in kustomizations.values()
            for d in k["spec"].get("dependsOn", [])
        )


def _apply_order(kustomizations: dict[str, dict[str, Any]]) -> list[str]:
    """The order dependsOn forces, one at a time; fails on a missing or circular dependency."""
    done: list[str] = []
    while len(done) < len(kustomizations):
        ready = sorted(
            name
            for name, k in kustomizations.items()
            if name not in done and all(d["name"] in done for d in k["spec"].get("dependsOn", []))
        )
        assert ready, f"stuck after {done}"
        done.append(ready[0])
    return done


@pytest.mark.slow
def test_each_flux_stage_builds_as_flux_generates_it(
    tmp_path: Path,
    compiled_examples,  # type: ignore[no-untyped-def]
) -> None:
    tree = compiled_examples.rendered["fleet"]
    for group in stages(tree):
        for stage in group:
            root = tmp_path / stage
            files = sorted(p for p in tree if p.startswith(f"{stage}/"))
            for relative in files:
                (tmp_path / relative).parent.mkdir(parents=True, exist_ok=True)
                (tmp_path / relative).write_bytes(tree[relative])
            # What Flux does without a kustomization.yaml: kustomize create --autodetect --recursive.
            resources = [Path(p).relative_to(stage).as_posix() for p in files]
            (root / "kustomization.yaml").write_text(json.dumps({"resources": resources}))
            assert len(_kustomize(root)) == len(files)


def test_gitops_refuses_a_path_outside_the_repository() -> None:
    result = run_cli("gitops", "flux", "--repo", EXAMPLE_REPO, "--path", "/abs", cwd=REPO)
    assert result.code == 2
    assert "--path /abs" in result.err


def test_argocd_by_name_sends_each_cluster_to_the_argo_cd_cluster_of_that_name(
    tmp_path: Path,
) -> None:
    result = run_cli(
        "gitops", "argocd", "--repo", EXAMPLE_REPO, "--destination", "by-name",
        "-o", str(tmp_path), "clusters/lab.yaml", cwd=REPO,
    )  # fmt: skip
    assert result.code == 0, result.err
    application = load_yaml((tmp_path / "applications" / "application-lab.yaml").read_bytes())
    assert application["spec"]["destination"] == {"name": "lab"}
    assert crd_errors(application) == []


def test_a_repository_address_flux_cannot_read_is_a_usage_error_and_nothing_is_written(
    tmp_path: Path,
) -> None:
    # The command line is input no gpuconf schema checks: its objects are checked against
    # their CRD's schema as they are rendered (Flux's GitRepository url: http, https or ssh).
    result = run_cli(
        "gitops", "flux", "--repo", "git@example.com:platform/gpus.git",
        "-o", str(tmp_path / "out"), "clusters/lab.yaml", cwd=REPO,
    )  # fmt: skip
    assert result.code == 2, result.err
    assert "spec.url" in result.err
    assert "GitRepository CRD" in result.err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("agent", ["argocd", "flux"])
@pytest.mark.parametrize("revision", ["", " "])
def test_an_empty_revision_is_a_usage_error_and_nothing_is_written(
    tmp_path: Path, agent: str, revision: str
) -> None:
    """Argo CD reads an empty targetRevision as HEAD, and Flux an empty branch as none given:
    either way not a branch the user named (an unset variable: `--revision "$BRANCH"`)."""
    result = run_cli(
        "gitops", agent, "--repo", EXAMPLE_REPO, "--revision", revision,
        "-o", str(tmp_path / "out"), "clusters/lab.yaml", cwd=REPO,
    )  # fmt: skip
    assert result.code == 2
    assert result.err == (
        f"gpuconf: --revision {revision!r}: name the branch (Flux) or revision (Argo CD) to sync\n"
    )
    assert not (tmp_path / "out").exists()


def test_gitops_before_any_render_is_refused_asking_for_a_render_and_writes_nothing(
    tmp_path: Path,
) -> None:
    (tmp_path / "clusters").mkdir()
    shutil.copy(REPO / "clusters" / "lab.yaml", tmp_path / "clusters" / "lab.yaml")
    result = run_cli("gitops", "flux", "--repo", EXAMPLE_REPO, cwd=tmp_path)
    assert result.code == 1  # the command line is right; the repository is not rendered yet
    assert result.err == (
        "gpuconf: no rendered tree of lab in rendered/ (the default --path) for flux to sync; "
        "run `gpuconf render` first, and commit it\n"
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["clusters"]


@pytest.mark.parametrize("agent", ["argocd", "flux"])
def test_a_path_holding_no_rendered_cluster_is_refused_naming_the_rendered_clusters_found(
    tmp_path: Path, agent: str
) -> None:
    result = run_cli(
        "gitops", agent, "--repo", EXAMPLE_REPO, "--path", "rendered/lab",
        "-o", str(tmp_path / "out"), "clusters/lab.yaml", "clusters/fleet.yaml", cwd=REPO,
    )  # fmt: skip
    assert result.code == 2
    assert result.err == (
        f"gpuconf: --path rendered/lab: no rendered tree of fleet, lab in rendered/lab/ for "
        f"{agent} to sync; they are in rendered/: give --path rendered\n"
    )
    assert not (tmp_path / "out").exists()


def test_a_path_holding_other_rendered_clusters_names_them(tmp_path: Path) -> None:
    (tmp_path / "clusters").mkdir()
    shutil.copy(REPO / "clusters" / "lab.yaml", tmp_path / "clusters" / "lab.yaml")
    (tmp_path / "deploy" / "old").mkdir(parents=True)
    (tmp_path / "deploy" / "old" / "kustomization.yaml").write_text("resources: []\n")
    result = run_cli("gitops", "argocd", "--repo", EXAMPLE_REPO, "--path", "deploy", cwd=tmp_path)
    assert result.code == 1
    assert result.err == (
        "gpuconf: --path deploy: no rendered tree of lab in deploy/ for argocd to sync "
        "(rendered clusters there: old); run `gpuconf render -o deploy` first, and commit it\n"
    )


def _clusters_in_a_repository_subfolder(root: Path, git: str) -> Path:
    """A repository whose cluster files are in infra/gpu/clusters/; `git`: its .git a folder
    (`git init`) or a file (a worktree's, naming the folder git keeps it in)."""
    if git == "folder":
        subprocess.run(["git", "init", "-q", str(root)], check=True, timeout=60)
    else:
        (root / ".git").write_text("gitdir: /elsewhere/.git/worktrees/gpu\n")
    folder = root / "infra" / "gpu"
    (folder / "clusters").mkdir(parents=True)
    shutil.copy(REPO / "clusters" / "lab.yaml", folder / "clusters" / "lab.yaml")
    return folder


@pytest.mark.parametrize("git", ["folder", "file"])
def test_gitops_in_a_repository_subfolder_reads_path_from_the_repository_root(
    tmp_path: Path, git: str
) -> None:
    folder = _clusters_in_a_repository_subfolder(tmp_path, git)
    assert run_cli("render", cwd=folder).code == 0
    result = run_cli(
        "gitops", "flux", "--repo", EXAMPLE_REPO, "--path", "infra/gpu/rendered",
        "-o", "gitops/flux", cwd=folder,
    )  # fmt: skip
    assert result.code == 0, result.err
    written = load_yaml((folder / "gitops/flux/lab/kustomization-pools.yaml").read_bytes())
    assert written["spec"]["path"] == "./infra/gpu/rendered/lab/pools"
    assert not (tmp_path / "gitops").exists()


def test_gitops_with_dash_c_into_a_folder_beside_a_repository_reads_that_folder(
    tmp_path: Path,
) -> None:
    """`-C ../plain` from inside another repository: the root is looked for from the folder it
    names (resolved), not from the `..` path as written."""
    subprocess.run(["git", "init", "-q", str(tmp_path / "repo")], check=True, timeout=60)
    plain = tmp_path / "plain"
    (plain / "clusters").mkdir(parents=True)
    shutil.copy(REPO / "clusters" / "lab.yaml", plain / "clusters" / "lab.yaml")
    assert run_cli("render", cwd=plain).code == 0
    beside = f"{tmp_path / 'repo'}/../plain"  # `..` kept as written, as `-C ../plain` is
    result = run_cli("-C", beside, "gitops", "flux", "--repo", EXAMPLE_REPO, cwd=tmp_path / "repo")
    assert result.code == 0, result.err
    assert (plain / "gitops" / "flux" / "lab" / "kustomization-pools.yaml").is_file()


@pytest.mark.parametrize("path", [[], ["--path", "rendered"]])
def test_gitops_in_a_repository_subfolder_names_its_rendered_folder_from_the_root(
    tmp_path: Path, path: list[str]
) -> None:
    folder = _clusters_in_a_repository_subfolder(tmp_path, "folder")
    assert run_cli("render", cwd=folder).code == 0
    result = run_cli("gitops", "argocd", "--repo", EXAMPLE_REPO, *path, cwd=folder)
    assert result.code == 2
    named = "--path rendered: " if path else ""
    default = "" if path else " (the default --path)"
    assert result.err == (
        f"gpuconf: {named}no rendered tree of lab in rendered/{default} for argocd to sync; "
        "they are in infra/gpu/rendered/: give --path infra/gpu/rendered\n"
    )
    assert not (folder / "gitops").exists()


def test_gitops_in_an_unrendered_repository_subfolder_asks_for_a_render_and_the_path(
    tmp_path: Path,
) -> None:
    folder = _clusters_in_a_repository_subfolder(tmp_path, "folder")
    result = run_cli("gitops", "flux", "--repo", EXAMPLE_REPO, cwd=folder)
    assert result.code == 1
    assert result.err == (
        "gpuconf: no rendered tree of lab in rendered/ (the default --path) for flux to sync; "
        "run `gpuconf render` first, commit it, and give --path infra/gpu/rendered\n"
    )
    given = run_cli(
        "gitops", "flux", "--repo", EXAMPLE_REPO, "--path", "infra/gpu/rendered", cwd=folder
    )
    assert given.code == 1
    assert given.err == (
        "gpuconf: --path infra/gpu/rendered: no rendered tree of lab in infra/gpu/rendered/ for "
        "flux to sync; run `gpuconf render` first, and commit it\n"
    )
