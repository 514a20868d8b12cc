"""The command line as a user meets it: commands, formats, exit codes, and nothing written on bad input."""

from __future__ import annotations

import contextlib
import gc
import json
import os
import shutil
import stat
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from builders import CASES, CLUSTERS, RENDERED, REPO, load_yaml, read_tree, run_cli, run_reader_gone

import gpuconf.compiler.pipeline

BAD = CASES / "negative" / "quota-over-capacity" / "cluster.yaml"


@pytest.fixture
def repo_copy(tmp_path: Path) -> Path:
    """clusters/ and rendered/ copied, so commands run as in a checkout without touching it."""
    shutil.copytree(CLUSTERS, tmp_path / "clusters")
    shutil.copytree(RENDERED, tmp_path / "rendered")
    assert run_cli("render", cwd=tmp_path).code == 0
    return tmp_path


def test_validate_reports_the_valid_clusters() -> None:
    result = run_cli("validate", "clusters/lab.yaml", cwd=REPO)
    assert result.code == 0
    assert result.out == "1 cluster(s) valid: lab\n"
    assert result.err == ""


def test_validate_reports_problems_on_stderr_and_exits_1() -> None:
    result = run_cli("validate", str(BAD))
    assert result.code == 1
    assert "more than its capacity of 16" in result.err
    assert result.err.endswith("1 error, 0 warnings\n")


def test_validate_json_format_prints_diagnostics_as_data() -> None:
    result = run_cli("validate", "--format", "json", str(BAD))
    assert result.code == 1
    (diagnostic,) = json.loads(result.out)["diagnostics"]
    assert diagnostic["severity"] == "error"
    assert diagnostic["path"] == "spec.resourceClasses[0].name"
    assert diagnostic["line"] == 17
    assert diagnostic["column"] == 7
    assert set(diagnostic) == {"file", "line", "column", "path", "severity", "message", "hint"}


def test_render_writes_the_tree_into_the_output_folder(tmp_path: Path) -> None:
    result = run_cli("render", "clusters/lab.yaml", "-o", str(tmp_path), cwd=REPO)
    assert result.code == 0
    assert read_tree(tmp_path / "lab") == read_tree(RENDERED / "lab")


@pytest.mark.parametrize(("umask", "folders"), [(0o077, 0o700), (0o022, 0o755), (0o002, 0o775)])
def test_rendered_files_are_0644_whatever_the_umask_and_folders_follow_it(
    tmp_path: Path, umask: int, folders: int
) -> None:
    previous = os.umask(umask)
    try:
        assert run_cli("render", "clusters/lab.yaml", "-o", str(tmp_path), cwd=REPO).code == 0
    finally:
        os.umask(previous)
    tree = [tmp_path / "lab", *(tmp_path / "lab").rglob("*")]
    modes = {(p.is_dir(), stat.S_IMODE(p.stat().st_mode)) for p in tree}
    assert modes == {(False, 0o644), (True, folders)}


def test_render_check_passes_when_up_to_date(repo_copy: Path) -> None:
    result = run_cli("render", "--check", cwd=repo_copy)
    assert result.code == 0
    assert "up to date" in result.out


def test_render_check_shows_a_unified_diff_and_exits_1_when_stale(repo_copy: Path) -> None:
    quota = repo_copy / "rendered" / "lab" / "quotas" / "research.yaml"
    quota.write_text(quota.read_text().replace('"8"', '"9"'))
    before = read_tree(repo_copy / "rendered")
    result = run_cli("render", "--check", cwd=repo_copy)
    assert result.code == 1
    assert "--- a/lab/quotas/research.yaml" in result.out
    assert "+++ b/lab/quotas/research.yaml" in result.out
    assert '-    requests.gpuconf.dev/t4-shared: "9"' in result.out
    assert '+    requests.gpuconf.dev/t4-shared: "8"' in result.out
    assert "stale" in result.err
    assert read_tree(repo_copy / "rendered") == before


def test_render_removes_folders_of_clusters_that_no_longer_exist(repo_copy: Path) -> None:
    (repo_copy / "clusters" / "fleet.yaml").unlink()
    assert run_cli("render", cwd=repo_copy).code == 0
    assert not (repo_copy / "rendered" / "fleet").exists()
    assert (repo_copy / "rendered" / "lab").is_dir()


