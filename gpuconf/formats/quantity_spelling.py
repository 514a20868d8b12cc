"""How kube-apiserver spells a quantity it was given: Quantity.String() after ParseQuantity, as
k8s.io/apimachinery v0.34.4 pkg/api/resource writes them (quantity.go: ParseQuantity,
parseQuantityString, CanonicalizeBytes, String; amount.go: AsCanonicalBytes,
AsCanonicalBase1024Bytes; suffix.go: the suffix tables; math.go: maxAllowed).

The server keeps the text it was given when ParseQuantity finds it already canonical by a
quick look ("1e3", "+1", "01Ki" stay as written); otherwise it writes the value in the format
its suffix chose (DecimalSI, BinarySI, DecimalExponent): the mantissa without trailing zeros,
its exponent a multiple of 3 (BinarySI: of 1024's powers), so "1000" is "1k" and "1024Ki" is "1Mi". A
BinarySI value under 1024, or not whole, is written DecimalSI ("0.5Ki" is "512"). An exponent
with no suffix of its format is written without one: "1000E" is "1"."""

from __future__ import annotations

import math
import re
from decimal import Decimal
from fractions import Fraction
from typing import NamedTuple

_DECIMAL = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_BINARY = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_DECIMAL_SUFFIX = {exponent: suffix for suffix, exponent in _DECIMAL.items()}
_BINARY_SUFFIX = {exponent // 10: suffix for suffix, exponent in _BINARY.items()}
_PARTS = re.compile(
    r"(?P<sign>[+-]?)0*(?P<num>[0-9]*)(?:\.(?P<denom>[0-9]*))?"
    r"(?P<suffix>Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E|[eE][+-]?[0-9]+)?"
)
"""ParseQuantity's grammar: formats/quantity.py's, and the forms without a digit it reads as
zero ('.', '+', 'Mi'), which the JSON schema's pattern refuses."""
_INT64_MAX = 2**63 - 1
"""maxAllowed: a BinarySI value is capped at it."""
_INT64_DIGITS = 18
"""maxInt64Factors: ParseQuantity's quick path takes at most this many digits."""
_NANO = -9
"""The finest scale a quantity holds: a finer value is rounded up (away from zero) to it."""
_PER_UNIT = 10**-_NANO
_CHUNK = 1000
"""Digits converted at a time: Python converts at most 4300 between int and str at once, and
a quantity may have more."""


class _Parsed(NamedTuple):
    negative: bool
    num: str
    """The whole part's digits without leading zeros ("0" where none are left)."""
    denom: str
    """The fraction's digits as written."""
    format: str
    """DecimalSI, BinarySI or DecimalExponent, chosen by the suffix."""
    exponent: int
    """Of 10 (DecimalSI, DecimalExponent) or of 2 (BinarySI)."""


def sent_text(value: object) -> str | None:
    """The text ParseQuantity gets for a quantity gpuconf writes as `value`: a string as it is;
    a YAML number as Go's encoding/json writes the int64, uint64 or float64 that a Go client's
    YAML reader (sigs.k8s.io/yaml: Argo CD, Flux, kubectl, the server's own for apply) makes
    of it, so 1e18 is sent as 1000000000000000000 (1E) and 1.5e-07 as 1.5e-7 (floatEncoder:
    'f' format, 'e' under 1e-6 or from 1e21, e-07 cleaned up to e-7). None for what is no
    quantity (a bool, a list, infinity)."""
    if isinstance(value, str):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        if -(2**63) <= value < 2**64:
            return str(value)
        try:
            value = float(value)  # past uint64, go-yaml reads a float
        except OverflowError:
            return None
    if not isinstance(value, float) or not math.isfinite(value):
        return None
    magnitude = abs(value)
    if magnitude and (magnitude < 1e-6 or magnitude >= 1e21):
        text = repr(value)  # the shortest digits, in exponent form at these sizes, as Go's
        return re.sub(r"e-0([0-9])$", r"e-\1", text)
    return format(Decimal(repr(value)).normalize(), "f")


def server_spelling(text: str) -> str | None:
    """The string kube-apiserver compares (Quantity.String()) for a quantity written `text`,
    or None where ParseQuantity refuses it."""
    parsed = _parse(text)
    if parsed is None:
        return None
    if text == "0" or _kept_as_written(parsed):
        return text
    return _canonical(parsed)


def canonical_spelling(text: str) -> str | None:
    """How the server writes the value of `text` where it does not keep the text as written:
    "+1" is "1" and "01Ki" is "1Ki" (but "1e3" is "1e3": its format is DecimalExponent)."""
    parsed = _parse(text)
    return None if parsed is None else _canonical(parsed)


def _canonical(parsed: _Parsed) -> str:
    """CanonicalizeBytes of the quantity ParseQuantity made of `parsed`."""
    if parsed.format == "BinarySI":
        return _binary_string(parsed)
    mantissa, exponent = _decimal_value(parsed)
    return _decimal_string(mantissa, exponent, parsed.format)


def _parse(text: str) -> _Parsed | None:
    """parseQuantityString and the suffixer's interpret."""
    match = _PARTS.fullmatch(text)
    if match is None or not text:
        return None
    suffix = match["suffix"] or ""
    if suffix in _DECIMAL:
        form, exponent = "DecimalSI", _DECIMAL[suffix]
    elif suffix in _BINARY:
        form, exponent = "BinarySI", _BINARY[suffix]
    else:
        exponent = int(suffix[1:])
        if not -(2**63) <= exponent < 2**63:
            return None  # strconv.ParseInt's range: ErrSuffix
        form, exponent = "DecimalExponent", (exponent + 2**31) % 2**32 - 2**31  # int32(parsed)
    parsed = _Parsed(
        match["sign"] == "-", match["num"] or "0", match["denom"] or "", form, exponent
    )
    if not any(c.isdigit() for c in text[: len(text) - len(suffix)]) and not _quick(parsed):
        return None  # inf.Dec's SetString reads no digits: ErrNumeric
    return parsed


def _quick(parsed: _Parsed) -> bool:
    """Whether ParseQuantity reads the number as an int64 (its quick path), not as an inf.Dec."""
    if parsed.format == "BinarySI":
        # 1Mi (2^20) has ~6 digits of decimal precision, so exponent*3/10 -1 is roughly the precision
        precision = 15 - len(parsed.num) - parsed.exponent * 3 // 10 - 1
        return (
            not parsed.denom and precision >= 0 and int(parsed.num) << parsed.exponent <= _INT64_MAX
        )
    precision = _INT64_DIGITS - len(parsed.num) - len(parsed.denom)
    return precision >= 0 and parsed.exponent - len(parsed.denom) >= _NANO


def _kept_as_written(parsed: _Parsed) -> bool:
    """The quick path's "if the number is in canonical form, reuse the string"."""
    if not _quick(parsed):
        return False
    if parsed.format == "BinarySI":
        return int(parsed.num) & 0x07 != 0
    shifted = parsed.num + parsed.denom
    return (
        (parsed.exponent - len(parsed.denom)) % 3 == 0
        and not shifted.endswith("000")
        and shifted[0] != "0"
    )


def _decimal_value(parsed: _Parsed) -> tuple[int, int]:
    """(mantissa, exponent of 10) of a decimal quantity as the server holds it: rounded up to a
    nano."""
    mantissa = _integer(parsed.num + parsed.denom)
    exponent = parsed.exponent - len(parsed.denom)
    if exponent < _NANO and mantissa:
        dropped = _NANO - exponent
        digits = len(parsed.num + parsed.denom)
        mantissa = 1 if dropped > digits else -(-mantissa // 10**dropped)
        exponent = _NANO
    return (-mantissa if parsed.negative else mantissa), exponent


def _binary_string(parsed: _Parsed) -> str:
    """A BinarySI quantity's value (rounded up to a nano, capped at maxAllowed), written
    BinarySI where it is whole and at least 1024 in size, else DecimalSI."""
    exact = (
        Fraction(_integer(parsed.num + parsed.denom), 10 ** len(parsed.denom)) * 2**parsed.exponent
    )
    nanos = min(math.ceil(exact * _PER_UNIT), _INT64_MAX * _PER_UNIT)
    if nanos % _PER_UNIT or nanos < 1024 * _PER_UNIT:
        return _decimal_string(-nanos if parsed.negative else nanos, _NANO, "DecimalSI")
    whole, times = nanos // _PER_UNIT, 0
    while whole >= 1024 and whole % 1024 == 0:
        whole, times = whole // 1024, times + 1
    sign = "-" if parsed.negative else ""
    return f"{sign}{whole}{_BINARY_SUFFIX.get(times, '')}"


def _decimal_string(mantissa: int, exponent: int, form: str) -> str:
    """AsCanonicalBytes: the mantissa without trailing zeros, the exponent lowered to a
    multiple of 3; then the suffix of that exponent in its format (none where it has none)."""
    if mantissa == 0:
        return "0"
    while mantissa % 10 == 0:
        mantissa, exponent = mantissa // 10, exponent + 1
    lowered = exponent - exponent % 3
    mantissa *= 10 ** (exponent - lowered)
    if form == "DecimalExponent":
        return f"{_text(mantissa)}e{lowered}" if lowered else _text(mantissa)
    return f"{_text(mantissa)}{_DECIMAL_SUFFIX.get(lowered, '')}"


def _integer(digits: str) -> int:
    value = 0
    for start in range(0, len(digits), _CHUNK):
        chunk = digits[start : start + _CHUNK]
        value = value * 10 ** len(chunk) + int(chunk)
    return value


def _text(value: int) -> str:
    magnitude, chunks = abs(value), []
    while magnitude >= 10**_CHUNK:
        magnitude, low = divmod(magnitude, 10**_CHUNK)
        chunks.append(f"{low:0{_CHUNK}d}")
    return ("-" if value < 0 else "") + str(magnitude) + "".join(reversed(chunks))
