"""The skeleton memo: a template runs once for artifacts that differ only in values it prints
whole, and what that leaves out of the key can never change an output."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
from builders import CLUSTERS, EXAMPLES, REPO, NoMemo, site_block
from jinja2 import Environment

from gpuconf.compiler.pipeline import compile_paths
from gpuconf.compiler.plan import plan
from gpuconf.compiler.plan.artifact import Artifact
from gpuconf.compiler.render import render
from gpuconf.compiler.templating.engine import Templates
from gpuconf.compiler.templating.printed_values import ValuePath, analyse_chain
from gpuconf.compiler.templating.skeleton_memo import (
    Derived,
    SkeletonMemo,
    StandIn,
    _filled,
    filled_tokens,
)

_PARSER = Environment()


def _printed(*sources: str) -> set[ValuePath] | None:
    """The printed-only paths; None where the chain may not be rendered as a skeleton."""
    found = analyse_chain(_PARSER.parse(source) for source in sources)
    return set(found.printed_only) if found.skeleton else None


@pytest.mark.parametrize("example", EXAMPLES)
def test_every_cluster_renders_the_same_bytes_with_and_without_the_memo(example: str) -> None:
    compiled = compile_paths([CLUSTERS / f"{example}.yaml"], relative_to=REPO, render_output=False)
    artifacts = plan(compiled.validated[example], f"clusters/{example}.yaml")
    assert render(artifacts, Templates()) == render(artifacts, NoMemo())


def _namespace(name: str, team: str = "a") -> Artifact:
    # No label another program reads: the site templates below write labels as they like
    # (templating/check.py holds a site's template to those).
    labels = {"team": team}
    return Artifact(
        f"namespaces/{name}.yaml",
        "namespace.yaml.j2",
        {"meta": {"name": name, "labels": labels}},
        kind="Namespace",
    )


def test_namespaces_that_differ_only_in_name_run_the_template_once_after_the_first() -> None:
    templates = Templates()
    tree = render([_namespace(f"team-{n}") for n in range(5)], templates)
    memo = templates.memos["namespace.yaml.j2"]
    assert memo is not None
    # The first is the memo's one miss; the rest hit.
    assert (memo.misses, memo.hits) == (1, 4)
    for n in range(5):
        assert f"name: team-{n}\n".encode() in tree[f"namespaces/team-{n}.yaml"]


def test_a_value_the_memo_keys_on_still_shapes_each_output() -> None:
    templates = Templates()
    tree = render([_namespace("x", team="a"), _namespace("y", team="b")], templates)
    assert b"team: a\n" in tree["namespaces/x.yaml"]
    assert b"team: b\n" in tree["namespaces/y.yaml"]


def test_an_override_that_branches_on_a_printed_value_renders_each_artifact_by_its_own(
    tmp_path: Path,
) -> None:
    site_block(
        tmp_path,
        "namespace.yaml.j2",
        "body",
        '{% if meta["name"] == "special" %}\nspec:\n  finalizers: [kubernetes]\n{% endif %}',
    )
    templates = Templates(tmp_path)
    names = ["plain-1", "special", "plain-2", "plain-3"]
    tree = render([_namespace(n) for n in names], templates)
    assert [b"finalizers" in tree[f"namespaces/{n}.yaml"] for n in names] == [
        False,
        True,
        False,
        False,
    ]


def test_a_printed_value_is_left_out_of_the_key_only_where_nothing_else_reads_it() -> None:
    assert _printed('{{ meta["name"] | yaml }}') == {("meta", "name")}
    assert _printed("{{ meta.name | yaml }}{{ hard | yaml }}") == {("meta", "name"), ("hard",)}
    # Read in a test, a loop or another filter: the value is part of the key.
    assert _printed('{% if meta["name"] == "a" %}x{% endif %}{{ meta["name"] | yaml }}') == set()
    assert _printed("{% for x in items %}{{ x | yaml }}{% endfor %}{{ items | yaml }}") == {("x",)}
    assert _printed("{{ name | lower | yaml }}") == set()
    # Printed whole and looked into: neither part is left out.
    assert _printed('{{ meta | yaml }}{{ meta["name"] | yaml }}') == set()
    # A method is not a key: `x.items` reads the whole mapping.
    assert _printed("{{ x | yaml }}{% for k in x.items() %}{% endfor %}") == set()


def test_presence_tests_keep_a_value_out_of_the_key_but_not_what_contains_it() -> None:
    assert _printed(
        '{% if meta["namespace"] is defined %}{{ meta["namespace"] | yaml }}{% endif %}'
    ) == {("meta", "namespace")}
    assert (
        _printed('{% if meta["name"]["x"] is defined %}{% endif %}{{ meta["name"] | yaml }}')
        == set()
    )


def test_a_site_block_branching_on_a_container_renders_each_daemonset_by_its_own(
    tmp_path: Path,
) -> None:
    site_block(
        tmp_path,
        "node-daemonset.yaml.j2",
        "container_image",
        '{% if container["image"] == "registry.example/special:1" %}'
        '{{ "mirror.example/special:1" | yaml }}'
        '{% else %}{{ container["image"] | yaml }}{% endif %}',
    )
    compiled = compile_paths([CLUSTERS / "fleet.yaml"], relative_to=REPO, render_output=False)
    [first, *_] = [
        a
        for a in plan(compiled.validated["fleet"], "clusters/fleet.yaml")
        if a.template == "node-daemonset.yaml.j2"
    ]
    special = copy.deepcopy(first.values)
    special["container_groups"][-1][1][0]["image"] = "registry.example/special:1"
    artifacts = [first, first._replace(path="special.yaml", values=special)]
    tree = render(artifacts, Templates(tmp_path))
    assert b"mirror.example/special:1" not in tree[first.path]
    assert b"mirror.example/special:1" in tree["special.yaml"]
    assert tree == render(artifacts, NoMemo(tmp_path))


@pytest.mark.parametrize(
    "source",
    [
        "{% set x %}{{ name | yaml }}{% endset %}{{ x | yaml }}",
        "{% macro m() %}{{ name | yaml }}{% endmacro %}",
        "{% block labels %}{{ name | yaml }}{% endblock %}"
        "{{ meta | with_entries(self.labels()) | yaml }}",
        "{{ name | yaml | length }}",
        "{{ (name | yaml) ~ '' }}",
    ],
)
def test_a_chain_that_uses_an_encoded_value_as_text_is_rendered_in_place(source: str) -> None:
    # A skeleton's `| yaml` writes a token: text captured from it would hold the token.
    assert _printed(source) is None


def test_text_captured_from_an_encoded_value_is_the_value(tmp_path: Path) -> None:
    (tmp_path / "namespace.yaml.j2").write_text(
        "{% set shown %}{{ meta.name | yaml }}{% endset %}"
        "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {{ meta.name | yaml }}\n"
        '{% if shown == \'"special"\' %}\n  labels: {special: "yes"}\n{% endif %}\n'
    )
    tree = render([_namespace("plain"), _namespace("special")], Templates(tmp_path))
    assert b"special: " not in tree["namespaces/plain.yaml"]
    assert b"special: " in tree["namespaces/special.yaml"]


def test_a_constant_a_site_template_encodes_is_its_own_value_in_every_output(
    tmp_path: Path,
) -> None:
    # jinja2 folds `"fixed" | yaml` while it compiles the template, which the first render
    # does while it collects that render's tokens: folded, the token would be baked in.
    (tmp_path / "namespace.yaml.j2").write_text(
        "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {{ meta.name | yaml }}\n"
        '  labels:\n    constant: {{ "fixed" | yaml }}\n'
        "    team: {{ meta.labels.team | lower | yaml }}\n"
    )
    tree = render([_namespace("x", team="a"), _namespace("y", team="b")], Templates(tmp_path))
    assert b"constant: fixed\n" in tree["namespaces/x.yaml"]
    assert b"constant: fixed\n" in tree["namespaces/y.yaml"]


def test_a_file_with_two_extends_reads_whichever_parent_it_takes(tmp_path: Path) -> None:
    (tmp_path / "namespace.yaml.j2").write_text(
        '{% if meta.labels.team == "a" %}{% extends "gpuconf/namespace.yaml.j2" %}'
        '{% else %}{% extends "fancy.j2" %}{% endif %}\n'
    )
    (tmp_path / "fancy.j2").write_text(
        "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {{ meta.name | yaml }}\n"
        '{% if meta.name == "special" %}\n  labels: {special: "yes"}\n{% endif %}\n'
    )
    names = ["x", "y", "special"]
    tree = render([_namespace(n, team="b") for n in names], Templates(tmp_path))
    assert [b"special: " in tree[f"namespaces/{n}.yaml"] for n in names] == [False, False, True]


@pytest.mark.parametrize(
    "source",
    [
        '{% include "other.j2" %}',
        '{% import "macros.j2" as m %}',
        '{% from "macros.j2" import m %}',
        "{% extends parent %}",
        "{% block b %}{{ super() }}{% endblock %}",
        "{{ self | yaml }}",
    ],
)
def test_a_template_reaching_outside_its_chain_gets_no_memo(source: str) -> None:
    assert _printed(source) is None


def test_stand_ins_leave_the_artifacts_values_untouched() -> None:
    memo = SkeletonMemo([("meta", "name"), ("hard",), ("missing", "x")])
    values: dict[str, Any] = {"meta": {"name": "q", "labels": {"a": "b"}}, "hard": {"x": "1"}}
    reduced = memo.stand_ins(values)
    assert values == {"meta": {"name": "q", "labels": {"a": "b"}}, "hard": {"x": "1"}}
    assert isinstance(reduced["meta"]["name"], StandIn)
    assert isinstance(reduced["hard"], StandIn)
    assert reduced["meta"]["labels"] is values["meta"]["labels"]
    assert "missing" not in reduced


def _merged(base: dict[str, str], extra: str) -> dict[str, str]:
    if extra == "refuse":
        raise ValueError("refused")
    return {**base, "x": extra}


def test_filled_tokens_are_each_tokens_own_filling() -> None:
    values: dict[str, Any] = {
        "meta": {"name": "q", "labels": {"a": "b"}},
        "hard": {"x": "1"},
        "pod": {"containers": [{"name": "c"}]},
    }
    labels = StandIn(("meta", "labels"))
    tokens = [
        StandIn(("meta", "name")),
        labels,
        StandIn(("hard",)),
        StandIn(("pod", "containers")),
        Derived(_merged, (labels, "y")),
        {"constant": [1]},
        "text",
    ]
    filled = filled_tokens(tokens, values)
    assert filled == [_filled(token, values) for token in tokens]
    assert filled[:4] == ["q", {"a": "b"}, {"x": "1"}, [{"name": "c"}]]
    assert filled[1] is values["meta"]["labels"]
    assert filled[4] == {"a": "b", "x": "y"}
    with pytest.raises(ValueError, match="refused"):
        filled_tokens([Derived(_merged, (labels, "refuse"))], values)
    with pytest.raises(KeyError):
        filled_tokens([StandIn(("meta", "namespace"))], values)


_PLAIN = (str, int, float, bool, type(None), dict, list, tuple)


def _plain(value: object) -> bool:
    if isinstance(value, dict):
        return all(type(k) is str and _plain(v) for k, v in value.items())
    if isinstance(value, list | tuple):
        return all(_plain(v) for v in value)
    return type(value) in _PLAIN


@pytest.mark.parametrize("example", EXAMPLES)
def test_every_artifacts_values_are_plain_data_whose_repr_tells_them_apart(example: str) -> None:
    compiled = compile_paths([CLUSTERS / f"{example}.yaml"], relative_to=REPO, render_output=False)
    for artifact in plan(compiled.validated[example], f"clusters/{example}.yaml"):
        assert _plain(artifact.values), artifact.path