def test_diff_prints_changes_and_exit_code_flag_makes_them_an_error(repo_copy: Path) -> None:
    lab = repo_copy / "clusters" / "lab.yaml"
    lab.write_text(lab.read_text().replace("t4-shared: 4", "t4-shared: 2"))
    plain = run_cli("diff", cwd=repo_copy)
    strict = run_cli("diff", "--exit-code", cwd=repo_copy)
    assert plain.code == 0
    assert '+    requests.gpuconf.dev/t4-shared: "2"' in plain.out
    assert strict.code == 1
    assert strict.out == plain.out


def test_diff_is_empty_when_nothing_changed(repo_copy: Path) -> None:
    result = run_cli("diff", "--exit-code", cwd=repo_copy)
    assert (result.code, result.out) == (0, "")


def test_schema_writes_the_schemas_and_check_detects_drift(tmp_path: Path) -> None:
    assert run_cli("schema", "-o", str(tmp_path)).code == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "cluster.schema.json",
        "node-config.schema.json",
    ]
    assert run_cli("schema", "--check", "-o", str(tmp_path)).code == 0
    (tmp_path / "cluster.schema.json").write_text("{}")
    assert run_cli("schema", "--check", "-o", str(tmp_path)).code == 1


def test_explain_shows_capacity_quota_and_headroom() -> None:
    result = run_cli("explain", "lab", cwd=REPO)
    assert result.code == 0
    lines = result.out.splitlines()
    assert lines[0] == "cluster lab"
    assert lines[1].split() == [
        "class",
        "requested",
        "as",
        "devices",
        "replicas",
        "capacity",
        "quota",
        "headroom",
    ]
    assert lines[2].split() == ["t4-shared", "gpuconf.dev/t4-shared", "4", "4", "16", "12", "4"]
    assert "  research: 8" in lines


def test_schema_check_calls_a_missing_schema_missing_and_a_changed_one_stale(
    tmp_path: Path,
) -> None:
    assert run_cli("schema", "-o", "schemas", cwd=tmp_path).code == 0
    (tmp_path / "schemas" / "cluster.schema.json").write_text("{}")
    (tmp_path / "schemas" / "node-config.schema.json").unlink()
    result = run_cli("schema", "--check", "-o", "schemas", cwd=tmp_path)
    assert result.code == 1
    assert "schemas/cluster.schema.json is stale: run gpuconf schema\n" in result.err
    assert "schemas/node-config.schema.json is missing: run gpuconf schema\n" in result.err
    nowhere = run_cli("schema", "--check", "-o", "nowhere", cwd=tmp_path)
    assert nowhere.code == 1
    assert "is stale" not in nowhere.err
    assert "nowhere/cluster.schema.json is missing: run gpuconf schema\n" in nowhere.err


def test_diff_exit_code_is_kept_when_the_reader_of_stdout_goes_early(tmp_path: Path) -> None:
    """`gpuconf diff --exit-code | head`: the changes were found; git diff and diff(1) do not
    report success either when their reader goes (they die of SIGPIPE)."""
    result = run_reader_gone(
        "diff", str(CLUSTERS / "lab.yaml"), "-o", str(tmp_path / "empty"), "--exit-code"
    )
    assert result.returncode == 1, result.stderr
    assert result.stderr == ""


