"""Quantities as the JSON outputs print them (cpu ``"500m"``, memory in bytes) and as the report shows them."""

from __future__ import annotations

from typing import Any

from ..model.quantity import milli_value


def millicores(cpu: Any) -> int:
    """``"500m"`` (or any Kubernetes cpu quantity, or a number of cores) as millicores; 0 when absent."""
    if cpu is None or cpu == "":
        return 0
    if isinstance(cpu, bool):
        raise ValueError(f"not a cpu quantity: {cpu!r}")
    return milli_value(cpu)


def cores(millis: float) -> str:
    """Millicores as cores: ``1500`` -> ``1.5``, ``250`` -> ``0.25``."""
    text = f"{millis / 1000:,.2f}".rstrip("0").rstrip(".")
    return text or "0"


def binary_bytes(n: float) -> str:
    """Bytes with a binary suffix: ``1.5Gi``, ``512Mi``, ``100``."""
    size = float(n)
    if abs(size) < 1024:
        return str(int(size))
    suffixes = ("Ki", "Mi", "Gi", "Ti")
    power = 1
    while power < len(suffixes) and abs(size) >= 1024 ** (power + 1):
        power += 1
    return f"{size / 1024 ** power:.1f}".rstrip("0").rstrip(".") + suffixes[power - 1]


def percent(used: float, total: float) -> float | None:
    """``used`` as a percentage of ``total`` (one decimal), None when there is no total."""
    return round(100 * used / total, 1) if total else None


def pct_text(value: float | None) -> str:
    return "-" if value is None else f"{value:g}%"


def usage(entry: Any) -> tuple[int, int, int]:
    """A ``{"cpu", "memory", "pods"}`` entry as (millicores, bytes, pods); missing parts are 0."""
    if not isinstance(entry, dict):
        return (0, 0, 0)
    return millicores(entry.get("cpu")), int(entry.get("memory") or 0), int(entry.get("pods") or 0)
