"""The two value types DRA's CEL environment adds: Kubernetes quantities and semantic versions.

``quantity("1Gi")`` parses as ``resource.ParseQuantity`` does (apimachinery's ``parseQuantityString``, its suffix
table, the rounding of values finer than a nano *up*, the cap of binary-SI values at 2^63-1, and its three
error texts); the value is kept as an exact :class:`fractions.Fraction`, compared and added exactly as
``Quantity.Cmp``/``Add``/``Sub`` do. ``semver("1.2.3")`` parses as ``github.com/blang/semver/v4``'s strict
``Parse`` (with its error texts) and ``semver("v1.2", true)`` normalises first as the Kubernetes semver library
does; versions compare as ``Version.Compare`` (build metadata has no precedence).

Inside the CEL runtime both are small protobuf messages (``kubernetes.Quantity``, ``kubernetes.Semver``)
holding one canonical text, so that ``==`` on two of them is exactly upstream's ``Quantity.Equal`` /
``Version.EQ``; :func:`quantity_text`/:func:`fraction_of` and :func:`semver_text`/:func:`semver_key` convert.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from fractions import Fraction
from typing import Any

#: ``resource.ErrFormatWrong``, ``ErrNumeric``, ``ErrSuffix``.
ERR_FORMAT_WRONG = "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
ERR_NUMERIC = "unable to parse numeric part of quantity"
ERR_SUFFIX = "unable to parse quantity's suffix"

_BINARY = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_DECIMAL = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_SUFFIX_CHARS = frozenset("eEinumkKMGTP")
_DIGITS = frozenset("0123456789")
_MAX_INT64 = 2**63 - 1


class ValueParseError(ValueError):
    """A quantity or a semantic version that does not parse; ``str()`` is upstream's text."""


def _split_quantity(text: str) -> tuple[str, str]:
    """apimachinery's ``parseQuantityString``: (value, suffix), or ErrFormatWrong."""
    pos, end = 0, len(text)
    if pos < end and text[0] in "+-":
        pos += 1
    while pos < end and text[pos] == "0":
        pos += 1
    if pos >= end:
        return text, ""  # all zeroes: value "0"
    i = pos
    while i < end and text[i] in _DIGITS:
        i += 1
    if i >= end:
        return text, ""
    pos = i
    if text[pos] == ".":
        pos += 1
        i = pos
        while i < end and text[i] in _DIGITS:
            i += 1
        if i >= end:
            return text, ""
        pos = i
    value = text[:pos]
    suffix_start = pos
    i = pos
    while i < end and text[i] in _SUFFIX_CHARS:
        i += 1
    if i >= end:
        return value, text[suffix_start:]
    pos = i
    if text[pos] in "+-":
        pos += 1
    i = pos
    while i < end and text[i] in _DIGITS:
        i += 1
    if i >= end:
        return value, text[suffix_start:]
    raise ValueParseError(ERR_FORMAT_WRONG)


def _interpret_suffix(suffix: str) -> tuple[int, int] | None:
    """``quantitySuffixer.interpret``: (base, exponent) or None."""
    if suffix in _DECIMAL:
        return 10, _DECIMAL[suffix]
    if suffix in _BINARY:
        return 2, _BINARY[suffix]
    if len(suffix) > 1 and suffix[0] in "eE":
        digits = suffix[1:]
        body = digits[1:] if digits[0] in "+-" else digits
        if body and all(c in _DIGITS for c in body):
            exponent = int(digits)
            if -(2**63) <= exponent <= _MAX_INT64:
                return 10, exponent
    return None


