"""`gpuconf nodes add|remove` changes only the lines of the nodes it declares or retires."""

from __future__ import annotations

import difflib
import shutil
from pathlib import Path

import pytest
from builders import REPO, load_yaml, run_cli

from gpuconf.formats.located_yaml import load_file

EVERY_CLUSTER_FILE = sorted(
    [*(REPO / "clusters").glob("*.yaml"), *(REPO / "examples").rglob("clusters/*.yaml")]
)
UUIDS = ["GPU-5e1a0c52-3c4b-4d6e-9a2f-0c8e1f6b7a11", "GPU-5e1a0c52-3c4b-4d6e-9a2f-0c8e1f6b7a12"]


def _copy(source: Path, folder: Path) -> Path:
    copy = folder / source.name
    shutil.copy(source, copy)
    return copy


LAB_BYTES = (REPO / "clusters" / "lab.yaml").read_bytes()
LAB_UUIDS = ["GPU-5e1a0c52-3c4b-4d6e-9a2f-0c8e1f6b7a01", "GPU-5e1a0c52-3c4b-4d6e-9a2f-0c8e1f6b7a02"]


def _changed_lines(before: str, after: str) -> tuple[list[str], list[str]]:
    diff = list(difflib.ndiff(before.splitlines(), after.splitlines()))
    return [d[2:] for d in diff if d.startswith("- ")], [d[2:] for d in diff if d.startswith("+ ")]


@pytest.mark.parametrize("source", EVERY_CLUSTER_FILE, ids=lambda p: p.relative_to(REPO).as_posix())
def test_nodes_add_only_adds_the_new_nodes_lines_to_every_example(
    source: Path, tmp_path: Path
) -> None:
    file = _copy(source, tmp_path)
    pools = load_yaml(source.read_text())["spec"]["nodePools"]
    pool = pools[-1]
    result = run_cli("nodes", "add", file.name, pool["name"], "new-gpu-node", cwd=tmp_path)
    assert result.code == 0, result.err
    removed, added = _changed_lines(source.read_text(), file.read_text())
    assert removed == []
    assert [line.strip() for line in added if "nodes:" not in line][:1] == ["- name: new-gpu-node"]
    after = load_yaml(file.read_text())["spec"]["nodePools"][-1]["nodes"][-1]
    assert after == {
        "name": "new-gpu-node",
        "gpus": [{"index": i} for i in range(pool["gpus"]["count"])],
    }
    again = run_cli("fmt", "--check", file.name, cwd=tmp_path)
    assert again.code == 0, again.out


def test_nodes_add_with_uuids_then_remove_gives_back_the_file(tmp_path: Path) -> None:
    source = REPO / "clusters" / "lab.yaml"
    file = _copy(source, tmp_path)
    uuids = [arg for u in UUIDS for arg in ("--uuid", u)]
    assert run_cli("nodes", "add", "lab.yaml", "t4", "lab-gpu-3", *uuids, cwd=tmp_path).code == 0
    removed, added = _changed_lines(source.read_text(), file.read_text())
    assert removed == []
    assert [a.strip() for a in added] == [
        "- name: lab-gpu-3",
        "gpus:",
        f"- {{index: 0, uuid: {UUIDS[0]}}}",
        f"- {{index: 1, uuid: {UUIDS[1]}}}",
    ]
    # A name given twice is one node, and counted once.
    result = run_cli("nodes", "remove", "lab.yaml", "lab-gpu-3", "lab-gpu-3", cwd=tmp_path)
    assert result.out == "retired 1 node(s) from lab.yaml\n"
    assert file.read_text() == source.read_text()


