"""`gpuconf import quotas` writes the GPU lines of ResourceQuotas into a cluster file's quotas:
rendered again, they are the same quotas; the file keeps its comments; the rest is listed."""

from __future__ import annotations

import contextlib
import difflib
import io
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from builders import REPO, load_yaml, run_cli

QUOTAS = """\
apiVersion: v1
kind: ResourceQuota
metadata: {name: gpus, namespace: research}
spec:
  hard:
    requests.gpuconf.dev/t4-shared: "6"
    requests.cpu: "64"
---
# a namespace the cluster file does not know yet
apiVersion: v1
kind: ResourceQuota
metadata: {name: gpus, namespace: ml}
spec:
  scopes: [NotBestEffort]
  hard:
    requests.gpuconf.dev/t4-shared: "2"
    requests.nvidia.com/gpu: "1"
"""


def test_imported_quotas_render_as_the_source_quotas_and_the_rest_is_listed(tmp_path: Path) -> None:
    (tmp_path / "clusters").mkdir()
    source = REPO / "clusters" / "lab.yaml"
    file = tmp_path / "clusters" / "lab.yaml"
    shutil.copy(source, file)
    (tmp_path / "quotas.yaml").write_text(QUOTAS)
    result = run_cli("import", "quotas", "quotas.yaml", "--into", "clusters/lab.yaml", cwd=tmp_path)
    assert result.code == 0, result.err
    assert result.err.splitlines() == [
        "quotas.yaml:7:5: spec.hard.requests.cpu: warning: no class of the cluster is requested by this name",
        "quotas.yaml:14:3: spec.scopes: warning: this quota holds only the pods of NotBestEffort "
        "(t4-shared: 2); gpuconf's quotas have no scopes: imported as 2 for every pod of the "
        "namespace",
        "quotas.yaml:17:5: spec.hard.requests.nvidia.com/gpu: warning: no class of the cluster is requested by this name",
    ]
    changes = [
        line
        for line in difflib.unified_diff(
            source.read_text().splitlines(), file.read_text().splitlines(), n=0
        )
        if line[:1] in "+-" and line[:3] not in ("+++", "---")
    ]
    assert changes == [
        "-        t4-shared: 8",
        "+        t4-shared: 6",
        "+    - namespace: ml",
        "+      classes:",
        "+        t4-shared: 2",
    ]
    assert run_cli("render", cwd=tmp_path).code == 0
    for namespace, count in (("research", "6"), ("ml", "2")):
        quota = load_yaml(
            (tmp_path / "rendered" / "lab" / "quotas" / f"{namespace}.yaml").read_text()
        )
        assert quota["spec"]["hard"] == {"requests.gpuconf.dev/t4-shared": count}


def test_quotas_piped_on_stdin_are_imported_as_from_a_file_and_located_at_stdin(
    tmp_path: Path,
) -> None:
    """`kubectl get resourcequota -A -o yaml | gpuconf import quotas - --into …`."""
    for folder in ("from-file", "from-stdin"):
        (tmp_path / folder).mkdir()
        shutil.copy(REPO / "clusters" / "lab.yaml", tmp_path / folder / "lab.yaml")
    (tmp_path / "from-file" / "quotas.yaml").write_text(QUOTAS)
    from_file = run_cli(
        "import", "quotas", "quotas.yaml", "--into", "lab.yaml", cwd=tmp_path / "from-file"
    )
    piped = run_cli(
        "import", "quotas", "-", "--into", "lab.yaml", cwd=tmp_path / "from-stdin", stdin=QUOTAS
    )
    assert (piped.code, piped.out) == (from_file.code, from_file.out) == (0, from_file.out)
    assert piped.err == from_file.err.replace("quotas.yaml:", "<stdin>:")
    assert piped.err.startswith("<stdin>:7:5: spec.hard.requests.cpu: warning: ")
    assert (tmp_path / "from-stdin" / "lab.yaml").read_text() == (
        tmp_path / "from-file" / "lab.yaml"
    ).read_text()


