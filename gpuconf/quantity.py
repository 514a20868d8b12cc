"""Memory quantities as users write them ("40Gi", "40960") in MiB."""

from __future__ import annotations

_MIB_PER_UNIT = {"Ki": 1 / 1024, "Mi": 1, "Gi": 1024, "Ti": 1024 * 1024}


def to_mib(quantity: str) -> int:
    """MiB for a quantity matching model.base.QUANTITY; a bare number is MiB. Rounds up."""
    for suffix, factor in _MIB_PER_UNIT.items():
        if quantity.endswith(suffix):
            value = int(quantity[: -len(suffix)]) * factor
            return int(value) if value == int(value) else int(value) + 1
    return int(quantity)