def parse_quantity(text: str) -> Fraction:
    """``resource.ParseQuantity``: the exact value, or :class:`ValueParseError` with upstream's text."""
    if not text:
        raise ValueParseError(ERR_FORMAT_WRONG)
    if text == "0":
        return Fraction(0)
    value, suffix = _split_quantity(text)
    interpreted = _interpret_suffix(suffix)
    if interpreted is None:
        raise ValueParseError(ERR_SUFFIX)
    base, exponent = interpreted
    if abs(exponent) > 10_000:  # inf.Dec would work with it; we refuse to build a gigantic number
        raise ValueParseError(ERR_NUMERIC)
    unsigned = value.lstrip("+-")
    digits = unsigned.replace(".", "", 1)
    if digits and not all(c in _DIGITS for c in digits):
        raise ValueParseError(ERR_NUMERIC)
    number = Fraction(unsigned) if digits else Fraction(0)
    if value.startswith("-"):
        number = -number
    amount = number * (Fraction(10) ** exponent if base == 10 else Fraction(2) ** exponent)
    nanos = amount * 10**9
    if nanos.denominator != 1:
        # Values finer than a nano round up (away from zero) to the next nano, as inf.RoundUp does.
        magnitude = -((-abs(nanos.numerator)) // nanos.denominator)
        amount = Fraction(magnitude if amount > 0 else -magnitude, 10**9)
    if base == 2 and abs(amount) > _MAX_INT64:
        amount = Fraction(_MAX_INT64 if amount > 0 else -_MAX_INT64)
    return amount


def quantity_text(value: Fraction) -> str:
    """The canonical text a ``kubernetes.Quantity`` message holds (equal values, equal texts)."""
    return f"{value.numerator}/{value.denominator}"


_fractions: dict[str, Fraction] = {}


def fraction_of(text: str) -> Fraction:
    """The value of a canonical quantity text."""
    value = _fractions.get(text)
    if value is None:
        numerator, _, denominator = text.partition("/")
        value = Fraction(int(numerator), int(denominator))
        if len(_fractions) < 65536:
            _fractions[text] = value
    return value


def as_int64(value: Fraction) -> int | None:
    """``Quantity.AsInt64``: the value when it is an integer that fits an int64."""
    if value.denominator != 1 or not -(2**63) <= value.numerator <= _MAX_INT64:
        return None
    return value.numerator


def approximate_float(value: Fraction) -> float:
    """``Quantity.AsApproximateFloat64`` (correctly rounded; +-Inf beyond the float range)."""
    try:
        return float(value)
    except OverflowError:
        return math.inf if value > 0 else -math.inf


# --- semantic versions (blang/semver/v4) -------------------------------------------------------------

_ALPHANUM = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-0123456789")
_MAX_UINT64 = 2**64 - 1

#: A parsed version: (major, minor, patch, prerelease identifiers); build metadata has no precedence.
Semver = tuple[int, int, int, tuple[int | str, ...]]


def _parse_uint(text: str) -> int:
    """``strconv.ParseUint(text, 10, 64)`` for a string of digits (possibly empty)."""
    if not text:
        raise ValueParseError('strconv.ParseUint: parsing "": invalid syntax')
    number = int(text)
    if number > _MAX_UINT64:
        raise ValueParseError(f'strconv.ParseUint: parsing "{text}": value out of range')
    return number


def _only(text: str, allowed: frozenset[str]) -> bool:
    return all(c in allowed for c in text)


def _leading_zero(text: str) -> bool:
    return len(text) > 1 and text[0] == "0"


def _go_quote(text: str) -> str:
    """Go's ``%q`` for the printable ASCII texts these messages quote."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def parse_semver(text: str) -> Semver:
    """blang/semver ``Parse``: strict ``MAJOR.MINOR.PATCH[-PRE][+BUILD]``, upstream's error texts."""
    if not text:
        raise ValueParseError("Version string empty")
    parts = text.split(".", 2)
    if len(parts) != 3:
        raise ValueParseError("No Major.Minor.Patch elements found")
    numbers = []
    for name, part in (("major", parts[0]), ("minor", parts[1])):
        if not _only(part, _DIGITS):
            raise ValueParseError(f"Invalid character(s) found in {name} number {_go_quote(part)}")
        if _leading_zero(part):
            raise ValueParseError(f"{name.capitalize()} number must not contain leading zeroes {_go_quote(part)}")
        numbers.append(_parse_uint(part))
    patch = parts[2]
    build: list[str] = []
    prerelease: list[str] = []
    if "+" in patch:
        index = patch.index("+")
        build = patch[index + 1 :].split(".")
        patch = patch[:index]
    if "-" in patch:
        index = patch.index("-")
        prerelease = patch[index + 1 :].split(".")
        patch = patch[:index]
    if not _only(patch, _DIGITS):
        raise ValueParseError(f"Invalid character(s) found in patch number {_go_quote(patch)}")
    if _leading_zero(patch):
        raise ValueParseError(f"Patch number must not contain leading zeroes {_go_quote(patch)}")
    numbers.append(_parse_uint(patch))
    pre: list[int | str] = []
    for identifier in prerelease:
        if not identifier:
            raise ValueParseError("Prerelease is empty")
        if _only(identifier, _DIGITS):
            if _leading_zero(identifier):
                raise ValueParseError(
                    f"Numeric PreRelease version must not contain leading zeroes {_go_quote(identifier)}"
                )
            pre.append(_parse_uint(identifier))
        elif _only(identifier, _ALPHANUM):
            pre.append(identifier)
        else:
            raise ValueParseError(f"Invalid character(s) found in prerelease {_go_quote(identifier)}")
    for identifier in build:
        if not identifier:
            raise ValueParseError("Build meta data is empty")
        if not _only(identifier, _ALPHANUM):
            raise ValueParseError(f"Invalid character(s) found in build meta data {_go_quote(identifier)}")
    return numbers[0], numbers[1], numbers[2], tuple(pre)


def normalize_and_parse_semver(text: str) -> Semver:
    """The Kubernetes semver library's ``normalizeAndParse`` (``semver(s, true)``, ``isSemver(s, true)``)."""
    if text.startswith("v"):
        text = text[1:]
    parts = text.split(".", 2)
    for i, part in enumerate(parts):
        if len(part) > 1:
            part = part.lstrip("0")
            if not part or part[0] not in _DIGITS:
                part = "0" + part
            parts[i] = part
    if len(parts) < 3:
        if "+" in parts[-1] or "-" in parts[-1]:
            raise ValueParseError("short version cannot contain PreRelease/Build meta data")
        parts.extend(["0"] * (3 - len(parts)))
    return parse_semver(".".join(parts))


def compare_semver(a: Semver, b: Semver) -> int:
    """blang/semver ``Version.Compare``: -1, 0 or 1."""
    if a[:3] != b[:3]:
        return 1 if a[:3] > b[:3] else -1
    pre_a, pre_b = a[3], b[3]
    if not pre_a and not pre_b:
        return 0
    if not pre_a:
        return 1
    if not pre_b:
        return -1
    for x, y in zip(pre_a, pre_b):
        if x == y:
            continue
        x_num, y_num = isinstance(x, int), isinstance(y, int)
        if x_num and not y_num:
            return -1
        if y_num and not x_num:
            return 1
        return 1 if x > y else -1  # type: ignore[operator]
    if len(pre_a) == len(pre_b):
        return 0
    return -1 if len(pre_a) < len(pre_b) else 1


def semver_text(version: Semver) -> str:
    """The canonical text a ``kubernetes.Semver`` message holds (equal versions, equal texts)."""
    text = f"{version[0]}.{version[1]}.{version[2]}"
    if version[3]:
        text += "-" + ".".join(str(p) for p in version[3])
    return text


MEMO_SIZE = 65536  # values a memo keeps (the first ones; later ones are computed each time)


def memoised(memo: dict, key: Any, make: Callable[[Any], Any]) -> Any:
    """``make(key)``, kept in ``memo`` while it holds fewer than :data:`MEMO_SIZE` values."""
    value = memo.get(key)
    if value is None:
        value = make(key)
        if len(memo) < MEMO_SIZE:
            memo[key] = value
    return value


_semvers: dict[str, Semver] = {}


def semver_key(text: str) -> Semver:
    """The version of a canonical semver text."""
    return memoised(_semvers, text, parse_semver)