def test_stdin_named_twice_is_a_usage_error_and_nothing_is_written(tmp_path: Path) -> None:
    file = tmp_path / "lab.yaml"
    shutil.copy(REPO / "clusters" / "lab.yaml", file)
    result = run_cli("import", "quotas", "-", "-", "--into", "lab.yaml", cwd=tmp_path, stdin=QUOTAS)
    assert result.code == 2
    assert result.err == "gpuconf: - (standard input) is named twice; it can be read once\n"
    assert file.read_bytes() == (REPO / "clusters" / "lab.yaml").read_bytes()


def test_bad_yaml_on_stdin_is_located_at_stdin(tmp_path: Path) -> None:
    shutil.copy(REPO / "clusters" / "lab.yaml", tmp_path / "lab.yaml")
    result = run_cli("import", "quotas", "-", "--into", "lab.yaml", cwd=tmp_path, stdin="a: [\n")
    assert result.code == 1
    assert result.err.startswith("<stdin>:"), result.err


class _Terminal(io.TextIOWrapper):
    def isatty(self) -> bool:
        return True


IMPORTS_READING_STDIN = {
    "quotas": ["import", "quotas", "-", "--into", "lab.yaml"],
    "nvidia-chart": ["import", "nvidia-chart", "-", "--name", "x", "--gpus", "a=L4:1:1"],
    "gpu-operator": ["import", "gpu-operator", "-", "--name", "x", "--gpus", "a=L4:1:1"],
}


@pytest.mark.parametrize("source", sorted(IMPORTS_READING_STDIN))
def test_a_closed_stdin_is_located_at_stdin_and_nothing_is_written(
    tmp_path: Path, source: str
) -> None:
    shutil.copy(REPO / "clusters" / "lab.yaml", tmp_path / "lab.yaml")
    result = run_cli(*IMPORTS_READING_STDIN[source], cwd=tmp_path, stdin=None)
    assert result.code == 1, result.err
    assert result.err.startswith("<stdin>:1:1: (document): standard input is closed")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["lab.yaml"]
    assert (tmp_path / "lab.yaml").read_bytes() == (REPO / "clusters" / "lab.yaml").read_bytes()


def test_quotas_from_a_really_closed_stdin_exit_1_not_as_a_bug(tmp_path: Path) -> None:
    """`gpuconf import quotas - --into lab.yaml <&-`: Python starts with sys.stdin None."""
    shutil.copy(REPO / "clusters" / "lab.yaml", tmp_path / "lab.yaml")
    closed = subprocess.run(
        [sys.executable, "-m", "gpuconf", "import", "quotas", "-", "--into", "lab.yaml"],
        stdin=subprocess.DEVNULL, capture_output=True, text=True, cwd=tmp_path, timeout=120,
        check=False, preexec_fn=lambda: os.close(0),
    )  # fmt: skip
    assert closed.returncode == 1, closed.stderr
    assert closed.stderr.startswith("<stdin>:1:1: (document): standard input is closed")


@pytest.mark.parametrize("source", sorted(IMPORTS_READING_STDIN))
def test_stdin_a_terminal_is_a_usage_error_not_a_silent_wait(tmp_path: Path, source: str) -> None:
    shutil.copy(REPO / "clusters" / "lab.yaml", tmp_path / "lab.yaml")
    terminal = _Terminal(io.BytesIO(QUOTAS.encode()), encoding="utf-8")
    result = run_cli(*IMPORTS_READING_STDIN[source], cwd=tmp_path, stdin=terminal)
    assert result.code == 2
    assert result.err == (
        "gpuconf: - reads standard input, which is a terminal: pipe the file in\n"
    )
    assert terminal.buffer.tell() == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["lab.yaml"]


def test_a_file_named_dash_given_as_dot_slash_dash_is_read_not_stdin(tmp_path: Path) -> None:
    for folder in ("named", "piped"):
        (tmp_path / folder).mkdir()
        shutil.copy(REPO / "clusters" / "lab.yaml", tmp_path / folder / "lab.yaml")
    (tmp_path / "named" / "-").write_text(QUOTAS)
    named = run_cli(
        "import", "quotas", "./-", "--into", "lab.yaml", cwd=tmp_path / "named", stdin="a: [\n"
    )
    piped = run_cli(
        "import", "quotas", "-", "--into", "lab.yaml", cwd=tmp_path / "piped", stdin=QUOTAS
    )
    assert named.code == piped.code == 0, named.err
    assert named.err == piped.err.replace("<stdin>:", "-:")
    assert (tmp_path / "named" / "lab.yaml").read_text() == (
        tmp_path / "piped" / "lab.yaml"
    ).read_text()


