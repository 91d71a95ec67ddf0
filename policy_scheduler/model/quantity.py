"""Kubernetes resource quantities, parsed exactly as ``k8s.io/apimachinery/pkg/api/resource`` does.

A quantity is ``<signed decimal number><suffix>`` where the suffix is a binary SI suffix (``Ki`` ..
``Ei``), a decimal SI suffix (``n u m "" k M G T P E``) or a decimal exponent (``e3``, ``E-2``).
Values are kept as exact fractions; :func:`value` and :func:`milli_value` round up (towards +inf)
like ``Quantity.Value()`` / ``Quantity.MilliValue()``.
"""

from __future__ import annotations

import math
import re
from fractions import Fraction

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {
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
    r"^(?P<num>[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))"
    r"(?P<suffix>Ki|Mi|Gi|Ti|Pi|Ei|[eE][+-]?[0-9]+|[numkMGTPE]?)$"
)


class QuantityError(ValueError):
    """The text is not a valid Kubernetes quantity."""


_cache: dict[str, Fraction] = {}


def parse_quantity(text: str | int | float) -> Fraction:
    """Parse a quantity into an exact fraction of base units.

    Integers (as the API server never sends, but hand-written manifests often hold) are accepted.
    """
    if isinstance(text, bool):
        raise QuantityError(f"quantities must match the regular expression, got {text!r}")
    if isinstance(text, int):
        return Fraction(text)
    if isinstance(text, float):
        if not math.isfinite(text):
            raise QuantityError(f"invalid quantity {text!r}")
        return Fraction(str(text))
    if not isinstance(text, str):
        raise QuantityError(f"expected a quantity string, got {type(text).__name__}")
    cached = _cache.get(text)
    if cached is not None:
        return cached
    m = _QUANTITY.match(text.strip()) if text == text.strip() else None
    if m is None:
        raise QuantityError(
            f"quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$', got {text!r}"
        )
    number = Fraction(m.group("num"))
    suffix = m.group("suffix")
    if suffix in _BINARY:
        result = number * _BINARY[suffix]
    elif suffix in _DECIMAL:
        result = number * _DECIMAL[suffix]
    else:
        result = number * Fraction(10) ** int(suffix[1:])
    if len(_cache) < 65536:
        _cache[text] = result
    return result


def _ceil(x: Fraction) -> int:
    return -((-x.numerator) // x.denominator)


_values: dict[str, int] = {}
_milli_values: dict[str, int] = {}


def value(text: str | int | float) -> int:
    """``Quantity.Value()``: the value in base units, rounded up."""
    if type(text) is str:
        cached = _values.get(text)
        if cached is None:
            cached = _ceil(parse_quantity(text))
            if len(_values) < 65536:
                _values[text] = cached
        return cached
    return _ceil(parse_quantity(text))


def milli_value(text: str | int | float) -> int:
    """``Quantity.MilliValue()``: the value in thousandths of a base unit, rounded up."""
    if type(text) is str:
        cached = _milli_values.get(text)
        if cached is None:
            cached = _ceil(parse_quantity(text) * 1000)
            if len(_milli_values) < 65536:
                _milli_values[text] = cached
        return cached
    return _ceil(parse_quantity(text) * 1000)


def format_quantity(q: Fraction) -> str:
    """A quantity's text for an object this engine writes: an integer in base units, else in thousandths
    (``500m``), else a decimal; the API server stores every quantity in its canonical form anyway."""
    if q.denominator == 1:
        return str(q.numerator)
    milli = q * 1000
    if milli.denominator == 1:
        return f"{milli.numerator}m"
    digits = 0
    while q * 10**digits != int(q * 10**digits) and digits < 18:
        digits += 1
    return f"{float(q):.{digits}f}" if digits < 18 else str(float(q))
