"""Quantities as the JSON outputs print them (cpu ``"500m"``, memory in bytes) and as the report shows them.

One rule per quantity, everywhere in a report (cards, charts, tables; ``static/report.js`` formats the table
cells with the same rules, ``FORMATS`` there):

- CPU in cores with two decimals (``0.25``, ``1.00``, ``108.79``); a table names the unit in its header
  (``CPU (cores)``), a card or tooltip after the number (``cores_text``);
- memory in the largest binary unit below the value with one decimal (``256.0 MiB``, ``1.5 GiB``), bytes
  under 1 KiB (``512 B``);
- percentages with one decimal (``6.0%``); seconds with three (``0.025 s``).
"""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal
from typing import Any

from ..model.quantity import milli_value

BINARY_UNITS = ("KiB", "MiB", "GiB", "TiB", "PiB")


def millicores(cpu: Any) -> int:
    """``"500m"`` (or any Kubernetes cpu quantity, or a number of cores) as millicores; 0 when absent."""
    if cpu is None or cpu == "":
        return 0
    if isinstance(cpu, bool):
        raise ValueError(f"not a cpu quantity: {cpu!r}")
    return milli_value(cpu)


def fixed(value: float, digits: int) -> str:
    """``value`` with ``digits`` decimals and thousands separators, rounded half away from zero from its shortest
    decimal form: what the script's ``toLocaleString("en-US", {minimumFractionDigits: digits, ...})`` prints
    (Python's own format rounds the binary value half to even: 0.125 would be 0.12 here and 0.13 there)."""
    exact = Decimal(repr(float(value))).quantize(Decimal(1).scaleb(-digits), rounding=ROUND_HALF_UP)
    return f"{exact:,.{digits}f}"


def cores(millis: float) -> str:
    """Millicores as cores with two decimals: ``1500`` -> ``1.50``, ``250`` -> ``0.25``, ``108790`` -> ``108.79``."""
    return fixed(millis / 1000, 2)


def cores_text(millis: float) -> str:
    """Millicores as cores with the unit: ``1500`` -> ``1.50 cores``."""
    return f"{cores(millis)} cores"


def binary_bytes(n: float) -> str:
    """Bytes in the largest binary unit below them, one decimal: ``1.5 GiB``, ``512.0 MiB``, ``100 B``."""
    size = float(n)
    if abs(size) < 1024:
        return f"{int(size)} B"
    power = 1
    while power < len(BINARY_UNITS) and abs(size) >= 1024 ** (power + 1):
        power += 1
    return f"{fixed(size / 1024 ** power, 1)} {BINARY_UNITS[power - 1]}"


def percent(used: float, total: float) -> float | None:
    """``used`` as a percentage of ``total`` (one decimal), None when there is no total."""
    return round(100 * used / total, 1) if total else None


def pct_text(value: float | None) -> str:
    """A percentage with one decimal (``6.0%``); ``-`` when there is none."""
    return "-" if value is None else f"{fixed(value, 1)}%"


def seconds_text(value: float | None) -> str:
    """Seconds with three decimals (``0.025 s``); ``-`` when there are none."""
    return "-" if value is None else f"{fixed(value, 3)} s"


def usage(entry: Any) -> tuple[int, int, int]:
    """A ``{"cpu", "memory", "pods"}`` entry as (millicores, bytes, pods); missing parts are 0."""
    if not isinstance(entry, dict):
        return (0, 0, 0)
    return millicores(entry.get("cpu")), int(entry.get("memory") or 0), int(entry.get("pods") or 0)