@pytest.mark.parametrize(
    ("source", "argument"),
    [("quotas", "RESOURCEQUOTA"), ("nvidia-chart", "VALUES"), ("nvidia-chart", "CONFIG"),
     ("gpu-operator", "CLUSTERPOLICY")],
)  # fmt: skip
def test_the_help_of_each_input_that_may_be_piped_says_so(source: str, argument: str) -> None:
    from gpuconf.cli import build_parser

    helped = io.StringIO()
    with contextlib.redirect_stdout(helped), pytest.raises(SystemExit):
        build_parser().parse_command_line(["import", source, "--help"])
    described = helped.getvalue().split("positional arguments:")[1].split("options:")[0]
    entry = re.split(r"\n  (?=\S)", described.split(f"  {argument}")[1])[0]
    assert "(`-`: standard input)" in " ".join(entry.split())


def test_a_resource_several_classes_share_is_listed_not_guessed(tmp_path: Path) -> None:
    file = tmp_path / "nvidia-migration.yaml"
    shutil.copy(REPO / "clusters" / "nvidia-migration.yaml", file)
    (tmp_path / "q.yaml").write_text(
        "kind: ResourceQuota\nmetadata: {namespace: inference}\nspec:\n  hard: {requests.nvidia.com/gpu: '80'}\n"
    )
    before = file.read_text()
    result = run_cli("import", "quotas", "q.yaml", "--into", file.name, cwd=tmp_path)
    assert result.code == 0, result.err
    assert (
        "q.yaml:4:10: spec.hard.requests.nvidia.com/gpu: warning: requests.nvidia.com/gpu counts "
        "classes t4-shared, l4-mps, a100 together; gpuconf quotas one class"
    ) in result.err
    assert result.out == "nothing to change\n"
    assert file.read_text() == before


def test_quotas_over_capacity_are_refused_where_they_would_be_written(tmp_path: Path) -> None:
    file = tmp_path / "lab.yaml"
    shutil.copy(REPO / "clusters" / "lab.yaml", file)
    before = file.read_text()
    (tmp_path / "q.yaml").write_text(
        "kind: ResourceQuota\nmetadata: {namespace: research}\nspec:\n  hard: {requests.gpuconf.dev/t4-shared: '40'}\n"
    )
    result = run_cli("import", "quotas", "q.yaml", "--into", "lab.yaml", cwd=tmp_path)
    assert result.code == 1
    assert "quotas for class 't4-shared' add up to 44, more than its capacity of 16" in result.err
    assert file.read_text() == before


def test_several_quotas_of_one_namespace_import_as_the_smallest_whichever_comes_first(
    tmp_path: Path,
) -> None:
    """The quota admission enforces every quota of a namespace: the smaller is its limit. A scoped
    quota limits only its scope's pods, so an unscoped one is the namespace's limit."""
    (tmp_path / "clusters").mkdir()
    shutil.copy(REPO / "clusters" / "lab.yaml", tmp_path / "clusters" / "lab.yaml")
    quota = "kind: ResourceQuota\nmetadata: {{name: {}, namespace: {}}}\nspec:\n{}  hard: {{requests.gpuconf.dev/t4-shared: '{}'}}\n"
    high = "  scopeSelector: {matchExpressions: [{scopeName: PriorityClass, operator: In, values: [high]}]}\n"
    for order in ((0, 1, 2, 3, 4), (4, 3, 2, 1, 0)):
        documents = [
            quota.format("small", "research", "", 3),
            quota.format("gpus", "research", "", 7),
            quota.format("high", "research", high, 1),
            quota.format("high", "students", high, 9),
            quota.format("gpus", "students", "", 4),
        ]
        (tmp_path / "q.yaml").write_text("---\n".join(documents[i] for i in order))
        result = run_cli("import", "quotas", "q.yaml", "--into", "clusters/lab.yaml", cwd=tmp_path)
        assert result.code == 0, result.err
        quotas = load_yaml((tmp_path / "clusters" / "lab.yaml").read_text())["spec"]["quotas"]
        assert quotas == [
            {"namespace": "research", "classes": {"t4-shared": 3}},
            {"namespace": "students", "classes": {"t4-shared": 4}},
        ], order
        said = [line.split(": warning: ", 1)[1] for line in result.err.splitlines()]
        assert sorted(said) == [
            "this quota holds only the pods of PriorityClass In [high] (t4-shared: 1); gpuconf's "
            "quotas have no scopes: not imported, so those pods may now use up to the "
            "namespace's 3",
            "this quota holds only the pods of PriorityClass In [high] (t4-shared: 9); gpuconf's "
            "quotas have no scopes: not imported, and the namespace's quota of 4 holds those pods "
            "too",
        ], order


