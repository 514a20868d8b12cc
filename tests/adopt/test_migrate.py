"""Cluster-file versions as the API server serves them: a gpuconf.dev/v1alpha1 file is still read
(converted in memory, with a located warning naming `gpuconf migrate`), `gpuconf migrate`
rewrites it at gpuconf.dev/v1alpha2 keeping everything it does not change, and a v1alpha2 file
using v1alpha1's form is a located error."""

from __future__ import annotations

import json
import shutil
from itertools import pairwise
from pathlib import Path

import jsonschema
import pytest
from builders import REPO, run_cli

from gpuconf.api.cluster.conversion import STEPS, steps_from
from gpuconf.api.version import CLUSTER_API_VERSION
from gpuconf.compiler.pipeline import compile_paths, find_cluster_files
from gpuconf.formats.located_yaml import load_file

FIXTURES = Path(__file__).with_name("v1alpha1")
V1ALPHA1 = FIXTURES / "mig-lab.yaml"
MIGRATED = FIXTURES / "mig-lab.migrated.yaml"
SHIPPED = [
    REPO / "clusters",
    REPO / "examples/site-templates/clusters",
    REPO / "examples/starter/clusters",
]
DEPRECATED = (
    "mig-lab.yaml:4:1: apiVersion: warning: gpuconf.dev/v1alpha1 is deprecated; read as "
    "gpuconf.dev/v1alpha2 (hint: run `gpuconf migrate mig-lab.yaml` to rewrite the file at "
    "gpuconf.dev/v1alpha2, comments kept)"
)


