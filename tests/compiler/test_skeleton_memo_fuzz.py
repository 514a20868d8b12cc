"""The skeleton memo against rendering in place, on random site templates: each template is a
few snippets that read values in the ways a site's template may (conditions, loops and their
`loop` variable, filters, macros, blocks, `with`, `namespace()`, presence tests), rendered for a
dozen artifacts with and without the memo. Any difference is output the memo got wrong."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest
from builders import NoMemo

from gpuconf.compiler.plan.artifact import Artifact
from gpuconf.compiler.render import render
from gpuconf.compiler.templating.engine import Templates

# Each reads `meta`, `cs` (a list of mappings), `m` and `labels` (mappings) or `pairs`; {K} is
# the output key it writes under.
_SNIPPETS = [
    "{K}: {{ meta.name | yaml }}\n",
    '{% if meta.name == "special" %}{K}: {{ "s" | yaml }}\n{% endif %}',
    "{K}:\n{% for c in cs %}  - {{ c.name | yaml }}\n{% endfor %}",
    '{K}:\n{% for c in cs %}{% if c.name == "special" %}  - {{ "s" | yaml }}\n{% endif %}{% endfor %}',
    "{K}:\n{% for k, v in m | dictsort %}  {{ k | yaml }}: {{ v | yaml }}\n{% endfor %}",
    '{K}:\n{% for c in cs %}{% if loop.previtem is defined and loop.previtem.name == "special" %}  - {{ "after" | yaml }}\n{% endif %}{% endfor %}',
    '{K}: {{ labels | with_entries("") | yaml }}\n',
    '{K}: {{ labels | with_entries("extra: 1") | yaml }}\n',
    '{% with x = meta.name %}{% if x == "special" %}{K}: 1\n{% endif %}{% endwith %}',
    '{% set ns = namespace(f=false) %}{% for c in cs %}{% if c.name == "special" %}{% set ns.f = true %}{% endif %}{% endfor %}{% if ns.f %}{K}: 1\n{% endif %}',
    "{K}: {{ cs | yaml }}\n",
    "{K}: {{ m | yaml }}\n",
    "{% if cs | length > 1 %}{K}: 1\n{% endif %}",
    '{K}:\n{% for c in cs %}  - {{ loop.cycle("a", "b") | yaml }}\n{% endfor %}',
    "{K}:\n{% for c in cs %}{% if loop.changed(c.name) %}  - {{ c.name | yaml }}\n{% endif %}{% endfor %}",
    "{% if meta.name is string %}{K}: 1\n{% endif %}",
    "{% if m.x is defined %}{K}: {{ m.x | yaml }}\n{% endif %}",
    '{K}:\n{% for c in cs %}  - {{ c | yaml }}\n{% else %}  - {{ "none" | yaml }}\n{% endfor %}',
    '{% macro sp{K}(x) %}{% if x == "special" %}yes{% else %}no{% endif %}{% endmacro %}{K}: {{ sp{K}(meta.name) | yaml }}\n',
    '{K}: {{ (meta.name if meta.team else "x") | yaml }}\n',
    '{% block b{K} %}{% if meta.name == "special" %}{K}: 1\n{% endif %}{% endblock %}',
    "{K}:\n{% for c in cs %}{% for c in c.tags %}  - {{ c | yaml }}\n{% endfor %}{% endfor %}",
    '{K}:\n{% for c in cs %}{% for t in c.tags %}{% if t == "special" %}  - {{ c.name | yaml }}\n{% endif %}{% endfor %}{% endfor %}',
    '{K}: {{ cs[0].name | default("x") | yaml }}\n',
    '{K}: {{ m | with_items("") | yaml }}\n',
    '{K}:\n{% for k, v in m | items %}{% if v == "special" %}  - {{ k | yaml }}\n{% endif %}{% endfor %}',
    "{K}:\n{% for k in m %}  - {{ k | yaml }}\n{% endfor %}",
    '{K}:\n{% for k in m %}{% if m[k] == "special" %}  - {{ k | yaml }}\n{% endif %}{% endfor %}',
    '{K}:\n{% for c in cs %}{% set c = meta %}{% if c.name == "special" %}  - 1\n{% endif %}{% endfor %}',
    '{% set name = meta.name %}{% if name == "special" %}{K}: 1\n{% endif %}',
    "{K}:\n{% for c in cs %}  - {{ c.tags | yaml }}\n{% endfor %}",
    "{K}:\n{% for c in cs %}{% if c.tags %}  - {{ c.name | yaml }}\n{% endif %}{% endfor %}",
    "{K}:\n{% for c in cs %}  - [{{ c.name | yaml }}, {{ loop.index | yaml }}, {{ loop.length | yaml }}]\n{% endfor %}",
    "{K}: {{ meta | yaml }}\n",
    '{K}:\n{% for c in cs if c.name != "special" %}  - {{ c.name | yaml }}\n{% endfor %}',
    "{K}:\n{% for c in cs | reverse %}  - {{ c.name | yaml }}\n{% endfor %}",
    "{K}:\n{% for a, b in pairs %}  - {{ b | yaml }}\n{% endfor %}",
    '{K}:\n{% for a, b in pairs %}{% if a == "special" %}  - {{ b | yaml }}\n{% endif %}{% endfor %}',
    '{K}:\n{% for a, b in pairs %}{% if b == "special" %}  - {{ a | yaml }}\n{% endif %}{% endfor %}',
    '{K}: {{ meta.team | default("t") | yaml }}\n',
    "{K}: {{ [meta.name] | yaml }}\n",
    "{K}:\n{% for c in cs %}{% if c is mapping %}  - {{ c.name | yaml }}\n{% endif %}{% endfor %}",
    "{K}:\n{% for c in cs %}{% if c.name is none %}  - 1\n{% endif %}{% endfor %}",
    "{K}:\n{% for meta in cs %}  - {{ meta.name | yaml }}\n{% endfor %}",
    "{% if meta.team is defined %}{K}: {{ meta.team | yaml }}\n{% endif %}",
    "{K}:\n{% for k, v in labels | items %}  - {{ v | yaml }}\n{% endfor %}",
    '{K}:\n{% for k, v in labels | items %}{% if k == "special" %}  - {{ v | yaml }}\n{% endif %}{% endfor %}',
    '{K}:\n{% for c in cs %}{% with d = c %}{% if d.name == "special" %}  - 1\n{% endif %}{% endwith %}{% endfor %}',
    "{K}:\n{% for c in cs %}  - {{ c.name | default(c.tags) | yaml }}\n{% endfor %}",
    '{% set x = cs %}{K}:\n{% for c in x %}{% if c.name == "special" %}  - 1\n{% endif %}{% endfor %}',
    "{K}:\n{% for c in cs %}{% if loop.nextitem is defined %}  - {{ loop.nextitem.name | yaml }}\n{% endif %}{% endfor %}",
    '{K}:\n{% for c in cs %}{% for t in c.tags %}{% if c.name == "special" %}  - {{ t | yaml }}\n{% endif %}{% endfor %}{% endfor %}',
    "{K}:\n{% for c in cs %}{% for d in cs %}{% if c.name == d.name %}  - 1\n{% endif %}{% endfor %}{% endfor %}",
    '{K}:\n{% for k, v in labels | with_entries("special: z") | items %}{% if v == "z" %}  - {{ k | yaml }}\n{% endif %}{% endfor %}',
    '{K}:\n{% for k, v in labels | with_entries("special: z") | items %}  - {{ v | yaml }}\n{% endfor %}',
    "{% if cs[0].name is defined %}{K}: {{ cs[0].name | yaml }}\n{% endif %}",
    "{K}: {{ cs[0] | yaml }}\n",
    "{K}:\n{% for c in cs %}{% if c.name is defined %}  - {{ c.name | yaml }}\n{% endif %}{% endfor %}",
    '{K}:\n{% for c in cs %}  - {{ c.tags | with_items("- q") | yaml }}\n{% endfor %}',
    '{K}:\n{% for c in cs %}{% for t in c.tags | with_items("- special") %}{% if t == "special" %}  - {{ loop.index | yaml }}\n{% endif %}{% endfor %}{% endfor %}',
    "{K}:\n{% for c in cs %}{% if loop.first %}  - {{ c | yaml }}\n{% endif %}{% endfor %}",
    "{K}:\n{% for x in cs %}{% for c in cs %}  - {{ c.name | yaml }}\n{% endfor %}{% endfor %}",
    "{K}: {{ pairs | yaml }}\n",
    "{K}:\n{% for p in pairs %}  - {{ p[0] | yaml }}\n{% endfor %}",
    '{K}:\n{% for p in pairs %}{% if p[1] == "special" %}  - {{ p[0] | yaml }}\n{% endif %}{% endfor %}',
    "{K}:\n{% for k, v in m | dictsort %}{% if loop.changed(v) %}  - {{ k | yaml }}\n{% endif %}{% endfor %}",
    "{K}:\n{% for c in cs %}{% set ns = namespace(t=c.tags) %}{% if ns.t %}  - 1\n{% endif %}{% endfor %}",
    '{K}: {{ meta.team | default("none", true) | yaml }}\n',
    '{K}:\n{% for k, v in labels | dictsort | default([]) %}{% if v == "special" %}  - {{ k | yaml }}\n{% endif %}{% endfor %}',
    '{K}:\n{% for meta in cs %}{% block u{K} %}{% if meta.name == "special" %}  - 1\n{% endif %}{% endblock %}{% endfor %}',
    # Through a derivable filter, which the memo works out again for each artifact (refusing
    # some: a selector's label changed, a block that is not YAML entries), and mappings
    # iterated for their keys.
    '{K}: {{ labels | with_labels("") | yaml }}\n',
    '{K}: {{ labels | with_labels("x: special", m) | yaml }}\n',
    '{K}: {{ m | with_labels("team: special") | yaml }}\n',
    '{K}: {{ cs | with_items("- q") | yaml }}\n',
    "{K}: {{ m | with_entries(meta.name) | yaml }}\n",
    '{K}: {{ labels | with_annotations("a.example/b: c") | yaml }}\n',
    "{K}:\n{% for k, v in m | items %}  {{ k | yaml }}: {{ v | yaml }}\n{% endfor %}",
    '{K}:\n{% for k, v in labels | with_entries("q: 1") | items %}  {{ k | yaml }}: {{ v | yaml }}\n{% endfor %}',
    "{K}:\n{% for k, v in labels | dictsort %}  - [{{ k | yaml }}, {{ v | yaml }}, {{ loop.index | yaml }}]\n{% endfor %}",
    '{K}:\n{% for k, v in m | dictsort %}{% if loop.previtem is defined and loop.previtem[1] == "special" %}  - {{ k | yaml }}\n{% endif %}{% endfor %}',
    '{K}:\n{% for k, v in m | items %}  - {{ v | with_entries("") | yaml }}\n{% endfor %}',
]
_NAMES = ["a", "b", "special", ""]


def _values(rng: random.Random) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": rng.choice(_NAMES)}
    if rng.random() < 0.9:
        meta["team"] = rng.choice(["", "ml", "special", None])
    return {
        "meta": meta,
        "cs": [
            {
                "name": rng.choice(_NAMES),
                "tags": rng.sample(["x", "special", "y"], rng.randint(0, 2)),
            }
            for _ in range(rng.randint(1, 3))
        ],
        "m": {k: rng.choice(_NAMES) for k in rng.sample(["x", "y", "z"], rng.randint(0, 3))},
        "labels": {
            k: rng.choice(_NAMES) for k in rng.sample(["special", "team", "q"], rng.randint(0, 3))
        },
        "pairs": [(rng.choice(_NAMES), rng.choice(_NAMES)) for _ in range(rng.randint(0, 2))],
    }


def _rendered(artifacts: list[Artifact], templates: Templates) -> dict[str, bytes] | str:
    try:
        return render(artifacts, templates)
    except Exception as error:  # a failure must be the same failure both ways
        return f"{type(error).__name__}: {error}"


@pytest.mark.parametrize("seed", range(6))
def test_random_site_templates_render_the_same_with_and_without_the_memo(
    seed: int, tmp_path: Path
) -> None:
    rng = random.Random(seed)
    for _ in range(75):
        chosen = rng.sample(_SNIPPETS, rng.randint(1, 4))
        text = "base: 1\n" + "".join(s.replace("{K}", f"k{i}") for i, s in enumerate(chosen))
        (tmp_path / "fuzz.yaml.j2").write_text(text, encoding="utf-8")
        # Artifacts that repeat one another's values, so the memo both hits and misses.
        shared = [_values(rng) for _ in range(3)]
        values = [
            dict(rng.choice(shared)) if rng.random() < 0.5 else _values(rng) for _ in range(12)
        ]
        artifacts = [Artifact(f"o{n}.yaml", "fuzz.yaml.j2", v) for n, v in enumerate(values)]
        with_memo = _rendered(artifacts, Templates(tmp_path))
        without = _rendered(artifacts, NoMemo(tmp_path))
        assert with_memo == without, f"template:\n{text}\nvalues: {values}"