def test_nodes_remove_keeps_the_comment_that_follows_the_pool(tmp_path: Path) -> None:
    source = REPO / "clusters" / "fleet.yaml"
    file = _copy(source, tmp_path)
    assert run_cli("nodes", "add", "fleet.yaml", "a100", "a100-gpu-05", cwd=tmp_path).code == 0
    assert run_cli("nodes", "remove", "fleet.yaml", "a100-gpu-05", cwd=tmp_path).code == 0
    assert file.read_text() == source.read_text()


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["add", "lab.yaml", "t4", "lab-gpu-2", "--gpus", "3"],
            "lab.yaml:24:11: spec.nodePools[0].nodes[1]: node 'lab-gpu-2' is already declared "
            "with 2 GPU(s), not 3 (hint: remove it first",
        ),
        (
            ["add", "lab.yaml", "t4", "lab-gpu-1", "--uuid", UUIDS[0], "--uuid", UUIDS[1]],
            "lab.yaml:20:11: spec.nodePools[0].nodes[0]: node 'lab-gpu-1' is already declared "
            "with other GPUs: GPU 0 is GPU-5e1a0c52-3c4b-4d6e-9a2f-0c8e1f6b7a01, not "
            f"{UUIDS[0]}",
        ),
        (["add", "lab.yaml", "t5", "x"], "lab.yaml:10:3: spec.nodePools: no pool named 't5'"),
        (
            ["add", "lab.yaml", "t4", "x", "--uuid", UUIDS[0]],
            "lab.yaml:18:9: spec.nodePools[0].gpus.count: 1 UUID(s) given for a node of 2 GPU(s)",
        ),
        (["remove", "lab.yaml", "nope"], "lab.yaml:10:3: spec.nodePools: no node 'nope' declared"),
        (
            ["add", "lab.yaml", "t4", "UPPER"],
            "lab.yaml:28:11: spec.nodePools[0].nodes[2].name:",
        ),
    ],
    ids=[
        "re-add-other-count",
        "re-add-other-uuids",
        "unknown-pool",
        "uuid-count",
        "unknown-node",
        "bad-name-checked-after-edit",
    ],
)
def test_nodes_refuses_with_a_located_diagnostic_and_writes_nothing(
    argv: list[str], message: str, tmp_path: Path
) -> None:
    source = REPO / "clusters" / "lab.yaml"
    file = _copy(source, tmp_path)
    result = run_cli("nodes", *argv, cwd=tmp_path)
    assert result.code == 1
    assert result.err.startswith(message), result.err
    assert file.read_text() == source.read_text()


@pytest.mark.parametrize(
    "argv",
    [
        ["lab-gpu-2"],
        ["lab-gpu-2", "--gpus", "2"],
        ["lab-gpu-1", "--uuid", LAB_UUIDS[0], "--uuid", LAB_UUIDS[1]],
        ["lab-gpu-1"],
    ],
    ids=["same-count", "same-count-given", "same-uuids", "uuids-declared-none-given"],
)
def test_re_adding_a_node_declared_with_the_same_gpus_changes_nothing_and_says_so(
    argv: list[str], tmp_path: Path
) -> None:
    """A script declaring its nodes can run again: only a re-add that differs is refused."""
    source = REPO / "clusters" / "lab.yaml"
    file = _copy(source, tmp_path)
    result = run_cli("nodes", "add", "lab.yaml", "t4", *argv, cwd=tmp_path)
    assert (result.code, result.err) == (0, "")
    assert result.out == (
        f"node {argv[0]} is already declared as given in pool t4 of lab.yaml\nnothing to change\n"
    )
    assert file.read_bytes() == source.read_bytes()


def test_re_adding_declared_nodes_with_new_ones_adds_only_the_new(tmp_path: Path) -> None:
    file = _copy(REPO / "clusters" / "lab.yaml", tmp_path)
    result = run_cli("nodes", "add", "lab.yaml", "t4", "lab-gpu-2", "lab-gpu-3", cwd=tmp_path)
    assert result.code == 0, result.err
    assert result.out == (
        "node lab-gpu-2 is already declared as given in pool t4 of lab.yaml\n"
        "declared 1 node(s) in pool t4 of lab.yaml\n"
    )
    names = [n["name"] for n in load_yaml(file.read_text())["spec"]["nodePools"][0]["nodes"]]
    assert names == ["lab-gpu-1", "lab-gpu-2", "lab-gpu-3"]


