"""Kubernetes quantities compare by value, in Python and in the CEL the checker evaluates."""

from __future__ import annotations

from fractions import Fraction

import pytest
from builders import heterogeneous, valid

from gpuconf.compiler.dra.cel_proof import selected_devices
from gpuconf.compiler.dra.devices import cluster_devices
from gpuconf.formats.quantity import (
    EXPONENT_LIMIT,
    MORE_THAN_ANY_COUNT,
    OutOfRange,
    Quantity,
    device_count,
)


@pytest.mark.parametrize(
    ("left", "right", "order"),
    [
        ("1Gi", "1024Mi", 0),
        ("40Gi", "40G", 1),
        ("1k", "1000", 0),
        ("1.5Ki", "1536", 0),
        ("500m", "0.5", 0),
        ("2e3", "2k", 0),
        ("1E", "1e18", 0),
        ("1Mi", "1M", 1),
    ],
)
def test_quantities_compare_by_value(left: str, right: str, order: int) -> None:
    assert Quantity.parse(left).compare(Quantity.parse(right)) == order


@pytest.mark.parametrize("text", ["", "Gi", "1GB", "1 Gi", "--1"])
def test_malformed_quantity_is_rejected(text: str) -> None:
    with pytest.raises(ValueError, match="not a Kubernetes quantity"):
        Quantity.parse(text)


@pytest.mark.parametrize(
    ("expression", "selected"),
    [
        ("device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('23034Mi')) == 0", True),
        ("device.capacity['gpu.nvidia.com'].memory.isGreaterThan(quantity('22Gi'))", True),
        ("device.capacity['gpu.nvidia.com'].memory.isLessThan(quantity('22Gi'))", False),
        ("device.capacity['gpu.nvidia.com'].memory.asInteger() == 23034 * 1024 * 1024", True),
        ("isQuantity('40Gi') && !isQuantity('40GB')", True),
    ],
)
def test_cel_quantity_library(expression: str, selected: bool) -> None:
    validated = valid(heterogeneous([{"name": "l4", "select": {"model": "L4"}}]))
    published = cluster_devices(validated.cluster, validated.inventory)
    l4 = [d for d in published.devices if d.group.pool == "l4"]
    assert selected_devices(expression, l4) == (frozenset({l4[0].key}) if selected else frozenset())


@pytest.mark.parametrize(
    ("written", "count"),
    [("8", 8), (8, 8), ("1k", 1000), ("2k", 2000), ("1500m", None), ("0.5", None), ("x", None)],
)
def test_device_counts_are_read_as_the_api_server_writes_them(
    written: object, count: int | None
) -> None:
    """kube-apiserver stores 1000 as "1k": a quota of 1,000 GPUs is 1,000, not unreadable."""
    assert device_count(written) == count


@pytest.mark.parametrize(
    ("text", "above"),
    [
        ("1e99999999999", True),
        ("2.5E1001", True),
        ("-1e99999999999", False),
        ("1e-99999999999", False),
    ],
)
def test_a_quantity_past_the_exponent_limit_is_out_of_range_not_worked_out(
    text: str, above: bool
) -> None:
    # 10 ** 99999999999 would fill the machine's memory before it finished.
    with pytest.raises(OutOfRange) as beyond:
        Quantity.parse(text)
    assert beyond.value.above is above


def test_zero_and_exponents_up_to_the_limit_are_worked_out() -> None:
    assert Quantity.parse("0e99999999999").value == 0
    assert Quantity.parse(f"1e{EXPONENT_LIMIT}").value == 10**EXPONENT_LIMIT
    assert Quantity.parse(f"1e-{EXPONENT_LIMIT}").value == Fraction(1, 10**EXPONENT_LIMIT)


def test_a_device_count_past_the_limit_is_more_than_any_count() -> None:
    assert device_count("1e99999999999") == MORE_THAN_ANY_COUNT
    assert device_count("1e-99999999999") is None
    assert device_count("-1e99999999999") is None
