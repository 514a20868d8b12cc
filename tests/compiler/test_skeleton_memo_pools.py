"""The skeleton memo across a fleet's pools: values printed through a derivable filter (labels,
selectors, tolerations) and mappings iterated only for their keys (a pod spec's entries) stand
in, so a pool's DaemonSets run their template once per shape, and every output, refusal and
diagnostic stays what rendering each artifact in place gives."""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
from builders import site_block
from jinja2 import Environment
from many_pools import many_pools

from gpuconf.compiler.pipeline import compile_paths
from gpuconf.compiler.plan import plan
from gpuconf.compiler.render import render
from gpuconf.compiler.templating.chain_analysis import DERIVABLE_FILTERS, ChainAnalysis
from gpuconf.compiler.templating.engine import Templates
from gpuconf.compiler.templating.filters import FILTERS
from gpuconf.compiler.templating.printed_values import analyse_chain
from gpuconf.compiler.templating.skeleton_memo import SkeletonMemo

_PARSER = Environment()


def _analysis(*sources: str) -> ChainAnalysis:
    return analyse_chain(_PARSER.parse(source) for source in sources)


def test_values_printed_through_a_derivable_filter_stand_in_with_the_filters_values() -> None:
    found = _analysis(
        "{{ labels | with_labels(self.extra(), selector) | yaml }}{{ selector | yaml }}"
        "{% block extra %}{% endblock %}"
    )
    assert {("labels",), ("selector",)} <= found.printed_only
    # An argument that is not a value is read: part of the key.
    assert ("team",) not in _analysis('{{ x | with_items(team ~ "") | yaml }}').printed_only
    # The filter's result used any other way: the value shapes the output.
    assert (
        _analysis(
            '{% if labels | with_labels("") %}x{% endif %}{{ labels | with_labels("") | yaml }}'
        ).printed_only
        == frozenset()
    )
    # Not a derivable filter (`default` reads whether the value is there).
    assert _analysis('{{ x | default("") | yaml }}').printed_only == frozenset()


def test_a_mapping_iterated_only_for_its_keys_keeps_its_keys_in_the_key() -> None:
    loop = "{% for k, v in pod | with_pod_entries(self.b(), groups) | items %}"
    body = "{{ k | yaml }}: {{ v | yaml }}{% endfor %}{% block b %}{% endblock %}"
    found = _analysis(loop + body)
    assert found.keys_only == {("pod",)}
    assert ("groups",) not in found.printed_only  # the filter's other argument is read
    assert _analysis("{% for k, v in m | dictsort %}{{ v | yaml }}{% endfor %}").keys_only == {
        ("m",)
    }
    for reads_a_value in [
        '{% for k, v in m | items %}{% if v == "a" %}x{% endif %}{% endfor %}',
        "{% for k, v in m | items %}{{ loop.previtem | yaml }}{% endfor %}",
        "{% for k, v in m | items %}{% if loop.changed(k) %}x{% endif %}{% endfor %}",
        "{% for k, v in m | dictsort(by='value') %}{{ v | yaml }}{% endfor %}",
        "{% for k, v in m | items %}{{ v | yaml }}{% endfor %}{{ m | length | yaml }}",
        "{% for k, v in m | items %}{{ v | yaml }}{% endfor %}{{ m.x | yaml }}",
        "{% for k, v in m | items %}{{ v | yaml }}{% endfor %}{% if m.x is defined %}{% endif %}",
        "{% for k, v in m | with_labels('') | items %}{{ v | yaml }}{% endfor %}",
    ]:
        assert _analysis(reads_a_value).keys_only == frozenset(), reads_a_value


@pytest.mark.parametrize("name", sorted(DERIVABLE_FILTERS))
def test_a_derivable_filter_returns_its_value_itself_where_its_block_is_empty(name: str) -> None:
    # skeleton_memo.derivable relies on it: a stand-in passes through an empty block.
    value: Any = ["a"] if name == "with_items" else {"a": "b"}
    extra = ([("containers", [])],) if name == "with_pod_entries" else ()
    assert FILTERS[name](value, " \n", *extra) is value


