"""Each name a cluster file sets is held to the rule Kubernetes applies where gpuconf puts it:
a value just past the edge is refused where it stands, saying the rule; one just within passes
(tests/name_limits.py has the table and its sources)."""

from __future__ import annotations

from pathlib import Path

import pytest
from builders import errors, run_cli, valid
from name_limits import LIMITS, Limit, limit

from gpuconf.api import kubernetes_names
from gpuconf.formats.yaml_writer import dump


@pytest.mark.parametrize("limit", LIMITS, ids=[limit.id for limit in LIMITS])
def test_a_value_past_kubernetes_edge_is_refused_where_it_stands(limit: Limit) -> None:
    """Also refused where a reference repeats it (a quota naming the class); nothing else is."""
    found = errors(limit.document(limit.past))
    assert limit.path in [d.path for d in found], [d.as_text() for d in found]
    assert all(repr(limit.past)[:20] in d.message for d in found), [d.as_text() for d in found]


@pytest.mark.parametrize("limit", LIMITS, ids=[limit.id for limit in LIMITS])
def test_a_value_just_within_kubernetes_edge_is_accepted(limit: Limit) -> None:
    valid(limit.document(limit.within))


@pytest.mark.parametrize("limit", LIMITS, ids=[limit.id for limit in LIMITS])
def test_the_longest_accepted_value_renders_to_files_the_file_system_holds(
    limit: Limit, tmp_path: Path
) -> None:
    """Output files are named after objects: each name must fit a file name (NAME_MAX 255)."""
    (tmp_path / "cluster.yaml").write_text(dump(limit.document(limit.within)), encoding="utf-8")
    result = run_cli("render", "cluster.yaml", "-o", "out", cwd=tmp_path)
    assert result.code == 0, result.err
    assert any((tmp_path / "out").iterdir())


@pytest.mark.parametrize(
    ("value", "says"),
    [
        ("a" * 254 + "/k", "prefix must be a DNS subdomain of at most 253 characters, not 254"),
        ("a/" + "k" * 64, "name part must be at most 63 characters, not 64"),
        ("a/b/c", "at most one '/'"),
        ("/k", "prefix before '/' must not be empty"),
        ("Example.com/k", "prefix must be a DNS subdomain: lowercase letters"),
        ("example.com/-k", "name part must be letters, digits, '-', '_' or '.'"),
    ],
)
def test_a_label_key_is_told_which_part_of_the_qualified_name_rule_it_breaks(
    value: str, says: str
) -> None:
    document = limit("toleration key prefix").document(value)
    (error,) = errors(document)
    assert "is not a valid label key: a qualified name" in error.message
    assert says in error.message


@pytest.mark.parametrize(
    ("value", "says"),
    [
        (
            "a" * 245 + "/t4",
            "domain must be a DNS subdomain of at most 244 characters, not 245: "
            "its quota name requests.<name> is a qualified name too",
        ),
        ("example.kubernetes.io/t4", "the kubernetes.io domain is Kubernetes' own"),
        ("requests.example.com/t4", "must not start with 'requests.'"),
        ("t4", "an extended resource name is <domain>/<name>"),
        ("example.com/T4", "name part must be lowercase letters"),
    ],
)
def test_a_resource_name_is_told_which_extended_resource_rule_it_breaks(
    value: str, says: str
) -> None:
    document = limit("resource name domain").document(value)
    (error,) = errors(document)
    assert "is not a valid extended resource name: " in error.message
    assert says in error.message


def test_the_resource_domain_is_told_the_quota_name_caps_it() -> None:
    domain = limit("resource domain: 253")
    (error,) = errors(domain.document(domain.past))
    assert error.message.endswith(
        "is not a valid resource domain: the domain must be a DNS subdomain of at most 244 "
        "characters, not 245: the quota name requests.<domain>/<class> is a qualified name"
    )


def test_a_pool_name_is_told_why_it_is_shorter_than_a_dns_label() -> None:
    pool = limit("pool name")
    (error,) = errors(pool.document(pool.past))
    assert "is not a valid pool name" in error.message
    assert "gpuconf-<pool> is the nodes' nvidia.com/mig.config label value" in error.hint


def test_the_explanations_follow_kubernetes_order_for_a_value_that_breaks_two_rules() -> None:
    """IsQualifiedName checks the prefix before the name part."""
    said = kubernetes_names.qualified_name("a" * 254 + "/" + "k" * 64)
    assert "prefix" in said
    assert "name part" not in said


@pytest.mark.parametrize(
    "kind", ["toleration key prefix", "resource name domain", "resource domain: 253"]
)
def test_a_trailing_line_break_is_refused_as_kubernetes_refuses_it(kind: str) -> None:
    # Python's `$` matches before a final line break (Go's and Rust's do not): the patterns
    # checked with Python's regular expressions must not let one through.
    edge = limit(kind)
    found = errors(edge.document(edge.within + "\n"))
    assert edge.path in [d.path for d in found], [d.as_text() for d in found]