def test_a_namespace_held_by_scoped_quotas_alone_imports_the_smallest_for_every_pod(
    tmp_path: Path,
) -> None:
    """gpuconf's quotas have no scopes: the smallest scoped one, held over every pod, gives no
    pod more than it had (adopt/quota_scopes.py), and each is said so."""
    (tmp_path / "clusters").mkdir()
    shutil.copy(REPO / "clusters" / "lab.yaml", tmp_path / "clusters" / "lab.yaml")
    quota = "kind: ResourceQuota\nmetadata: {{name: {}, namespace: ml}}\nspec:\n  scopes: [{}]\n  hard: {{requests.gpuconf.dev/t4-shared: '{}'}}\n"
    (tmp_path / "q.yaml").write_text(
        quota.format("long", "NotTerminating", 4) + "---\n" + quota.format("jobs", "Terminating", 2)
    )
    result = run_cli("import", "quotas", "q.yaml", "--into", "clusters/lab.yaml", cwd=tmp_path)
    assert result.code == 0, result.err
    quotas = load_yaml((tmp_path / "clusters" / "lab.yaml").read_text())["spec"]["quotas"]
    assert {"namespace": "ml", "classes": {"t4-shared": 2}} in quotas
    assert result.err.splitlines() == [
        f"q.yaml:{line}:3: spec.scopes: warning: this quota holds only the pods of {scope} "
        f"(t4-shared: {count}); gpuconf's quotas have no scopes: imported as 2 for every pod of "
        "the namespace"
        for line, scope, count in ((4, "NotTerminating", 4), (10, "Terminating", 2))
    ]


def test_a_gpu_line_without_the_requests_prefix_is_listed_as_limiting_nothing(
    tmp_path: Path,
) -> None:
    """The API server admits `nvidia.com/gpu` and `limits.nvidia.com/gpu` in a quota, but its
    pod evaluator counts an extended resource only as `requests.<name>`
    (k8s.io/kubernetes v1.34 pkg/quota/v1/evaluator/core/pods.go, isExtendedResourceNameForQuota):
    such a line limited nothing, so it is not imported, and the message says why."""
    file = tmp_path / "lab.yaml"
    shutil.copy(REPO / "clusters" / "lab.yaml", file)
    before = file.read_text()
    (tmp_path / "q.yaml").write_text(
        "kind: ResourceQuota\nmetadata: {namespace: research}\nspec:\n  hard:\n"
        "    gpuconf.dev/t4-shared: '2'\n    limits.gpuconf.dev/t4-shared: '2'\n"
    )
    result = run_cli("import", "quotas", "q.yaml", "--into", file.name, cwd=tmp_path)
    assert result.code == 0, result.err
    said = (
        "warning: Kubernetes counts gpuconf.dev/t4-shared in a quota only as "
        "requests.gpuconf.dev/t4-shared: this line limits nothing, so it is not imported "
        "(hint: to limit the namespace, write requests.gpuconf.dev/t4-shared and import again)"
    )
    assert result.err.splitlines() == [
        f"q.yaml:5:5: spec.hard.gpuconf.dev/t4-shared: {said}",
        f"q.yaml:6:5: spec.hard.limits.gpuconf.dev/t4-shared: {said}",
    ]
    assert file.read_text() == before


