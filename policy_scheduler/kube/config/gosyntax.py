"""Go's text syntaxes that kube-scheduler's flags and configuration use: durations (``time.ParseDuration``
and ``Duration.String``), booleans (``strconv.ParseBool``) and ``host:port`` (``net.SplitHostPort``), with
Go's error wording."""

from __future__ import annotations

import re

from policy_scheduler.errors import UserError

_SECOND = 10**9
_UNITS = {"ns": 1, "us": 10**3, "µs": 10**3, "μs": 10**3, "ms": 10**6, "s": _SECOND, "m": 60 * _SECOND,
          "h": 3600 * _SECOND}
_COMPONENT = re.compile(r"([0-9]*)(\.[0-9]*)?([^0-9.]*)")


def go_quote(text: str) -> str:
    """Go's ``time.quote``: double quotes, ``"`` and ``\\`` escaped, other bytes outside ASCII as ``\\xNN``."""
    out = []
    for char in text:
        if char < " " or char > "~":
            out.extend(f"\\x{byte:02x}" for byte in char.encode("utf-8", errors="replace"))
        else:
            out.append("\\" + char if char in '"\\' else char)
    return '"' + "".join(out) + '"'


def parse_go_duration(text: str) -> float:
    """Seconds in a Go ``time.ParseDuration`` string (``1m30s``, ``500ms``, ``-1.5h``, ``0``), Go's errors."""
    quoted = go_quote(text)
    rest = text
    negative = rest[:1] == "-"
    if rest[:1] in ("-", "+"):
        rest = rest[1:]
    if rest == "0":
        return 0.0
    if not rest:
        raise UserError(f"time: invalid duration {quoted}")
    total = 0
    position = 0
    while position < len(rest):
        match = _COMPONENT.match(rest, position)
        assert match is not None  # every part of the pattern may be empty
        whole, fraction, unit = match.groups()
        digits = (fraction or ".")[1:]
        if not whole and not digits:
            raise UserError(f"time: invalid duration {quoted}")
        if not unit:
            raise UserError(f"time: missing unit in duration {quoted}")
        if unit not in _UNITS:
            raise UserError(f"time: unknown unit {go_quote(unit)} in duration {quoted}")
        scale = _UNITS[unit]
        total += int(whole or "0") * scale + int(digits or "0") * scale // 10 ** len(digits)
        if total > 2**63 - (0 if negative else 1):
            raise UserError(f"time: invalid duration {quoted}")
        position = match.end()
    return -total / _SECOND if negative else total / _SECOND


def _fraction(value: int, precision: int) -> tuple[int, str]:
    whole, rest = divmod(value, 10**precision)
    digits = f"{rest:0{precision}d}".rstrip("0")
    return whole, f".{digits}" if digits else ""


def format_go_duration(seconds: float) -> str:
    """Go's ``Duration.String()``: ``15s``, ``1m30s``, ``1h0m0s``, ``500ms``, ``1.5µs``, ``0s``."""
    nanos = round(seconds * _SECOND)
    sign = "-" if nanos < 0 else ""
    nanos = abs(nanos)
    if nanos == 0:
        return "0s"
    if nanos < 1000:
        return f"{sign}{nanos}ns"
    if nanos < 10**6:
        whole, frac = _fraction(nanos, 3)
        return f"{sign}{whole}{frac}µs"
    if nanos < _SECOND:
        whole, frac = _fraction(nanos, 6)
        return f"{sign}{whole}{frac}ms"
    whole, frac = _fraction(nanos, 9)
    text = f"{whole % 60}{frac}s"
    minutes, hours = whole // 60 % 60, whole // 3600
    if whole >= 60:
        text = f"{minutes}m{text}"
    if hours:
        text = f"{hours}h{text}"
    return sign + text


_TRUE = ("1", "t", "T", "TRUE", "true", "True")
_FALSE = ("0", "f", "F", "FALSE", "false", "False")


def parse_go_bool(text: str) -> bool:
    """Go's ``strconv.ParseBool`` (what pflag accepts in ``--flag=<value>``)."""
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise UserError(f"strconv.ParseBool: parsing {go_quote(text)}: invalid syntax")


def go_split_host_port(address: str) -> tuple[str, str]:
    """Go's ``net.SplitHostPort``; ``ValueError`` carries Go's message."""

    def fail(why: str) -> ValueError:
        return ValueError(f"address {address}: {why}" if address else why)

    colon = address.rfind(":")
    if colon < 0:
        raise fail("missing port in address")
    start = end = 0
    if address.startswith("["):
        close = address.find("]")
        if close < 0:
            raise fail("missing ']' in address")
        if close + 1 == len(address):
            raise fail("missing port in address")
        if close + 1 != colon:
            raise fail("too many colons in address" if address[close + 1] == ":" else "missing port in address")
        host = address[1:close]
        start, end = 1, close + 1
    else:
        host = address[:colon]
        if ":" in host:
            raise fail("too many colons in address")
    if "[" in address[start:]:
        raise fail("unexpected '[' in address")
    if "]" in address[end:]:
        raise fail("unexpected ']' in address")
    return host, address[colon + 1:]


def join_host_port(host: str, port: str | int) -> str:
    """Go's ``net.JoinHostPort``: IPv6 hosts in brackets."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def split_host_port(address: str) -> tuple[str, int]:
    """``host:port`` → (host, port) for the HTTP server; the host may be empty (all interfaces).

    An empty ``address`` means "disabled" (``--port=-1``): callers test for it first; here it is an
    error like any unparsable address (:class:`UserError` with Go's ``net.SplitHostPort`` wording, or
    ``address <a>: invalid port`` for a port outside 0..65535).
    """
    try:
        host, port = go_split_host_port(address)
    except ValueError as exc:
        raise UserError(str(exc)) from None
    if not port.isascii() or not port.isdigit() or int(port) > 65535:
        raise UserError(f"address {address}: invalid port")
    return host, int(port)
