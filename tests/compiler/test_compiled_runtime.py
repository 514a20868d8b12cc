"""gpuconf's templates run from their compiled code without jinja2 (templating/compiled_runtime.py)
and write exactly what jinja2's sandbox writes; anything that runtime does not do the way jinja2
does, it leaves to jinja2, which then renders the template or says where it failed."""

from __future__ import annotations

import contextlib
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from builders import CLUSTERS, REPO, cluster_file, compile_example, valid

from gpuconf.compiler.gitops import GitSource, gitops
from gpuconf.compiler.pipeline import compile_paths
from gpuconf.compiler.plan import plan
from gpuconf.compiler.render import render, render_artifact
from gpuconf.compiler.templating.compiled_runtime import (
    BlockReference,
    CompiledEnvironment,
    Context,
    Deferred,
    LoopContext,
    TemplateReference,
    Undefined,
)
from gpuconf.compiler.templating.engine import TemplateFailed, Templates
from gpuconf.compiler.templating.shipped import shipped_names

EXAMPLES = sorted(path.stem for path in CLUSTERS.glob("*.yaml"))
HOSTILE = ["a\nb: c", "---\nkind: Secret", "{{ 7 * 7 }}", "'\"q\"'", "line\u2028sep", "# c"]


class BothWays(Templates):
    """Templates that render each template on the compiled runtime (which must not step aside)
    and with jinja2, and fail unless both write the same text and collect the same tokens."""

    def __init__(self) -> None:
        super().__init__()
        self.compared: set[str] = set()

    def render(self, name: str, values: dict[str, Any]) -> str:
        compiled = self._compiled_environment()
        tokens = self._tokens
        on_compiled = compiled.get_template(name).render(values)
        compiled_tokens = None if tokens is None else tokens[:]
        if tokens is not None:
            del tokens[:]
        by_jinja2 = self.jinja.render(name, values)
        assert on_compiled == by_jinja2, name
        assert compiled_tokens == (None if tokens is None else tokens), name
        self.compared.add(name)
        return by_jinja2


def _hostile(value: Any, index: list[int]) -> Any:
    if isinstance(value, str):
        index[0] += 1
        return HOSTILE[index[0] % len(HOSTILE)]
    if isinstance(value, dict):
        return {key: _hostile(item, index) for key, item in value.items()}
    if isinstance(value, list):
        return [_hostile(item, index) for item in value]
    return value


def test_every_shipped_template_renders_on_the_compiled_runtime_as_jinja2_renders_it() -> None:
    templates = BothWays()
    for name in EXAMPLES:
        compiled = compile_example(name)
        render(plan(compiled.validated[name], f"clusters/{name}.yaml"), templates)
        for agent in ("argocd", "flux"):
            gitops(agent, GitSource("https://git.example/fleet", "main", "rendered"),
                   compiled.rendered, templates)  # fmt: skip
    # Hostile strings in every value, printed in place and as tokens.
    for artifact in plan(valid(cluster_file("fleet")), "clusters/fleet.yaml"):
        hostile = artifact._replace(values=_hostile(artifact.values, [0]), patch_of=None)
        # A value its output's checks refuse fails after the two renders were compared.
        with contextlib.suppress(TemplateFailed):
            render_artifact(hostile, templates)
    kinds = {name for name in shipped_names() if not name.startswith("_")}
    assert sorted(kinds - templates.compared) == []


def test_a_render_without_site_templates_never_loads_jinja2(tmp_path: Path) -> None:
    code = (
        "import sys; from gpuconf.cli import main; "
        f"assert main(['render', 'clusters/lab.yaml', '-o', {str(tmp_path / 'out')!r}]) == 0; "
        "assert 'jinja2' not in sys.modules and 'markupsafe' not in sys.modules, 'jinja2 loaded'"
    )
    subprocess.run([sys.executable, "-c", code], cwd=REPO, check=True, capture_output=True)


