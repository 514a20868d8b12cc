"""gpuconf's templates run from code compiled ahead of time (templating/compiled/) only where
that code was compiled from the very text, jinja2 and settings at hand; it renders as the
template compiled at run time would, and a failure still names the template's line."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from gpuconf.compiler.templating import engine, jinja_environment
from gpuconf.compiler.templating.check import NotASkeleton, filled_skeleton
from gpuconf.compiler.templating.compile_shipped import compiled_files
from gpuconf.compiler.templating.engine import COMPILED, TemplateFailed, Templates, TemplateSource
from gpuconf.compiler.templating.shipped import shipped_folder

REGENERATE = "run `python -m gpuconf.compiler.templating.compile_shipped`"
QUOTA = "resourcequota.yaml.j2"
VALUES: dict[str, Any] = {
    "meta": {"name": "team-a", "namespace": "team-a", "labels": {"app": "x"}},
    "hard": {"requests.nvidia.com/gpu": "4"},
}


def _runs_compiled(templates: Templates, name: str) -> bool:
    code = templates.template(name).root_render_func.__code__
    return Path(code.co_filename).parent == COMPILED


def test_committed_compiled_templates_equal_the_generated_ones() -> None:
    files = compiled_files()
    assert sorted(p.name for p in COMPILED.iterdir() if p.is_file()) == sorted(files), (
        f"gpuconf/compiler/templating/compiled/ does not match templates/: {REGENERATE}"
    )
    for name, text in files.items():
        assert (COMPILED / name).read_text(encoding="utf-8") == text, (
            f"gpuconf/compiler/templating/compiled/{name} is stale: {REGENERATE}"
        )


def test_shipped_templates_run_from_the_compiled_code() -> None:
    templates = Templates()
    for name in ("_manifest.j2", QUOTA, "node-daemonset.yaml.j2", "readme.md.j2"):
        assert _runs_compiled(templates, name), name


def test_compiled_code_renders_as_the_template_compiled_at_run_time() -> None:
    templates = Templates()
    compiled = templates.render(QUOTA, VALUES)
    environment = templates.environment
    source = (shipped_folder() / QUOTA).read_text(encoding="utf-8")
    assert environment.from_string(source).render(VALUES) == compiled


def test_a_template_changed_since_compiling_is_compiled_from_its_text(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "templates"
    shutil.copytree(shipped_folder(), folder)
    text = (folder / QUOTA).read_text(encoding="utf-8")
    (folder / QUOTA).write_text(text.replace("spec:", "spec:  # changed"), encoding="utf-8")
    monkeypatch.setattr(engine, "shipped_folder", lambda: folder)
    templates = Templates()
    assert not _runs_compiled(templates, QUOTA)
    assert _runs_compiled(templates, "_manifest.j2")
    assert "spec:  # changed" in templates.render(QUOTA, VALUES)


def test_another_jinja2_compiles_every_template_from_its_text(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(jinja_environment, "jinja2_version", "0.0.0")
    templates = Templates()
    assert not _runs_compiled(templates, QUOTA)
    assert not _runs_compiled(templates, "_manifest.j2")


def test_a_failure_in_compiled_code_names_the_template_line() -> None:
    templates = Templates()
    with pytest.raises(TemplateFailed) as failed:
        templates.render(QUOTA, {"meta": VALUES["meta"]})
    assert (failed.value.file, failed.value.line) == (f"templates/{QUOTA}", 10)
    assert _runs_compiled(templates, QUOTA)


def _fill(text: str, values: list[Any], parsed: dict[str, Any]) -> str:
    return filled_skeleton(text, "@t:", values, "", list, parsed)


def test_a_skeleton_is_filled_from_its_parse_whatever_values_it_gets() -> None:
    text = 'a: "@t:0"\nb:\n  - "@t:1"\n  - c\n"@t:2": {d: 1}\n'
    parsed: dict[str, Any] = {}
    assert _fill(text, ["x", {"y": [1]}, "k"], parsed) == _fill(text, ["x", {"y": [1]}, "k"], {})
    assert _fill(text, [1, None, "z"], parsed) == "a: 1\nb:\n- null\n- c\nz:\n  d: 1\n"
    assert list(parsed) == [text]


@pytest.mark.parametrize(
    ("text", "values"),
    [
        ('a: "x@t:0"\n', ["v"]),  # inside a longer string
        ('"@t:0": 1\nb: 2\n', ["b"]),  # a key the skeleton already has
        ('"@t:0": 1\n"@t:1": 2\n', ["k", "k"]),  # a key another token's value repeats
        ('"@t:0": 1\n', [3]),  # a key that is not a string
    ],
)
def test_a_token_that_is_not_a_whole_value_or_key_is_not_a_skeleton(
    text: str, values: list[Any]
) -> None:
    parsed: dict[str, Any] = {}
    for _ in range(2):  # read afresh, then from what was read
        with pytest.raises(NotASkeleton):
            _fill(text, values, parsed)


MANIFEST = (
    'apiVersion: v1\nkind: K\nmetadata:\n  name: "@t:0"\n  labels: "@t:1"\n'
    'spec:\n  items:\n  - "@t:2"\n  - fixed\n  "@t:3": keyed\n  text: "@t:4"\n'
)
LATER: list[list[Any]] = [
    ["b", {}, {"x": [1, {"y": None}]}, "k", "two\nlines\n"],
    ["c", {"z": "1"}, [], "a", "#x"],
    ["d", {"a": "b"}, [{"m": 1}, 2], "zz", ""],
]


def _manifest(text: str, values: list[Any], parsed: dict[str, Any]) -> str:
    chain = [TemplateSource("k.yaml.j2", "templates/k.yaml.j2", text)]
    return filled_skeleton(text, "@t:", values, "K", lambda: chain, parsed)


def test_a_skeleton_s_later_outputs_are_written_into_its_holes_as_the_writer_writes_them() -> None:
    parsed: dict[str, Any] = {}
    _manifest(MANIFEST, ["a", {}, 1, "k", "t"], parsed)
    for values in LATER:
        assert _manifest(MANIFEST, values, parsed) == _manifest(MANIFEST, values, {})
    assert parsed[MANIFEST].holed is not None


@pytest.mark.parametrize(
    ("text", "first", "later"),
    [
        (MANIFEST, ["a", {}, 1, "k", "t"], [3, {}, 1, "k", "t"]),
        ('apiVersion: v1\nkind: K\nmetadata: "@t:0"\n', [{"name": "a"}], [{"labels": {}}]),
        ('apiVersion: v1\nkind: K\nmetadata: "@t:0"\n', [{"name": "a"}], ["a"]),
    ],
)
def test_a_later_output_that_names_no_manifest_is_refused_though_its_skeleton_passed(
    text: str, first: list[Any], later: list[Any]
) -> None:
    parsed: dict[str, Any] = {}
    _manifest(text, first, parsed)
    with pytest.raises(TemplateFailed, match=r"no metadata\.name"):
        _manifest(text, later, parsed)