# 1e99999999999: 10 to that power is never worked out (it would fill the machine's memory).
@pytest.mark.parametrize("huge", ["99999999999999999999999", "1e99999999999"])
def test_a_quota_larger_than_any_cluster_is_listed_at_its_line_not_refused_elsewhere(
    tmp_path: Path, huge: str
) -> None:
    """Teams write a huge quota to mean "no limit"; it was refused at a line of the cluster file
    as it would have been written, with the hint to quote the number."""
    file = tmp_path / "lab.yaml"
    shutil.copy(REPO / "clusters" / "lab.yaml", file)
    before = file.read_text()
    (tmp_path / "q.yaml").write_text(
        "kind: ResourceQuota\nmetadata: {namespace: ml}\nspec:\n  hard:\n"
        f"    requests.gpuconf.dev/t4-shared: '{huge}'\n"
    )
    result = run_cli("import", "quotas", "q.yaml", "--into", file.name, cwd=tmp_path)
    assert (result.code, result.out) == (0, "nothing to change\n"), result.err
    assert result.err == (
        f"q.yaml:5:5: spec.hard.requests.gpuconf.dev/t4-shared: warning: {huge} "
        "is more than a gpuconf quota holds (1,000,000): not imported, which leaves the "
        "namespace as unlimited as this line did\n"
    )
    assert file.read_text() == before
    # A namespace the file already holds keeps its quota.
    (tmp_path / "q.yaml").write_text(
        (tmp_path / "q.yaml").read_text().replace("namespace: ml", "namespace: research")
    )
    result = run_cli("import", "quotas", "q.yaml", "--into", file.name, cwd=tmp_path)
    assert (result.code, result.out) == (0, "nothing to change\n"), result.err
    assert result.err.endswith("not imported; the file keeps t4-shared: 8 there\n")
    assert file.read_text() == before


KUBECTL_LIST = """\
apiVersion: v1
items:
- apiVersion: v1
  kind: ResourceQuota
  metadata: {name: gpus, namespace: research}
  spec:
    hard:
      requests.gpuconf.dev/t4-shared: 1k
      requests.cpu: "64"
kind: List
metadata:
  resourceVersion: ""
"""


def test_kubectls_list_output_is_read_item_by_item_with_quantities_as_the_server_writes_them(
    tmp_path: Path,
) -> None:
    """`kubectl get resourcequota -A -o yaml` writes one `kind: List`; the API server writes
    1,000 as "1k". Both are read as they are, and problems are located at the item's line."""
    (tmp_path / "clusters").mkdir()
    shutil.copy(REPO / "clusters" / "lab.yaml", tmp_path / "clusters" / "lab.yaml")
    (tmp_path / "quotas.yaml").write_text(KUBECTL_LIST)
    result = run_cli("import", "quotas", "quotas.yaml", "--into", "clusters/lab.yaml", cwd=tmp_path)
    # 1,000 T4 replicas are more than the lab holds: refused where they would be written.
    assert result.code == 1
    assert "quotas for class 't4-shared' add up to 1004, more than its capacity of 16" in result.err
    assert "quotas.yaml:9:7: items[0].spec.hard.requests.cpu: warning: no class" in result.err


def test_into_a_file_that_does_not_exist_names_that_file(tmp_path: Path) -> None:
    """Not the clusters/ folder where a cluster of that name would be looked up."""
    quota = tmp_path / "quota.yaml"
    quota.write_text(
        "apiVersion: v1\nkind: ResourceQuota\nmetadata: {name: q, namespace: team}\n"
        "spec: {hard: {requests.gpuconf.dev/t4-shared: '2'}}\n"
    )
    result = run_cli("import", "quotas", "quota.yaml", "--into", "lab.yaml", cwd=tmp_path)
    assert result.code == 1
    assert result.err.startswith("lab.yaml:1:1: (document): cannot read the file: "), result.err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["quota.yaml"]
