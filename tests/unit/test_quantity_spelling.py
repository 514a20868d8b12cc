"""A quantity is spelled as kube-apiserver's Quantity.String() spells it after ParseQuantity
(k8s.io/apimachinery v0.34.4 pkg/api/resource/quantity.go): the text as written where the
parser keeps it, else the value in the format its suffix chose."""

from __future__ import annotations

import pytest

from gpuconf.formats.quantity_spelling import canonical_spelling, sent_text, server_spelling

# quantity_test.go's TestQuantityParseEmit table, and the same values negated.
PARSE_EMIT = [
    ("1Ki", "1Ki"),
    ("1Mi", "1Mi"),
    ("1Gi", "1Gi"),
    ("1024Mi", "1Gi"),
    ("1000M", "1G"),
    (".001Ki", "1024m"),
    (".000001Ki", "1024u"),
    (".000000001Ki", "1024n"),
    (".000000000001Ki", "2n"),
]


@pytest.mark.parametrize(("text", "spelled"), PARSE_EMIT)
def test_apimachinerys_own_parse_emit_table_is_spelled_alike(text: str, spelled: str) -> None:
    assert server_spelling(text) == spelled
    assert server_spelling(f"-{text}") == f"-{spelled}"


@pytest.mark.parametrize(
    ("text", "spelled"),
    [
        ("1", "1"),
        ("1000", "1k"),
        ("1000m", "1"),
        ("0.001", "1m"),
        ("1.0", "1"),
        ("1024Ki", "1Mi"),
        ("2048Ki", "2Mi"),
        ("1536Ki", "1536Ki"),
        ("0.5Ki", "512"),
        ("1.5Ki", "1536"),
        ("1500m", "1500m"),
        ("10e-1", "1"),
        ("1000e0", "1e3"),
        ("1.5e3", "1500"),
        ("1e-10", "1e-9"),
        ("1.5n", "2n"),
        ("00", "0"),
        ("0Mi", "0"),
    ],
)
def test_a_quantity_not_kept_as_written_is_spelled_in_its_canonical_form(
    text: str, spelled: str
) -> None:
    assert server_spelling(text) == spelled


@pytest.mark.parametrize("text", ["0", "1e3", "1E3", "+1", "01", "+1Ki", "01Ki", "1.G", "1024"])
def test_a_quantity_the_parser_finds_canonical_at_a_glance_keeps_its_text(text: str) -> None:
    assert server_spelling(text) == text


def test_the_text_kept_as_written_still_has_a_canonical_spelling() -> None:
    assert canonical_spelling("+1Ki") == "1Ki"
    assert canonical_spelling("01") == "1"
    assert canonical_spelling("1e3") == "1e3"  # DecimalExponent keeps its format


@pytest.mark.parametrize(
    ("text", "spelled"),
    [
        ("1000E", "1"),  # 1e21: DecimalSI has no suffix for it, so none is written
        ("1024Ei", "9223372036854775807"),  # a BinarySI value is capped at the int64 maximum
        ("8Ei", "9223372036854775807"),
        ("1Ei", "1Ei"),
    ],
)
def test_values_past_the_suffix_tables_are_spelled_as_the_server_does(
    text: str, spelled: str
) -> None:
    assert server_spelling(text) == spelled


@pytest.mark.parametrize("text", [".", "+", "-", "Mi", "m", ".e3"])
def test_a_quantity_without_digits_is_zero_to_the_parser(text: str) -> None:
    assert server_spelling(text) == "0"


@pytest.mark.parametrize(
    "text", ["", "1GB", "1 Gi", "--1", "1e", "1K", "1.5.5", "Ei", "+Pi", "e-10", ".E-12"]
)
def test_what_parse_quantity_refuses_has_no_spelling(text: str) -> None:
    assert server_spelling(text) is None
    assert canonical_spelling(text) is None


@pytest.mark.parametrize(
    ("value", "sent", "spelled"),
    [
        ("1e3", "1e3", "1e3"),
        (1024, "1024", "1024"),
        (1000, "1000", "1k"),
        (1000.0, "1000", "1k"),
        (1e18, "1000000000000000000", "1E"),
        (1e16, "10000000000000000", "10P"),
        (0.001, "0.001", "1m"),
        (1e-05, "0.00001", "10u"),
        (1.5e-07, "1.5e-7", "150e-9"),
        (1e21, "1e+21", "1e+21"),
        (10**20, "100000000000000000000", "100E"),
        (-0.0, "-0", "0"),
    ],
)
def test_a_yaml_number_is_sent_as_a_go_client_writes_it(
    value: object, sent: str, spelled: str
) -> None:
    """What sigs.k8s.io/yaml v1.6.0 and apimachinery make of `divisor: <value>`, read into a
    Quantity directly and through an Unstructured's JSON: the same."""
    assert sent_text(value) == sent
    assert server_spelling(sent) == spelled


@pytest.mark.parametrize("value", [True, None, [1], float("inf"), float("nan"), 10**400])
def test_what_is_no_yaml_quantity_is_sent_as_nothing(value: object) -> None:
    assert sent_text(value) is None