@pytest.mark.parametrize("buffered", [True, False], ids=["buffered", "unbuffered"])
def test_a_stdout_that_cannot_be_written_is_a_user_error_not_a_traceback(buffered: bool) -> None:
    """`gpuconf validate … > /dev/full`: buffered, the write fails at the last flush, after the
    command returned; unbuffered, inside the command. Either way the user is told, exit 1."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    if not buffered:
        env["PYTHONUNBUFFERED"] = "1"
    with open("/dev/full", "w") as full:
        result = subprocess.run(
            [sys.executable, "-m", "gpuconf", "validate", str(CLUSTERS / "lab.yaml")],
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            timeout=120,
            check=False,
        )
    assert (result.returncode, result.stderr) == (
        1,
        "gpuconf: cannot write the output: No space left on device\n",
    )


@pytest.mark.parametrize(
    ("format_args", "code"), [(("--format", "json"), 1), ((), 0)], ids=["writes-stderr", "quiet"]
)
def test_a_stderr_that_cannot_be_written_fails_the_command_only_where_it_writes_there(
    format_args: tuple[str, ...], code: int
) -> None:
    """JSON mode says its summary on stderr; a valid file in text mode says nothing there."""
    with open("/dev/full", "w") as full:
        result = subprocess.run(
            [sys.executable, "-m", "gpuconf", "validate", *format_args, str(CLUSTERS / "lab.yaml")],
            stdout=subprocess.PIPE,
            stderr=full,
            timeout=120,
            check=False,
        )
    assert result.returncode == code


def test_the_standard_streams_are_given_back_after_a_failed_write() -> None:
    from gpuconf.cli import main

    full = open("/dev/full", "w")  # noqa: SIM115 -- closed below, after main has given it back
    saved = sys.stdout
    sys.stdout = full
    try:
        code = main(["validate", str(CLUSTERS / "lab.yaml")])
        assert sys.stdout is full
    finally:
        sys.stdout = saved
        with contextlib.suppress(OSError):
            full.close()
    assert code == 1


def test_explain_accepts_a_file_path() -> None:
    result = run_cli("explain", str(CLUSTERS / "fleet.yaml"))
    assert result.code == 0
    assert "big-memory" in result.out


@pytest.mark.parametrize("name", ["", "."])
def test_explain_of_no_name_is_a_usage_error_not_every_file_in_the_folder(
    name: str, tmp_path: Path
) -> None:
    (tmp_path / "stray.yaml").write_text("not: a cluster\n")
    result = run_cli("explain", name, cwd=tmp_path)
    assert result.code == 2
    assert result.err == f"gpuconf: {name!r}: name a cluster, or its file, not a folder\n"


def test_explain_of_an_unknown_cluster_is_a_usage_error() -> None:
    result = run_cli("explain", "no-such-cluster", cwd=REPO)
    assert result.code == 2
    assert "no cluster named 'no-such-cluster'" in result.err


@pytest.mark.parametrize(
    "argv",
    [("frobnicate",), ("render", "--no-such-flag"), ("validate", "--format", "xml"), ()],
    ids=["unknown command", "unknown flag", "unknown format", "no command"],
)
def test_usage_errors_exit_2(argv: tuple[str, ...]) -> None:
    result = run_cli(*argv)
    assert result.code == 2
    assert result.err.startswith("gpuconf: ")
    assert "Traceback" not in result.err


def test_a_missing_path_is_a_user_error(tmp_path: Path) -> None:
    result = run_cli("validate", str(tmp_path / "nope.yaml"))
    assert result.code == 1
    assert "no such file or directory" in result.err


@pytest.mark.parametrize("command", ["validate", "render", "fmt", "migrate", "explain"])
def test_a_missing_path_is_named_as_given_relative_to_the_working_folder(
    tmp_path: Path, command: str
) -> None:
    (tmp_path / "clusters").mkdir()
    shutil.copy(CLUSTERS / "lab.yaml", tmp_path / "clusters" / "lab.yaml")
    result = run_cli(command, "clusters/nope.yaml", cwd=tmp_path)
    expected = (
        "gpuconf: no cluster named 'clusters/nope.yaml' in clusters/ (known: lab)\n"
        if command == "explain"
        else "gpuconf: clusters/nope.yaml: no such file or directory\n"
    )
    assert result.err == expected


def test_a_cluster_file_given_as_a_pipe_is_read(tmp_path: Path) -> None:
    """`gpuconf validate /dev/stdin < lab.yaml`, or a shell's `<(…)`: a pipe, not a regular file."""
    import threading

    pipe = tmp_path / "lab.yaml"
    os.mkfifo(pipe)
    writer = threading.Thread(target=pipe.write_bytes, args=((CLUSTERS / "lab.yaml").read_bytes(),))
    writer.start()
    try:
        result = run_cli("validate", str(pipe))
    finally:
        if writer.is_alive():
            with pipe.open("rb") as reader:  # let a writer nobody read from finish
                reader.read()
        writer.join()
    assert (result.code, result.out) == (0, "1 cluster(s) valid: lab\n"), result.err