def test_keys_tell_apart_data_that_compare_equal_and_ignore_what_stands_in() -> None:
    memo = SkeletonMemo([("meta", "name"), ("meta", "labels")], keys_only=[("pod",)])

    def key(**values: Any) -> Any:
        return memo.key({"meta": {"name": "a", "labels": {"x": "1"}}, **values})

    kept = [1, True, 1.0, "1", b"1", 0.0, -0.0, [1], (1,), {"a": 1}, {1: "a"}, None]
    kept += [Fraction(1, 2), Fraction(1, 3), [Fraction(1, 2)]]  # not plain data: by repr
    assert len({key(x=value) for value in kept}) == len(kept)
    assert len({key(pod={k: 1}) for k in (1, True, "1", 1.0)}) == 4
    assert key(pod={"a": 1, "b": 2}) == key(pod={"a": [3], "b": {}})
    assert key(pod={"a": 1, "b": 2}) != key(pod={"b": 2, "a": 1})
    assert memo.key({"meta": {"name": "a"}}) == memo.key({"meta": {"name": ["b"]}})
    assert memo.key({"meta": {"name": "a"}}) != memo.key({"meta": {"name": "a", "x": 1}})
    assert memo.key({"meta": {"name": "a"}}) != memo.key({"meta": {}})
    assert memo.key({"meta": {"name": "a"}}) != memo.key({"meta": "x"})


def _pools_cluster(folder: Path) -> Path:
    data = many_pools(mig_pools=2, plain_pools=5)
    file = folder / "many.yaml"
    file.write_text(json.dumps(data), encoding="utf-8")
    return file


def _compiled(file: Path, site: Path | None) -> tuple[list[str], dict[str, Any]]:
    compiled = compile_paths([file], relative_to=file.parent, templates=site)
    return [d.as_text() for d in compiled.diagnostics], compiled.rendered


def _without_memo(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(Templates, "_memo", lambda self, name: None)


_SITE_BLOCKS = [
    ("node-daemonset.yaml.j2", "pod_labels", "team: ml"),
    ("node-daemonset.yaml.j2", "extra_labels", "site: lab"),
    ("node-daemonset.yaml.j2", "extra_annotations", "site.example/owner: ml"),
    ("setup-daemonset.yaml.j2", "extra_tolerations", "- {key: x, operator: Exists}"),
    ("node-daemonset.yaml.j2", "pod_spec", "priorityClassName: high"),
    ("node-daemonset.yaml.j2", "container_env", "- {name: SITE, value: lab}"),
    ("namespace.yaml.j2", "extra_labels", "team: ml"),
    # Refused: for every pool but the first (the memo's first artifact passes; those after it
    # refuse as their derived labels are worked out), for all, or by the block's keys alone.
    ("node-daemonset.yaml.j2", "pod_labels", "gpuconf.dev/pool: h100-0"),
    ("node-daemonset.yaml.j2", "pod_labels", "gpuconf.dev/pool: other"),
    ("node-daemonset.yaml.j2", "extra_labels", "app.kubernetes.io/managed-by: someone"),
    ("node-daemonset.yaml.j2", "pod_spec", "tolerations: []"),
    ("node-daemonset.yaml.j2", "extra_tolerations", "key: not-a-list"),
]


@pytest.mark.parametrize(("template", "block", "text"), _SITE_BLOCKS)
def test_a_site_block_over_many_pools_renders_and_refuses_as_without_the_memo(
    template: str, block: str, text: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    site = tmp_path / "site"
    site.mkdir()
    site_block(site, template, block, text)
    file = _pools_cluster(tmp_path)
    with_memo = _compiled(file, site)
    _without_memo(monkeypatch)
    assert with_memo == _compiled(file, site)


def test_the_refusal_after_a_memoised_pool_is_the_one_rendering_in_place_gives(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    site = tmp_path / "site"
    site.mkdir()
    site_block(site, "node-daemonset.yaml.j2", "pod_labels", "gpuconf.dev/pool: h100-0")
    file = _pools_cluster(tmp_path)
    diagnostics, rendered = _compiled(file, site)
    assert not rendered
    [refusal] = diagnostics
    assert "templates/node-daemonset.yaml.j2" in refusal or "site/node-daemonset" in refusal
    assert "gpuconf.dev/pool" in refusal
    _without_memo(monkeypatch)
    assert _compiled(file, site) == (diagnostics, rendered)


def test_gpuconf_s_templates_render_each_pool_as_without_the_memo(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    file = _pools_cluster(tmp_path)
    with_memo = _compiled(file, None)
    assert with_memo[1]
    _without_memo(monkeypatch)
    assert with_memo == _compiled(file, None)


def test_pools_that_differ_in_names_labels_and_selectors_run_the_template_once(
    tmp_path: Path,
) -> None:
    file = tmp_path / "plain.yaml"
    file.write_text(json.dumps(many_pools(mig_pools=0, plain_pools=6)), encoding="utf-8")
    compiled = compile_paths([file], relative_to=tmp_path, render_output=False)
    templates = Templates()
    render(plan(compiled.validated["many"], "plain.yaml"), templates)
    memo = templates.memos["node-daemonset.yaml.j2"]
    assert memo is not None
    assert (memo.misses, memo.hits) == (1, 5)
