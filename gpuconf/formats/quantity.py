"""Kubernetes resource quantities ("40Gi", "1.5k", "2e3") as exact values, for CEL's quantity()."""

from __future__ import annotations

import math
import re
from fractions import Fraction
from typing import NamedTuple

_SUFFIXES = {
    "Ki": Fraction(2**10),
    "Mi": Fraction(2**20),
    "Gi": Fraction(2**30),
    "Ti": Fraction(2**40),
    "Pi": Fraction(2**50),
    "Ei": Fraction(2**60),
    "n": Fraction(1, 10**9),
    "u": Fraction(1, 10**6),
    "m": Fraction(1, 10**3),
    "": Fraction(1),
    "k": Fraction(10**3),
    "M": Fraction(10**6),
    "G": Fraction(10**9),
    "T": Fraction(10**12),
    "P": Fraction(10**15),
    "E": Fraction(10**18),
}
_QUANTITY = re.compile(
    r"^(?P<number>[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))"
    r"(?:[eE](?P<exponent>[+-]?[0-9]+)|(?P<suffix>Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E)?)$"
)

QUANTITY_PATTERN = re.sub(r"\(\?P<\w+>", "(?:", _QUANTITY.pattern).removesuffix("$") + r"(?!\n)$"
"""The same grammar as a plain regular expression (JSON Schema's `pattern`, matched with a
search: `(?!\\n)$` keeps Python's `$` from taking a final line break, which ParseQuantity
refuses): apimachinery's resource.ParseQuantity (v0.34, pkg/api/resource/quantity.go), whose
refusal makes the API server refuse the object, less the forms without digits it reads as zero
('.', '+', 'm')."""


EXPONENT_LIMIT = 1000
"""The largest exponent gpuconf works a quantity's value out for: far past any amount of a
resource (int64 nanos end near 9.2e9, the suffixes at 1e18), short of an exponent whose power
would fill the machine's memory."""


class OutOfRange(ValueError):
    """A quantity whose exponent is past EXPONENT_LIMIT: `above` any amount gpuconf compares
    (a positive one), or else below it."""

    def __init__(self, text: str, above: bool) -> None:
        super().__init__(f"{text!r} is too large or too small a quantity to compare")
        self.above = above


class Quantity(NamedTuple):
    """A quantity compares by value: Quantity.parse("1Gi") == Quantity.parse("1024Mi")."""

    value: Fraction

    @classmethod
    def parse(cls, text: str) -> Quantity:
        match = _QUANTITY.fullmatch(text)
        if match is None:
            raise ValueError(f"{text!r} is not a Kubernetes quantity")
        number = Fraction(match["number"])
        if match["exponent"] is not None:
            exponent = int(match["exponent"])
            if not number:
                return cls(number)
            if abs(exponent) > EXPONENT_LIMIT:
                # 10 ** 99999999999 would take the machine's memory and never finish.
                raise OutOfRange(text, above=exponent > 0 and number > 0)
            return cls(number * Fraction(10) ** exponent)
        return cls(number * _SUFFIXES[match["suffix"] or ""])

    @classmethod
    def of_bytes(cls, count: int) -> Quantity:
        return cls(Fraction(count))

    def compare(self, other: Quantity) -> int:
        return (self.value > other.value) - (self.value < other.value)


_MIB = Fraction(2**20)


MORE_THAN_ANY_COUNT = 10**EXPONENT_LIMIT
"""What `device_count` gives for a count past EXPONENT_LIMIT digits (`1e99999999999`): more
than any count it is compared with."""


def device_count(value: object) -> int | None:
    """A device count as the API server writes it, or None where it is not a whole number:
    the server keeps a quantity in canonical form, so 1000 comes back as "1k" (apimachinery
    pkg/api/resource/quantity.go, ParseQuantity; its test has {1000, DecimalSI, "1k"})."""
    try:
        quantity = Quantity.parse(str(value))
    except OutOfRange as beyond:
        return MORE_THAN_ANY_COUNT if beyond.above else None
    except ValueError:
        return None
    return int(quantity.value) if quantity.value.denominator == 1 else None


def memory_quantity(text: str) -> str:
    """A `memoryAtLeast` value as a Kubernetes quantity: gpuconf reads a bare number as MiB."""
    return f"{text}Mi" if text.isdigit() else text


def memory_mib(text: str) -> int:
    """The MiB a `memoryAtLeast` value asks for, rounded up."""
    return math.ceil(Quantity.parse(memory_quantity(text)).value / _MIB)