def test_an_empty_device_is_read_as_an_empty_file() -> None:
    result = run_cli("validate", os.devnull)
    assert result.code == 1
    assert result.err.startswith(f"{os.devnull}:1:1: (document): the file is empty"), result.err


@pytest.mark.parametrize(
    "paths",
    [
        ("clusters/lab.yaml", "clusters/lab.yaml"),
        ("clusters/lab.yaml", "./clusters/../clusters/lab.yaml"),
        ("clusters", "clusters/lab.yaml"),
    ],
    ids=["twice", "by-two-spellings", "in-its-folder-and-by-name"],
)
def test_a_file_named_twice_is_read_once_not_a_clash_with_itself(paths: tuple[str, ...]) -> None:
    result = run_cli("validate", *paths, cwd=REPO)
    assert result.code == 0, result.err
    assert "also defined" not in result.err


@pytest.mark.parametrize("link", [os.link, os.symlink], ids=["hard-link", "symbolic-link"])
def test_a_file_and_a_link_to_it_in_one_folder_are_read_once(
    tmp_path: Path, link: Callable[[Path, Path], None]
) -> None:
    shutil.copy(REPO / "clusters" / "lab.yaml", tmp_path / "a.yaml")
    link(tmp_path / "a.yaml", tmp_path / "b.yaml")
    result = run_cli("validate", str(tmp_path), cwd=REPO)
    assert result.code == 0, result.err
    assert "also defined" not in result.err


def test_a_folder_without_cluster_files_is_a_user_error(tmp_path: Path) -> None:
    result = run_cli("validate", str(tmp_path))
    assert result.code == 1
    assert "no cluster files" in result.err


