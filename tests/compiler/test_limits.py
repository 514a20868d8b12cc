"""Limits Kubernetes or sanity set, reported where the file says and before anything is written."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from builders import REPO, cluster, dump, gpu_uuid, pool, read_tree, run_cli

from gpuconf.compiler import emit
from gpuconf.formats.located_yaml import MAX_FILE_BYTES


def _declared_pool(nodes: int) -> dict[str, object]:
    declared = pool("big", "L4", 8)
    del declared["size"]
    declared["nodes"] = [
        {
            "name": f"node-{n:04d}",
            "gpus": [{"index": g, "uuid": gpu_uuid(n * 8 + g)} for g in range(8)],
        }
        for n in range(nodes)
    ]
    return declared


def _write(folder: Path, document: dict[str, object]) -> None:
    (folder / "cluster.yaml").write_text(dump(document), encoding="utf-8")


def test_a_node_config_configmap_over_1_mib_names_the_pool_and_how_to_split_it(
    tmp_path: Path,
) -> None:
    classes = [{"name": "l4", "select": {"pools": ["big"]}, "sharing": {"strategy": "none"}}]
    _write(tmp_path, cluster([_declared_pool(2600)], classes))
    result = run_cli("render", "cluster.yaml", "-o", "out", cwd=tmp_path)
    assert result.code == 1
    line, summary = result.err.splitlines()
    assert line.startswith(
        "cluster.yaml:9:5: spec.nodePools[0]: the ConfigMap pools/big/configmap-node-config.yaml "
        "would hold 1."
    )
    assert line.endswith(
        " MiB; Kubernetes refuses a ConfigMap over 1 MiB (hint: split pool 'big' into several "
        "pools of fewer declared nodes (it declares 2600), or give it `size` instead of "
        "declaring each node)"
    )
    assert summary == "1 error, 0 warnings"
    assert not (tmp_path / "out").exists()


def test_the_same_pool_at_half_the_nodes_renders(tmp_path: Path) -> None:
    classes = [{"name": "l4", "select": {"pools": ["big"]}, "sharing": {"strategy": "none"}}]
    _write(tmp_path, cluster([_declared_pool(1300)], classes))
    assert run_cli("render", "cluster.yaml", "-o", "out", cwd=tmp_path).code == 0


def test_a_cluster_file_over_the_size_cap_is_refused_before_it_is_parsed(tmp_path: Path) -> None:
    (tmp_path / "cluster.yaml").write_bytes(b"#" * (MAX_FILE_BYTES + 1))
    result = run_cli("validate", "cluster.yaml", cwd=tmp_path)
    assert result.code == 1
    assert result.err.splitlines()[0] == (
        "cluster.yaml:1:1: (document): the file is 16.0 MiB; gpuconf reads files up to 16 MiB "
        "(hint: split it into several files, or describe nodes by pool size instead of one "
        "by one)"
    )


def _dead_pid() -> int:
    """The pid of a process that has ended, as a render killed with SIGKILL leaves it."""
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


def _lab_rendered(tmp_path: Path) -> Path:
    out = tmp_path / "out"
    assert run_cli("render", "clusters/lab.yaml", "-o", str(out), cwd=REPO).code == 0
    return out


def test_a_staging_folder_left_by_a_killed_render_fails_the_check_and_the_next_render_removes_it(
    tmp_path: Path,
) -> None:
    out = _lab_rendered(tmp_path)
    leftover = out / f"{emit.STAGING_PREFIX}{_dead_pid()}-abcd"
    (leftover / "lab").mkdir(parents=True)
    (leftover / "lab" / "half-written.yaml").write_text("kind: Conf")
    check = run_cli("render", "clusters/lab.yaml", "-o", str(out), "--check", cwd=REPO)
    assert check.code == 1
    assert f"Only in out: {leftover.name} (left by an interrupted render)\n" in check.out
    assert run_cli("render", "clusters/lab.yaml", "-o", str(out), cwd=REPO).code == 0
    assert not leftover.exists()
    again = run_cli("render", "clusters/lab.yaml", "-o", str(out), "--check", cwd=REPO)
    assert again.code == 0


def test_a_running_renders_staging_folder_is_left_alone(tmp_path: Path) -> None:
    out = _lab_rendered(tmp_path)
    running = out / f"{emit.STAGING_PREFIX}{os.getpid()}-abcd"
    running.mkdir()
    assert run_cli("render", "clusters/lab.yaml", "-o", str(out), cwd=REPO).code == 0
    assert running.is_dir()


def test_the_check_names_entries_gpuconf_did_not_write_and_leaves_them(tmp_path: Path) -> None:
    out = _lab_rendered(tmp_path)
    (out / "notes.txt").write_text("mine\n")
    before = read_tree(out)
    check = run_cli("render", "clusters/lab.yaml", "-o", str(out), "--check", cwd=REPO)
    assert check.code == 0
    assert f"{out}/notes.txt: not written by gpuconf (left alone)\n" in check.err
    assert read_tree(out) == before