@pytest.mark.parametrize("uuids", [[], LAB_UUIDS], ids=["no-uuids", "same-uuids"])
def test_re_adding_a_node_whose_gpus_are_listed_in_another_order_changes_nothing(
    tmp_path: Path, uuids: list[str]
) -> None:
    """A node's GPUs are index → UUID: `{index: 1}, {index: 0}` validates, and is the same node."""
    text = LAB_BYTES.decode()
    first, second = (f"            - {{index: {i}, uuid: {LAB_UUIDS[i]}}}\n" for i in (0, 1))
    swapped = text.replace(first + second, second + first)
    assert swapped != text
    file = tmp_path / "lab.yaml"
    file.write_text(swapped)
    assert run_cli("validate", "lab.yaml", cwd=tmp_path).code == 0
    given = [arg for uuid in uuids for arg in ("--uuid", uuid)]
    result = run_cli("nodes", "add", "lab.yaml", "t4", "lab-gpu-1", *given, cwd=tmp_path)
    assert (result.code, result.err) == (0, "")
    assert result.out.startswith("node lab-gpu-1 is already declared as given in pool t4")
    assert file.read_text() == swapped


@pytest.mark.parametrize("node", ["lab-gpu-1", "lab-gpu-9"], ids=["declared", "new"])
def test_an_uppercase_uuid_is_a_usage_error_for_a_declared_and_a_new_node_alike(
    tmp_path: Path, node: str
) -> None:
    file = _copy(REPO / "clusters" / "lab.yaml", tmp_path)
    upper = [
        arg for uuid in LAB_UUIDS for arg in ("--uuid", "GPU-" + uuid.removeprefix("GPU-").upper())
    ]
    result = run_cli("nodes", "add", "lab.yaml", "t4", node, *upper, cwd=tmp_path)
    assert result.code == 2
    assert result.err.startswith(
        f"gpuconf: argument --uuid: '{upper[1]}' is not a GPU UUID: write it as "
        "nvidia-smi -L prints it"
    ), result.err
    assert file.read_bytes() == LAB_BYTES


def test_a_node_named_twice_is_declared_once_and_reported_once(tmp_path: Path) -> None:
    file = _copy(REPO / "clusters" / "lab.yaml", tmp_path)
    argv = ["nodes", "add", "lab.yaml", "t4", "lab-gpu-2", "lab-gpu-2", "lab-gpu-3", "lab-gpu-3"]
    result = run_cli(*argv, cwd=tmp_path)
    assert (result.code, result.err) == (0, "")
    assert result.out == (
        "node lab-gpu-2 is already declared as given in pool t4 of lab.yaml\n"
        "declared 1 node(s) in pool t4 of lab.yaml\n"
    )
    names = [n["name"] for n in load_yaml(file.read_text())["spec"]["nodePools"][0]["nodes"]]
    assert names == ["lab-gpu-1", "lab-gpu-2", "lab-gpu-3"]


def test_re_adding_a_node_into_another_pool_is_refused_naming_its_pool(tmp_path: Path) -> None:
    source = REPO / "clusters" / "fleet.yaml"
    file = _copy(source, tmp_path)
    pools = load_yaml(source.read_text())["spec"]["nodePools"]
    declared_pool = next(p for p in pools if p.get("nodes"))
    node = declared_pool["nodes"][0]["name"]
    other = next(p["name"] for p in pools if p is not declared_pool)
    result = run_cli("nodes", "add", "fleet.yaml", other, node, cwd=tmp_path)
    assert result.code == 1
    assert (
        f"node {node!r} is already declared in pool {declared_pool['name']!r}, not {other!r}"
        in (result.err)
    )
    assert file.read_bytes() == source.read_bytes()


def test_nodes_add_creates_the_nodes_list_where_a_pool_has_none(tmp_path: Path) -> None:
    file = _copy(REPO / "clusters" / "nvidia-migration.yaml", tmp_path)
    result = run_cli("nodes", "add", file.name, "l4", "l4-node-1", "--gpus", "2", cwd=tmp_path)
    assert result.code == 0, result.err
    pool = load_file(file).data["spec"]["nodePools"][1]
    assert list(pool)[-2:] == ["size", "nodes"]
    assert pool["nodes"] == [{"name": "l4-node-1", "gpus": [{"index": 0}, {"index": 1}]}]