def test_a_site_s_templates_are_rendered_by_jinja2(tmp_path: Path) -> None:
    site = REPO / "examples" / "site-templates"
    code = (
        "import sys; from gpuconf.cli import main; "
        f"assert main(['render', 'clusters', '-o', {str(tmp_path / 'out')!r}]) == 0; "
        "assert 'jinja2.sandbox' in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], cwd=site, check=True, capture_output=True)


def test_a_render_the_compiled_runtime_leaves_halfway_keeps_none_of_its_tokens(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    artifacts = plan(valid(cluster_file("fleet")), "clusters/fleet.yaml")
    daemonset = next(a for a in artifacts if a.template == "node-daemonset.yaml.j2")
    first = Templates()
    expected_text, expected_tokens = first._render_skeleton(daemonset.template, daemonset.values)
    lookups = [0]
    getitem = CompiledEnvironment.getitem

    def give_up_on_the_fifth(self: CompiledEnvironment, obj: Any, argument: Any) -> Any:
        lookups[0] += 1
        if lookups[0] == 5:
            raise Deferred("given up")
        return getitem(self, obj, argument)

    monkeypatch.setattr(CompiledEnvironment, "getitem", give_up_on_the_fifth)
    templates = Templates()
    text, tokens = templates._render_skeleton(daemonset.template, daemonset.values)
    assert lookups[0] == 5  # jinja2 rendered it from there on
    # Numbered from 0 again: tokens of the abandoned run would have shifted every number.
    assert text.replace(templates.token_prefix, "@") == expected_text.replace(
        first.token_prefix, "@"
    )
    assert tokens == expected_tokens


def test_a_template_the_compiled_runtime_steps_aside_from_fails_at_its_line_by_jinja2() -> None:
    with pytest.raises(TemplateFailed) as failed:
        Templates().render("resourcequota.yaml.j2", {"meta": {"name": "a", "labels": {}}})
    assert (failed.value.file, failed.value.line) == ("templates/resourcequota.yaml.j2", 10)


def _environment() -> CompiledEnvironment:
    return Templates()._compiled_environment()


@pytest.mark.parametrize("attribute", ["items", "keys", "get", "pop", "update", "__class__"])
def test_a_mapping_s_method_is_left_to_jinja2_s_sandbox(attribute: str) -> None:
    with pytest.raises(Deferred):
        _environment().getattr({"a": 1}, attribute)


def test_an_attribute_is_a_mapping_s_entry_or_undefined() -> None:
    environment = _environment()
    assert environment.getattr({"labels": {"a": "b"}}, "labels") == {"a": "b"}
    assert isinstance(environment.getattr({}, "labels"), Undefined)
    for not_a_mapping in ("text", ["list"], 3, None):
        with pytest.raises(Deferred):
            environment.getattr(not_a_mapping, "labels")


def test_an_item_is_the_value_or_undefined_and_an_attribute_s_name_is_left_to_jinja2() -> None:
    environment = _environment()
    assert environment.getitem({"a": 1}, "a") == 1
    assert environment.getitem([1, 2], 1) == 2
    assert isinstance(environment.getitem({}, "a"), Undefined)
    assert isinstance(environment.getitem([1], 5), Undefined)
    assert isinstance(environment.getitem("text", "a"), Undefined)
    with pytest.raises(Deferred):
        environment.getitem({}, "items")  # jinja2 gives the method
    with pytest.raises(Deferred):
        environment.getitem(Undefined(name="x"), "a")


@pytest.mark.parametrize(
    "use",
    [
        str,
        repr,
        bool,
        len,
        iter,
        lambda u: u == 1,
        lambda u: u["a"],
        lambda u: u.a,
        lambda u: u + "x",
    ],
)
def test_any_use_of_an_undefined_value_is_left_to_jinja2(use: Any) -> None:
    with pytest.raises(Deferred):
        use(Undefined(name="x"))


def test_only_a_block_is_called() -> None:
    environment = _environment()
    context = Context(environment, {}, "t", {"b": lambda context: iter(["x", "y"])})
    block = environment.getattr(TemplateReference(context), "b")
    assert isinstance(block, BlockReference)
    assert environment.call(context, block, _block_vars={}) == "xy"
    for other in (print, str.upper, lambda: 1):
        with pytest.raises(Deferred):
            environment.call(context, other)


def test_a_loop_knows_its_place() -> None:
    seen = [(item, loop.index, loop.first, loop.last) for item, loop in LoopContext("abc", None)]
    assert seen == [("a", 1, True, False), ("b", 2, False, False), ("c", 3, False, True)]
    with pytest.raises(Deferred):
        _environment().getattr(LoopContext([], None), "cycle")


def test_a_template_whose_text_changed_since_compiling_is_left_to_jinja2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from gpuconf.compiler.templating import engine

    folder = tmp_path / "templates"
    folder.mkdir()
    for name in shipped_names():
        (folder / name).write_text(
            (REPO / "templates" / name).read_text(encoding="utf-8"), encoding="utf-8"
        )
    quota = folder / "resourcequota.yaml.j2"
    quota.write_text(quota.read_text().replace("spec:", "spec:  # changed"), encoding="utf-8")
    monkeypatch.setattr(engine, "shipped_folder", lambda: folder)
    templates = Templates()
    environment = templates._compiled_environment()
    with pytest.raises(Deferred):
        environment.get_template("resourcequota.yaml.j2")
    values = {"meta": {"name": "a", "namespace": "a", "labels": {}}, "hard": {"pods": "1"}}
    assert "spec:  # changed" in templates.render("resourcequota.yaml.j2", values)


# Templates beyond gpuconf's own, each feature the compiled runtime implements exercised where
# its result depends on getting jinja2's semantics right.
FEATURES: dict[str, str] = {
    "base.j2": (
        "{% block head %} head {% endblock %}|{{ self.head() | trim | yaml }}|"
        "{{ self.head() | yaml }}|{% block body %}{% endblock %}"
        "{% for x in xs %}{% block item scoped %}<{{ x | yaml }}>{% endblock %}{% endfor %}"
    ),
    "child.j2": (
        '{% extends "base.j2" %}{% block body %}'
        "{% for x in xs %}{{ [loop.index, loop.first, loop.last, loop.length] | yaml }}{% endfor %}"
        "{% for k, v in d | dictsort %}{{ [k, v] | yaml }}{% endfor %}"
        "{% for k, v in d | items %}{{ k | yaml }}{% endfor %}"
        "{% for k, v in e | items %}{{ k | yaml }}{% endfor %}"
        "{% for k, v in nothing | items %}{{ k | yaml }}{% endfor %}{{ s | trim | md }}"
        "{% for x in xs %}{% set w %}{% block inner scoped %}{{ w | yaml }}{% endblock %}"
        "{% endset %}{{ w | trim | md }}{% endfor %}"
        "{{ v | default([]) | yaml }}{{ (v is none) | yaml }}{{ (v is defined) | yaml }}"
        "{{ (u is defined) | yaml }}{{ u | default('d') | yaml }}"
        "{% set t %}  {{ v | yaml }} {% endset %}{{ t | trim | yaml }}"
        "{{ ('a' ~ n) | md }}{{ (n == 1 or not xs) | yaml }}"
        '{% include "part.j2" %}{% endblock %}'
        "{% block item scoped %}[{{ x | yaml }}]{% endblock %}"
    ),
    "part.j2": "({{ d | yaml }})\n",
}
FALSY_AND_NOT: list[Any] = [None, "", 0, [], {}, False, "x", [0], 2]


def _both_runtimes(sources: dict[str, str]) -> tuple[Any, CompiledEnvironment]:
    """jinja2's sandbox with `sources` as its templates, and the compiled runtime holding the
    code jinja2 compiles them to, as compile_shipped writes it for gpuconf's own."""
    from jinja2 import DictLoader

    from gpuconf.compiler.templating.compile_shipped import _runtime_from_environment
    from gpuconf.compiler.templating.compiled_runtime import CompiledTemplate

    templates = Templates()
    sandbox = templates.environment.overlay(loader=DictLoader(sources))
    compiled = templates._compiled_environment()
    for name, source in sources.items():
        code = _runtime_from_environment(sandbox.compile(source, name, name, raw=True))
        compiled._templates[name] = CompiledTemplate(compiled, name, compile(code, name, "exec"))
    return sandbox, compiled


@pytest.mark.parametrize("v", FALSY_AND_NOT)
@pytest.mark.parametrize("xs", [[], ["a"], ["a", "b", "c"]])
def test_the_compiled_runtime_renders_what_jinja2_renders(v: Any, xs: list[str]) -> None:
    sandbox, compiled = _both_runtimes(FEATURES)
    values = {
        "xs": xs,
        "v": v,
        "n": 1 if xs else "1",
        "d": {"b": 1, "A": 2, "a": 3, "B": 4},
        "e": {},
    }
    values |= {"s": "\t x \n", "w": "outer"}
    by_jinja2 = sandbox.get_template("child.j2").render(values)
    assert compiled.get_template("child.j2").render(values) == by_jinja2
    assert (" head " in by_jinja2 and "[" in by_jinja2) or not xs


@pytest.mark.parametrize(
    "source",
    [
        "{{ (namespace is defined) | yaml }}",  # jinja2's globals
        "{{ range | default('d') | yaml }}",
        "{% for x in [1] %}{{ loop | md }}{% endfor %}",  # its runtime objects, printed
        "{{ self | md }}",
        "{{ [m.z] | md }}",
        "{{ m.z | md }}",
        "{% block __init__ %}x{% endblock %}{{ self.__init__() | trim | yaml }}",  # refused
        "{% set top = 1 %}{{ top | yaml }}",  # a top-level set
        "{% macro f() %}x{% endmacro %}{{ f() | trim | yaml }}",
    ],
)
def test_what_jinja2_resolves_or_prints_its_own_way_is_left_to_it(source: str) -> None:
    _, compiled = _both_runtimes({"t.j2": source})
    with pytest.raises(Deferred):
        compiled.get_template("t.j2").render({"m": {}})


def test_compiled_code_is_taken_for_the_text_it_was_compiled_from_only() -> None:
    index = Templates().index
    name = "namespace.yaml.j2"
    text = (REPO / "templates" / name).read_text(encoding="utf-8")
    assert index.holds(name)
    assert index.holds(name, text)
    assert not index.holds(name, text + "{# edited #}")
    assert not index.holds("not-a-template.yaml.j2")


def test_with_site_templates_only_the_chains_a_site_s_file_stands_in_are_left_to_jinja2(
    tmp_path: Path,
) -> None:
    site = tmp_path / "templates"
    site.mkdir()
    (site / "node-daemonset.yaml.j2").write_text(
        '{% extends "gpuconf/node-daemonset.yaml.j2" %}', encoding="utf-8"
    )
    (site / "_argocd-application-spec.j2").write_text("{{ 1 | yaml }}", encoding="utf-8")
    templates = Templates(site)
    compiled = templates._compiled_environment()
    for own in ("namespace.yaml.j2", "setup-daemonset.yaml.j2", "argocd-applicationset.yaml.j2"):
        compiled.get_template(own)
    with pytest.raises(Deferred):
        compiled.get_template("node-daemonset.yaml.j2")
    # An include a site's file answers for: left to jinja2 when the including template runs.
    with pytest.raises(Deferred):
        compiled.get_template("_argocd-application-spec.j2")


def test_a_site_s_cluster_renders_gpuconf_s_own_templates_on_the_compiled_runtime(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from gpuconf.compiler.templating.jinja_environment import JinjaTemplates

    by_jinja2: list[str] = []
    render_by_jinja2 = JinjaTemplates.render

    def counted(self: JinjaTemplates, name: str, values: dict[str, Any]) -> str:
        by_jinja2.append(name)
        return render_by_jinja2(self, name, values)

    monkeypatch.setattr(JinjaTemplates, "render", counted)
    site = REPO / "examples" / "site-templates"
    compiled = compile_paths([site / "clusters"], relative_to=REPO)
    assert compiled.ok
    assert sorted(set(by_jinja2)) == ["node-daemonset.yaml.j2"]
    [(name, tree)] = compiled.rendered.items()
    for path, written in tree.items():
        assert (site / "rendered" / name / path).read_bytes() == written, path