def test_a_bug_exits_3_with_a_one_line_message_and_no_traceback(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("boom\nsecond line")

    monkeypatch.delenv("GPUCONF_DEBUG", raising=False)
    monkeypatch.setattr(gpuconf.compiler.pipeline, "compile_paths", broken)
    result = run_cli("validate", str(CLUSTERS / "lab.yaml"))
    assert result.code == 3
    assert result.err == (
        "gpuconf: internal error: RuntimeError: boom (a bug; GPUCONF_DEBUG=1 shows details)\n"
    )


def test_ctrl_c_exits_130(monkeypatch: pytest.MonkeyPatch) -> None:
    def interrupted(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(gpuconf.compiler.pipeline, "compile_paths", interrupted)
    assert run_cli("validate", str(CLUSTERS / "lab.yaml")).code == 130


def test_bad_input_writes_nothing_even_beside_good_clusters(repo_copy: Path) -> None:
    shutil.copy(BAD, repo_copy / "clusters" / "bad.yaml")
    (repo_copy / "clusters" / "lab.yaml").write_text(
        (repo_copy / "clusters" / "lab.yaml").read_text().replace("t4-shared: 4", "t4-shared: 2")
    )
    before = read_tree(repo_copy / "rendered")
    result = run_cli("render", cwd=repo_copy)
    assert result.code == 1
    assert read_tree(repo_copy / "rendered") == before


def test_render_refuses_to_replace_a_folder_it_did_not_write(tmp_path: Path) -> None:
    (tmp_path / "lab").mkdir()
    (tmp_path / "lab" / "mine.txt").write_text("keep me")
    result = run_cli("render", str(CLUSTERS / "lab.yaml"), "-o", str(tmp_path))
    assert result.code == 1
    assert "was not written by gpuconf" in result.err
    assert (tmp_path / "lab" / "mine.txt").read_text() == "keep me"


def test_a_folder_not_written_by_gpuconf_is_named_as_given(tmp_path: Path) -> None:
    (tmp_path / "out" / "lab").mkdir(parents=True)
    result = run_cli("render", str(CLUSTERS / "lab.yaml"), "-o", "out", cwd=tmp_path)
    assert result.code == 1
    assert result.err == (
        "gpuconf: out/lab exists and was not written by gpuconf; move it away first\n"
    )


@pytest.mark.parametrize(
    "command",
    [
        ("render", str(CLUSTERS / "lab.yaml")),
        ("schema",),
        ("gitops", "flux", str(CLUSTERS / "lab.yaml"), "--repo", "https://git.example.com/gpu.git"),
    ],
    ids=["render", "schema", "gitops"],
)
def test_an_output_that_cannot_be_written_is_named_as_given(
    tmp_path: Path, command: tuple[str, ...]
) -> None:
    (tmp_path / "taken").write_text("not a folder")
    if command[0] == "gitops":  # the rendered tree its objects point at
        shutil.copytree(RENDERED / "lab", tmp_path / "rendered" / "lab")
    result = run_cli(*command, "-o", "taken/out", cwd=tmp_path)
    assert result.code == 1, result.err
    assert result.err.startswith("gpuconf: cannot write taken/out: "), result.err


@pytest.mark.parametrize(
    "command",
    [
        ("render", str(CLUSTERS / "lab.yaml")),
        ("schema",),
        ("gitops", "flux", str(CLUSTERS / "lab.yaml"), "--repo", "https://git.example.com/gpu.git"),
    ],
    ids=["render", "schema", "gitops"],
)
@pytest.mark.parametrize("where", ["a file", "inside a file"])
def test_an_output_folder_that_cannot_be_made_is_a_user_error_naming_it(
    tmp_path: Path, command: tuple[str, ...], where: str
) -> None:
    (tmp_path / "taken").write_text("not a folder")
    output = tmp_path / "taken" if where == "a file" else tmp_path / "taken" / "out"
    result = run_cli(*command, "-o", str(output))
    assert result.code == 1, result.err
    assert result.err.startswith(f"gpuconf: cannot write {output}: ")
    assert "a file stands where a folder must go" in result.err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["taken"]
    assert (tmp_path / "taken").read_text() == "not a folder"


@pytest.mark.parametrize(
    "argv",
    [
        ("frobnicate",),
        ("render", "--no-such-flag"),
        ("gitops", "argo"),
        ("gitops", "flux"),
        ("explain",),
        ("node",),
        ("node", "check", "--nvml"),
    ],
    ids=lambda argv: " ".join(argv),
)
def test_usage_errors_read_as_one_clean_line(argv: tuple[str, ...]) -> None:
    result = run_cli(*argv)
    assert result.code == 2
    [line] = result.err.splitlines()
    assert line.startswith("gpuconf: ")
    assert "gpuconf: gpuconf" not in line
    assert "--help'" in line


@pytest.mark.parametrize(
    ("argv", "usage"),
    [
        (("render", "--no-such-flag"), "gpuconf render --help"),
        (("validate", "clusters", "--strict"), "gpuconf validate --help"),
        (("node", "check", "--fast"), "gpuconf node check --help"),
    ],
    ids=lambda value: " ".join(value) if isinstance(value, tuple) else None,
)
def test_an_unknown_option_points_at_the_usage_of_its_subcommand(
    argv: tuple[str, ...], usage: str
) -> None:
    result = run_cli(*argv)
    assert result.code == 2
    assert result.err.strip().endswith(f"(see '{usage}')")


def test_a_file_outside_the_working_directory_is_reported_by_its_absolute_path(
    tmp_path: Path,
) -> None:
    outside = tmp_path / "elsewhere" / "cluster.yaml"
    outside.parent.mkdir()
    shutil.copy(BAD, outside)
    working = tmp_path / "work"
    working.mkdir()
    result = run_cli("validate", str(outside), cwd=working)
    assert result.code == 1
    assert result.err.startswith(f"{outside}:"), result.err


def test_a_relative_path_is_reported_as_given(tmp_path: Path) -> None:
    (tmp_path / "team").mkdir()
    shutil.copy(BAD, tmp_path / "team" / "gpus.yaml")
    result = run_cli("validate", "team/gpus.yaml", cwd=tmp_path)
    assert result.err.startswith("team/gpus.yaml:"), result.err


def test_explain_ignores_broken_files_declaring_other_clusters(tmp_path: Path) -> None:
    (tmp_path / "clusters").mkdir()
    shutil.copy(CLUSTERS / "lab.yaml", tmp_path / "clusters" / "lab.yaml")
    shutil.copy(BAD, tmp_path / "clusters" / "over-capacity.yaml")
    (tmp_path / "clusters" / "half-typed.yaml").write_text("metadata: {name: [\n")
    result = run_cli("explain", "lab", cwd=tmp_path)
    assert result.code == 0, result.err
    assert result.out.startswith("cluster lab\n")
    assert result.err == ""
    assert run_cli("validate", cwd=tmp_path).code == 1


def test_explain_still_reports_the_problems_of_the_cluster_it_explains(tmp_path: Path) -> None:
    (tmp_path / "clusters").mkdir()
    shutil.copy(BAD, tmp_path / "clusters" / "team.yaml")
    name = load_yaml(BAD.read_bytes())["metadata"]["name"]
    result = run_cli("explain", name, cwd=tmp_path)
    assert result.code == 1
    assert result.err.startswith("clusters/team.yaml:")


@pytest.mark.parametrize("enabled", [True, False])
def test_a_compile_leaves_the_cycle_collector_as_it_found_it(enabled: bool) -> None:
    was = gc.isenabled()
    (gc.enable if enabled else gc.disable)()
    try:
        assert run_cli("validate", "clusters/lab.yaml", cwd=REPO).code == 0
        assert gc.isenabled() is enabled
        assert gc.get_freeze_count() == 0
    finally:
        (gc.enable if was else gc.disable)()


@pytest.mark.parametrize(
    "command",
    [
        ("validate",),
        ("render", "-o", "{out}"),
        ("render", "--check", "-o", "{out}"),
        ("diff", "-o", "{out}"),
        ("explain", "lab"),
        ("explain", "lab", "--host"),
        ("gitops", "argocd", "--repo", "https://git.example.com/gpu.git", "-o", "{out}"),
    ],
    ids=" ".join,
)
def test_json_format_leaves_stdout_one_json_document_and_the_rest_on_stderr(
    tmp_path: Path, command: tuple[str, ...]
) -> None:
    argv = [part.replace("{out}", str(tmp_path / "out")) for part in command]
    paths = [] if command[0] == "explain" else [str(CLUSTERS / "lab.yaml")]
    result = run_cli(*argv, *paths, "--format", "json", cwd=REPO)
    assert json.loads(result.out) == {"diagnostics": []}
    assert result.code == (1 if "--check" in command else 0)
    text = run_cli(*argv, *paths, cwd=REPO)
    assert result.err == text.out + text.err


@pytest.mark.parametrize("joined", [False, True], ids=["-C DIR", "-CDIR"])
def test_node_commands_run_after_minus_c_with_relative_paths_under_it(
    tmp_path: Path, joined: bool
) -> None:
    (tmp_path / "ready").touch()
    directory = [f"-C{tmp_path}"] if joined else ["-C", str(tmp_path)]
    result = run_cli(*directory, "node", "wait", "ready", "--timeout", "0.2")
    assert result.code == 0, result.err
    assert result.out == f"ready: {tmp_path / 'ready'}\n"


@pytest.mark.parametrize(
    "argv",
    [
        ("render", "LAB", "-o", ""),
        ("diff", "LAB", "-o", ""),
        ("schema", "-o", ""),
        ("gitops", "flux", "LAB", "--repo", "https://example.com/r.git", "-o", ""),
        ("-C", "", "validate", "LAB"),
        ("-C", "", "node", "check", "--help"),
        ("-C=", "node", "check", "--help"),
    ],
    ids=["render-o", "diff-o", "schema-o", "gitops-o", "C", "C-node", "C=-node"],
)
def test_an_empty_folder_argument_is_a_usage_error_not_the_working_folder(
    argv: tuple[str, ...], tmp_path: Path
) -> None:
    """An unset variable (`-o "$OUT"`) would otherwise write into, or run in, the working folder."""
    lab = str(REPO / "clusters" / "lab.yaml")
    result = run_cli(*(lab if arg == "LAB" else arg for arg in argv), cwd=tmp_path)
    assert result.code == 2, result.err
    assert ": an empty path names no folder" in result.err
    assert list(tmp_path.iterdir()) == []