def test_retiring_a_pools_last_nodes_gives_back_the_file_it_had_before_them(
    tmp_path: Path,
) -> None:
    source = REPO / "clusters" / "nvidia-migration.yaml"
    file = _copy(source, tmp_path)
    assert run_cli("nodes", "add", file.name, "l4", "l4-a", "l4-b", cwd=tmp_path).code == 0
    result = run_cli("nodes", "remove", file.name, "l4-a", "l4-b", cwd=tmp_path)
    assert result.code == 0, result.err
    assert file.read_text() == source.read_text()  # not `nodes: []`


COMMENTED_NODES = """\
apiVersion: gpuconf.dev/v1alpha2
kind: Cluster
metadata: {name: lab}
spec:
  kubernetes: {version: "1.34"}
  nodePools:
    - name: l4
      runtime: {engine: containerd}
      gpus: {model: L4, count: 1}
      nodes:
        # the first two, racked in May
        - name: l4-0
          gpus: [{index: 0}]

        - name: l4-1   # second
          gpus: [{index: 0}]
  resourceClasses:
    - name: l4
      select: {pools: [l4]}
"""


def test_retiring_every_node_of_a_pool_with_a_comment_above_them_says_what_the_pool_lacks(
    tmp_path: Path,
) -> None:
    """The comment above the list was left on an empty list, which ruamel wrote as a bare `[]`
    under it: a YAML syntax error in a file nobody had written."""
    file = tmp_path / "lab.yaml"
    file.write_text(COMMENTED_NODES)
    result = run_cli("nodes", "remove", file.name, "l4-0", "l4-1", cwd=tmp_path)
    assert result.code == 1
    assert result.err.startswith(
        "lab.yaml:7:7: spec.nodePools[0]: pool 'l4' has neither size nor nodes"
    ), result.err
    assert file.read_text() == COMMENTED_NODES
    result = run_cli("nodes", "remove", file.name, "l4-0", cwd=tmp_path)
    assert result.code == 0, result.err
    assert "- name: l4-1   # second\n" in file.read_text()


@pytest.mark.parametrize(
    "pool_ends_with", ["size: 2\n", "size: 2\n      driver:\n        version: 550.54.15\n"]
)
def test_retiring_a_pools_last_node_keeps_the_comment_above_the_next_pool(
    pool_ends_with: str, tmp_path: Path
) -> None:
    """ruamel holds that comment at the end of the nodes list; it stays when the list goes."""
    file = tmp_path / "lab.yaml"
    file.write_text(
        COMMENTED_NODES.replace("      nodes:\n", f"      {pool_ends_with}      nodes:\n").replace(
            "  resourceClasses:",
            "    # --- the T4s ---\n"
            "    - name: t4\n"
            "      runtime: {engine: containerd}\n"
            "      gpus: {model: Tesla-T4, count: 1}\n"
            "      size: 1\n"
            "  resourceClasses:",
        )
    )
    before = file.read_text()
    result = run_cli("nodes", "remove", file.name, "l4-0", "l4-1", cwd=tmp_path)
    assert result.code == 0, result.err
    removed, added = _changed_lines(before, file.read_text())
    assert added == []
    assert [line.strip() for line in removed] == [
        "nodes:",
        "# the first two, racked in May",
        "- name: l4-0",
        "gpus: [{index: 0}]",
        "",
        "- name: l4-1   # second",
        "gpus: [{index: 0}]",
    ]


def test_a_node_named_twice_is_retired_once_and_no_other_with_it(tmp_path: Path) -> None:
    source = REPO / "clusters" / "fleet.yaml"
    file = _copy(source, tmp_path)
    for name in ("a100-gpu-05", "a100-gpu-06"):
        assert run_cli("nodes", "add", "fleet.yaml", "a100", name, cwd=tmp_path).code == 0
    argv = ["nodes", "remove", "fleet.yaml", "a100-gpu-06", "a100-gpu-06"]
    assert run_cli(*argv, cwd=tmp_path).code == 0
    assert "a100-gpu-05" in file.read_text()
    assert "a100-gpu-06" not in file.read_text()


