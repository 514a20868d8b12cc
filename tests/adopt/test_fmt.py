"""`gpuconf fmt` keeps what the user wrote (comments, order, quoting, blank lines) and changes only
the indentation and whitespace gpuconf's style fixes; a second run changes nothing."""

from __future__ import annotations

import errno
import os
import shutil
import threading
from pathlib import Path

import pytest
from builders import REPO, load_yaml, run_cli

EVERY_CLUSTER_FILE = sorted(
    [*(REPO / "clusters").glob("*.yaml"), *(REPO / "examples").rglob("clusters/*.yaml")]
)

MESSY = """\
# The lab, written by hand.
apiVersion: gpuconf.dev/v1alpha2
kind: Cluster
metadata:
    name: lab     # output goes to rendered/lab/
spec:
    kubernetes:
        version: '1.34'TRAILING
    nodePools:
    -   name: t4

        runtime: {engine: docker}
        gpus:
            model: Tesla-T4     # a catalog name
            count: 2
        size: 2
""".replace("TRAILING", "   ")

# Comments stay in their column.
MESSY_FORMATTED = """\
# The lab, written by hand.
apiVersion: gpuconf.dev/v1alpha2
kind: Cluster
metadata:
  name: lab       # output goes to rendered/lab/
spec:
  kubernetes:
    version: '1.34'
  nodePools:
    - name: t4

      runtime: {engine: docker}
      gpus:
        model: Tesla-T4         # a catalog name
        count: 2
      size: 2
"""


@pytest.mark.parametrize("source", EVERY_CLUSTER_FILE, ids=lambda p: p.relative_to(REPO).as_posix())
def test_fmt_leaves_every_example_byte_for_byte(source: Path, tmp_path: Path) -> None:
    copy = tmp_path / source.name
    shutil.copy(source, copy)
    result = run_cli("fmt", str(copy), cwd=tmp_path)
    assert result.code == 0, result.err
    assert result.out == "nothing to change\n"
    assert copy.read_bytes() == source.read_bytes()


def test_fmt_check_passes_on_the_repositorys_cluster_files() -> None:
    assert run_cli("fmt", "--check", cwd=REPO).code == 0


def test_fmt_reindents_and_trims_but_keeps_comments_quotes_and_blank_lines(tmp_path: Path) -> None:
    (tmp_path / "clusters").mkdir()
    file = tmp_path / "clusters" / "lab.yaml"
    file.write_text(MESSY)
    check = run_cli("fmt", "--check", cwd=tmp_path)
    assert check.code == 1
    assert "clusters/lab.yaml: not formatted: run gpuconf fmt" in check.err
    assert "-    name: lab     # output goes to rendered/lab/\n" in check.out
    assert file.read_text() == MESSY

    assert run_cli("fmt", cwd=tmp_path).out == "formatted 1 file(s): clusters/lab.yaml\n"
    assert file.read_text() == MESSY_FORMATTED
    assert load_yaml(MESSY_FORMATTED) == load_yaml(MESSY)

    again = run_cli("fmt", cwd=tmp_path)
    assert (again.code, again.out) == (0, "nothing to change\n")
    assert run_cli("fmt", "--check", cwd=tmp_path).code == 0


def test_fmt_refuses_an_invalid_file_with_its_position_and_writes_nothing(tmp_path: Path) -> None:
    file = tmp_path / "lab.yaml"
    broken = MESSY.replace("Tesla-T4", "Tesla-T5")
    file.write_text(broken)
    result = run_cli("fmt", "lab.yaml", cwd=tmp_path)
    assert result.code == 1
    assert (
        "lab.yaml:14:13: spec.nodePools[0].gpus.model: unknown GPU model 'Tesla-T5'" in result.err
    )
    assert file.read_text() == broken


def test_fmt_reports_bad_yaml_where_it_is(tmp_path: Path) -> None:
    file = tmp_path / "lab.yaml"
    file.write_text("apiVersion: [\n")
    result = run_cli("fmt", "lab.yaml", cwd=tmp_path)
    assert result.code == 1
    assert result.err.startswith("lab.yaml:2:1: ")