def _copy(source: Path, folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    return Path(shutil.copy(source, folder / "mig-lab.yaml"))


def test_migrate_rewrites_only_the_version_line_and_the_single_layouts(tmp_path: Path) -> None:
    file = _copy(V1ALPHA1, tmp_path)
    result = run_cli("migrate", "mig-lab.yaml", cwd=tmp_path)
    assert result.code == 0, result.err
    assert file.read_text() == MIGRATED.read_text()
    assert result.err.splitlines() == [
        "mig-lab.yaml: pool-mig-sharing-as-list: spec.nodePools[0].sharing: one value → a list of one",
        "mig-lab.yaml: pool-mig-sharing-as-list: spec.nodePools[1].sharing: one value → a list of one",
        "mig-lab.yaml: apiVersion: gpuconf.dev/v1alpha1 → gpuconf.dev/v1alpha2",
    ]
    assert result.out == "migrated 1 file(s): mig-lab.yaml\n"


def test_a_second_migrate_changes_nothing(tmp_path: Path) -> None:
    file = _copy(MIGRATED, tmp_path)
    check = run_cli("migrate", "--check", "mig-lab.yaml", cwd=tmp_path)
    again = run_cli("migrate", "mig-lab.yaml", cwd=tmp_path)
    assert (check.code, check.out, check.err) == (0, "", "")
    assert (again.code, again.err) == (0, "")
    assert file.read_text() == MIGRATED.read_text()


SHARED_LAYOUT = """\
apiVersion: gpuconf.dev/v1alpha1
kind: Cluster
metadata: {name: twins}
spec:
  kubernetes: {version: "1.34"}
  nodePools:
    - name: a
      runtime: {engine: containerd}
      gpus: {model: A100-SXM4-80GB, count: 8}
      size: 1
      sharing: &small
        # Seven small instances on every GPU.
        strategy: mig
        layout: all-1g.10gb
    - name: b
      runtime: {engine: containerd}
      gpus: {model: A100-SXM4-80GB, count: 8}
      size: 1
      sharing: *small
  resourceClasses:
    - name: small
      select: {migProfile: 1g.10gb}
"""


def test_a_layout_two_pools_share_through_an_anchor_stays_one_anchored_list_reported_once(
    tmp_path: Path,
) -> None:
    """The anchor names the list the layout moves into, so the alias stays `sharing: *small`:
    each alias wrapped in a list of its own came out as `sharing:   - *small` (ruamel writes a
    commented mapping's alias so), and migrate refused the file it had made."""
    file = tmp_path / "twins.yaml"
    file.write_text(SHARED_LAYOUT)
    result = run_cli("migrate", "twins.yaml", cwd=tmp_path)
    assert result.code == 0, result.err
    assert result.err.splitlines() == [
        "twins.yaml: pool-mig-sharing-as-list: spec.nodePools[0].sharing: one value → a list of "
        "one (its alias spec.nodePools[1].sharing shares the list)",
        "twins.yaml: apiVersion: gpuconf.dev/v1alpha1 → gpuconf.dev/v1alpha2",
    ]
    assert file.read_text() == SHARED_LAYOUT.replace("v1alpha1", "v1alpha2").replace(
        "        strategy: mig\n        layout: all-1g.10gb\n",
        "        - strategy: mig\n          layout: all-1g.10gb\n",
    )
    assert run_cli("migrate", "--check", "twins.yaml", cwd=tmp_path).code == 0
    pools = load_file(file).data["spec"]["nodePools"]
    assert (
        pools[0]["sharing"] == pools[1]["sharing"] == [{"strategy": "mig", "layout": "all-1g.10gb"}]
    )


def test_three_pools_sharing_one_anchored_layout_are_reported_on_one_line_naming_both_aliases(
    tmp_path: Path,
) -> None:
    third = (
        "    - name: c\n" + SHARED_LAYOUT.split("    - name: b\n")[1].split("  resourceClasses:")[0]
    )
    text = SHARED_LAYOUT.replace("  resourceClasses:", third + "  resourceClasses:")
    file = tmp_path / "triplets.yaml"
    file.write_text(text)
    result = run_cli("migrate", "triplets.yaml", cwd=tmp_path)
    assert result.code == 0, result.err
    assert result.err.splitlines() == [
        "triplets.yaml: pool-mig-sharing-as-list: spec.nodePools[0].sharing: one value → a list "
        "of one (its aliases spec.nodePools[1].sharing, spec.nodePools[2].sharing share the list)",
        "triplets.yaml: apiVersion: gpuconf.dev/v1alpha1 → gpuconf.dev/v1alpha2",
    ]
    pools = load_file(file).data["spec"]["nodePools"]
    assert [p["sharing"] for p in pools] == [[{"strategy": "mig", "layout": "all-1g.10gb"}]] * 3


def test_migrate_check_fails_on_a_v1alpha1_file_and_writes_nothing(tmp_path: Path) -> None:
    file = _copy(V1ALPHA1, tmp_path)
    result = run_cli("migrate", "--check", "mig-lab.yaml", cwd=tmp_path)
    assert result.code == 1
    assert '-apiVersion: "gpuconf.dev/v1alpha1"   # the version this file was written at' in (
        result.out + result.err
    )
    assert file.read_text() == V1ALPHA1.read_text()


def test_a_v1alpha1_file_and_its_migration_render_byte_identical_trees(tmp_path: Path) -> None:
    _copy(V1ALPHA1, tmp_path / "old")
    _copy(MIGRATED, tmp_path / "new")
    old = compile_paths([tmp_path / "old"], relative_to=tmp_path / "old")
    new = compile_paths([tmp_path / "new"], relative_to=tmp_path / "new")
    assert old.ok
    assert new.ok
    assert old.rendered == new.rendered
    assert old.rendered["mig-lab"]


def test_validate_reads_v1alpha1_and_warns_where_the_version_is(tmp_path: Path) -> None:
    _copy(V1ALPHA1, tmp_path)
    result = run_cli("validate", "mig-lab.yaml", cwd=tmp_path)
    assert result.code == 0
    assert result.err.splitlines() == [DEPRECATED, "0 errors, 1 warning"]


def test_the_current_version_reads_without_a_warning(tmp_path: Path) -> None:
    _copy(MIGRATED, tmp_path)
    result = run_cli("validate", "mig-lab.yaml", cwd=tmp_path)
    assert (result.code, result.err) == (0, "")


def test_a_v1alpha2_file_with_a_single_mig_mapping_gets_an_error_at_it(tmp_path: Path) -> None:
    text = V1ALPHA1.read_text().replace('"gpuconf.dev/v1alpha1"', "gpuconf.dev/v1alpha2")
    (tmp_path / "mig-lab.yaml").write_text(text.replace("layout: 'all-1g.10gb'", "layout: all-9g"))
    result = run_cli("validate", "mig-lab.yaml", cwd=tmp_path)
    refused = (
        "a pool's MIG sharing is a list of layouts in gpuconf.dev/v1alpha2, not one mapping "
        "(hint: put the layout in a list, `sharing: [{strategy: mig, layout: …}]`; only "
        "gpuconf.dev/v1alpha1 took one mapping)"
    )
    assert result.code == 1
    lines = result.err.splitlines()
    assert lines[0] == f"mig-lab.yaml:16:7: spec.nodePools[0].sharing: {refused}"
    # The rest of the file is still checked, and named as the file has it.
    assert lines[1].startswith(
        "mig-lab.yaml:19:9: spec.nodePools[0].sharing.layout: GPUs 0–7 of pool 'a100': "
        "A100-SXM4-80GB has no MIG layout 'all-9g'"
    )
    assert lines[2] == f"mig-lab.yaml:24:7: spec.nodePools[1].sharing: {refused}"
    assert lines[3:] == ["3 errors, 0 warnings"]


def test_a_shape_error_inside_a_converted_v1alpha1_layout_names_the_files_own_path(
    tmp_path: Path,
) -> None:
    text = V1ALPHA1.read_text().replace(
        "        strategy: mig\n", "        strategy: mig\n        bogus: 1\n"
    )
    (tmp_path / "mig-lab.yaml").write_text(text)
    result = run_cli("validate", "mig-lab.yaml", cwd=tmp_path)
    assert result.code == 1
    assert result.err.splitlines() == [
        DEPRECATED,
        "mig-lab.yaml:19:9: spec.nodePools[0].sharing.bogus: unknown key 'bogus' "
        "(hint: allowed keys: strategy, layout, indices)",
        "1 error, 1 warning",
    ]


def test_an_unknown_version_is_refused_at_its_line(tmp_path: Path) -> None:
    text = V1ALPHA1.read_text().replace('"gpuconf.dev/v1alpha1"', "gpuconf.dev/v1beta1")
    (tmp_path / "mig-lab.yaml").write_text(text)
    result = run_cli("migrate", "mig-lab.yaml", cwd=tmp_path)
    assert result.code == 1
    lines = result.err.splitlines()
    assert lines[0] == (
        "mig-lab.yaml:4:1: apiVersion: 'gpuconf.dev/v1beta1' is not a cluster-file version gpuconf "
        "reads (hint: did you mean 'gpuconf.dev/v1alpha1'? gpuconf reads gpuconf.dev/v1alpha2, "
        "gpuconf.dev/v1alpha1 (deprecated))"
    )
    # Read as the current version, whose form the single layouts are not.
    assert [line.split(": ")[0] for line in lines[1:]] == [
        "mig-lab.yaml:16:7",
        "mig-lab.yaml:24:7",
        "3 errors, 0 warnings",
    ]
    assert (tmp_path / "mig-lab.yaml").read_text() == text


@pytest.mark.parametrize("folder", SHIPPED, ids=lambda f: f.relative_to(REPO).as_posix())
def test_every_shipped_cluster_file_is_at_the_current_version(folder: Path) -> None:
    files = find_cluster_files([folder])
    assert files
    assert {load_file(f).data["apiVersion"] for f in files} == {CLUSTER_API_VERSION}
    result = run_cli("migrate", "--check", folder.relative_to(REPO).as_posix(), cwd=REPO)
    assert (result.code, result.out) == (0, "")


def test_the_migrated_file_satisfies_the_published_schema_and_the_old_one_does_not() -> None:
    schema = json.loads((REPO / "schemas/cluster.schema.json").read_text(encoding="utf-8"))
    validator = jsonschema.Draft202012Validator(schema)
    assert list(validator.iter_errors(load_file(MIGRATED).data)) == []
    refused = {tuple(e.path) for e in validator.iter_errors(load_file(V1ALPHA1).data)}
    assert refused == {
        ("apiVersion",),
        ("spec", "nodePools", 0, "sharing"),
        ("spec", "nodePools", 1, "sharing"),
    }


def test_the_conversion_steps_chain_from_the_oldest_version_to_the_current_one() -> None:
    assert [s.from_version for s in STEPS] == ["gpuconf.dev/v1alpha1"]
    assert [s.to_version for s in STEPS][-1] == CLUSTER_API_VERSION
    assert all(a.to_version == b.from_version for a, b in pairwise(STEPS))
    assert steps_from(CLUSTER_API_VERSION) == []
    assert steps_from("gpuconf.dev/v1alpha1") == list(STEPS)