@pytest.mark.parametrize("count", ["0", "-1", "65", "99999999999999999999999", "two"])
def test_nodes_add_refuses_a_gpu_count_no_node_has_before_building_it(
    count: str, tmp_path: Path
) -> None:
    source = REPO / "clusters" / "lab.yaml"
    file = _copy(source, tmp_path)
    result = run_cli("nodes", "add", file.name, "t4", "new-node", "--gpus", count, cwd=tmp_path)
    assert result.code == 2, result.err
    assert result.err.startswith("gpuconf: argument --gpus: "), result.err
    if count == "two":
        assert "two: not a whole number" in result.err
    else:
        assert f"{count}: a node has 1 to 64 GPUs" in result.err
    assert file.read_text() == source.read_text()


def _add_then_remove(tmp_path: Path, source: bytes) -> bytes:
    """`nodes add` then `nodes remove` of one node on a file of `source`: the add changes only
    the node's own lines, the remove gives `source` back byte for byte. Returns the file as the
    add left it."""
    file = tmp_path / "lab.yaml"
    file.write_bytes(source)
    assert run_cli("nodes", "add", "lab.yaml", "t4", "lab-gpu-3", cwd=tmp_path).code == 0
    added = file.read_bytes()
    removed, new = _changed_lines(source.decode(), added.decode())
    assert removed == []
    assert [line.strip() for line in new] == ["- name: lab-gpu-3", "gpus: [{index: 0}, {index: 1}]"]
    assert run_cli("nodes", "remove", "lab.yaml", "lab-gpu-3", cwd=tmp_path).code == 0
    assert file.read_bytes() == source
    return added


def test_nodes_add_then_remove_keeps_a_crlf_file_crlf_throughout(tmp_path: Path) -> None:
    added = _add_then_remove(tmp_path, LAB_BYTES.replace(b"\n", b"\r\n"))
    assert added.count(b"\n") == added.count(b"\r\n"), "a line ended in LF alone"


def test_nodes_add_then_remove_keeps_each_line_end_of_a_file_of_mixed_ends(tmp_path: Path) -> None:
    lines = LAB_BYTES.split(b"\n")
    _add_then_remove(
        tmp_path,
        b"".join(  # every third line CRLF, the others LF
            line + (b"\r\n" if n % 3 == 0 else b"\n") for n, line in enumerate(lines[:-1])
        ),
    )


def test_nodes_add_then_remove_keeps_a_utf8_byte_order_mark(tmp_path: Path) -> None:
    added = _add_then_remove(tmp_path, b"\xef\xbb\xbf" + LAB_BYTES)
    assert added.startswith(b"\xef\xbb\xbf")


ANCHORED = """\
apiVersion: gpuconf.dev/v1alpha2
kind: Cluster
metadata:
  name: anchored
spec:
  kubernetes:
    version: "1.34"
  nodePools:
    - name: a
      runtime: &engine
        engine: docker
      gpus: &shape
        model: Tesla-T4
        count: 1
      size: 1
    - name: b
      runtime: *engine
      gpus: {model: L4, count: 1}
      size: 1
  resourceClasses:
    - name: t4
      select: {model: Tesla-T4}
    - name: l4
      select: {model: L4}
"""


def test_nodes_add_keeps_every_anchor_even_one_no_alias_names(tmp_path: Path) -> None:
    file = tmp_path / "anchored.yaml"
    file.write_text(ANCHORED)
    assert run_cli("nodes", "add", "anchored.yaml", "a", "n1", cwd=tmp_path).code == 0
    removed, added = _changed_lines(ANCHORED, file.read_text())
    assert removed == []
    assert [line.strip() for line in added] == ["nodes:", "- name: n1", "gpus: [{index: 0}]"]
