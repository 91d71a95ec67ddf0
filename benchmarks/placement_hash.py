"""The benchmark's placement hash: FNV-1a 64 over ``<pod>=<host>\\n`` per pending pod, in order."""

from __future__ import annotations

from collections.abc import Iterable

FNV64_OFFSET_BASIS = 0xCBF29CE484222325
FNV64_PRIME = 0x100000001B3
MASK64 = (1 << 64) - 1


def fnv1a64(data: bytes, h: int = FNV64_OFFSET_BASIS) -> int:
    """FNV-1a 64-bit of ``data``, continuing from ``h``."""
    for byte in data:
        h = ((h ^ byte) * FNV64_PRIME) & MASK64
    return h


def placement_hash(pairs: Iterable[tuple[str, str | None]]) -> str:
    """16 lowercase hex digits; ``host`` is None or empty when the pod could not be scheduled."""
    h = FNV64_OFFSET_BASIS
    for pod, host in pairs:
        h = fnv1a64(f"{pod}={host or ''}\n".encode(), h)
    return f"{h:016x}"