@pytest.mark.parametrize("command", ["fmt", "migrate"])
def test_every_invalid_file_is_reported_not_only_the_first_and_none_is_written(
    command: str, tmp_path: Path
) -> None:
    (tmp_path / "a.yaml").write_text("")
    (tmp_path / "b.yaml").write_text("- a list\n")
    messy = tmp_path / "c.yaml"
    messy.write_text(MESSY)
    result = run_cli(command, "a.yaml", "b.yaml", "c.yaml", cwd=tmp_path)
    assert result.code == 1
    assert result.err.splitlines() == [
        "a.yaml:1:1: (document): the file is empty (hint: a cluster file holds one mapping with "
        "apiVersion, kind, metadata and spec)",
        "b.yaml:1:1: (document): the document is a list, not a mapping (hint: a cluster file "
        "holds one mapping with apiVersion, kind, metadata and spec)",
        "2 errors, 0 warnings",
    ]
    assert messy.read_text() == MESSY


def test_fmt_writes_every_file_or_none_when_the_disk_fills_and_stays_full(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Once c.yaml's new text finds no room, no later write finds any either: putting a and b
    back by writing their old text again would fail too, so nothing may be replaced before every
    new text is on the disk."""
    from gpuconf.node import atomic_files

    for name in ("a.yaml", "b.yaml", "c.yaml"):
        (tmp_path / name).write_text(MESSY)
    real_fill = atomic_files._fill
    full = False

    def disk_full_from_c_on(descriptor: int, data: bytes, sync: bool) -> None:
        nonlocal full
        full = full or os.readlink(f"/proc/self/fd/{descriptor}").split("/")[-1].startswith(
            ".c.yaml."
        )
        if full:
            os.close(descriptor)
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        real_fill(descriptor, data, sync)

    monkeypatch.setattr(atomic_files, "_fill", disk_full_from_c_on)
    result = run_cli("fmt", "a.yaml", "b.yaml", "c.yaml", cwd=tmp_path)
    assert result.code == 1
    assert result.err == "gpuconf: cannot write c.yaml: No space left on device\n"
    assert [(tmp_path / n).read_text() for n in ("a.yaml", "b.yaml", "c.yaml")] == [MESSY] * 3
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.yaml", "b.yaml", "c.yaml"]


def test_fmt_keeps_an_anchor_no_alias_names(tmp_path: Path) -> None:
    text = 'apiVersion: gpuconf.dev/v1alpha2\nkind: Cluster\nmetadata:\n  name: a\nspec:\n  kubernetes:\n    version: "1.34"\n  nodePools:\n    - name: t4\n      runtime: {engine: docker}\n      gpus: &shape\n        model: Tesla-T4\n        count: 1\n      size: 1\n  resourceClasses:\n    - name: t4\n      select: {model: Tesla-T4}\n'
    (tmp_path / "a.yaml").write_text(text)
    result = run_cli("fmt", "--check", "a.yaml", cwd=tmp_path)
    assert (result.code, result.out) == (0, ""), result.out + result.err


def test_fmt_rewrites_the_file_a_symbolic_link_names_and_keeps_the_link(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    (shared / "lab.yaml").write_text(MESSY)
    (tmp_path / "clusters").mkdir()
    (tmp_path / "clusters" / "lab.yaml").symlink_to("../shared/lab.yaml")
    result = run_cli("fmt", "clusters/lab.yaml", cwd=tmp_path)
    assert result.code == 0, result.err
    assert (tmp_path / "clusters" / "lab.yaml").is_symlink()
    assert (shared / "lab.yaml").read_text() != MESSY
    assert run_cli("fmt", "--check", "shared/lab.yaml", cwd=tmp_path).code == 0


def test_fmt_refuses_to_rewrite_a_pipe_and_writes_nothing(tmp_path: Path) -> None:
    """`gpuconf fmt /dev/stdin < file` would rename the new text over /dev/stdin itself."""
    fifo = tmp_path / "in.yaml"
    os.mkfifo(fifo)
    (tmp_path / "b.yaml").write_text(MESSY)
    writer = threading.Thread(target=fifo.write_text, args=(MESSY,), daemon=True)
    writer.start()
    result = run_cli("fmt", "b.yaml", "in.yaml", cwd=tmp_path)
    writer.join(5)
    assert result.code == 1, result.err
    assert result.err == (
        "gpuconf: in.yaml: not a regular file; gpuconf rewrites cluster files in place\n"
    )
    assert fifo.is_fifo()
    assert (tmp_path / "b.yaml").read_text() == MESSY
