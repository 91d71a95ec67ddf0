"""What every report shares: summary cards, FitError histograms, reason texts, and keys this version does not know."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..predicates.reasons import describe
from .tables import Column, Table
from .units import percent

_FIT_ERROR = re.compile(r"^0/\d+ nodes are available: (?P<histogram>.*)\.$", re.DOTALL)
_COUNT = re.compile(r"^(?P<n>\d+) (?P<reason>.+)$", re.DOTALL)


Triple = tuple[int, int, int]  # millicores, bytes, pods


@dataclass
class NodeUsage:
    """A node's allocatable and requested (cpu, memory, pods) before the simulated queue; subclasses add
    the requests after it (simulate) or under policies A and B (compare)."""

    name: str
    zone: str | None
    allocatable: Triple
    before: Triple

    def pct(self, which: str, i: int) -> float | None:
        """Percent of allocatable the field ``which`` requests, for resource ``i`` of the triple."""
        return percent(getattr(self, which)[i], self.allocatable[i])


@dataclass
class Card:
    label: str
    value: str
    note: str = ""
    tone: str = ""  # "good", "bad" or "" (neutral)


@dataclass
class Extra:
    """A top-level key of the result this report does not know (a newer engine's addition), shown as is."""

    name: str
    table_id: str | None = None
    text: str | None = None


@dataclass
class Page:
    """What a report template receives besides its own charts: title, cards, tables, extras."""

    kind: str
    title: str
    subtitle: str
    cards: list[Card] = field(default_factory=list)
    tables: dict[str, Table] = field(default_factory=dict)
    extras: list[Extra] = field(default_factory=list)


def reason_histogram(placement: Mapping[str, Any]) -> dict[str, int]:
    """A failed pod's FitError histogram (reason -> nodes): the JSON's ``reasons`` when present, else read
    back from the 1.9 message; an error that is not a FitError counts once as itself."""
    reasons = placement.get("reasons")
    if isinstance(reasons, dict) and reasons:
        return {str(k): int(v) for k, v in reasons.items() if isinstance(v, int)}
    return fit_error_histogram(str(placement.get("error") or ""))


def fit_error_histogram(message: str) -> dict[str, int]:
    """``0/12 nodes are available: 1 NodeNotReady, 12 Insufficient cpu.`` -> {reason: nodes}."""
    m = _FIT_ERROR.match(message.strip())
    if not m:
        return {message: 1} if message else {}
    out: dict[str, int] = {}
    for part in re.split(r", (?=\d+ )", m.group("histogram")):
        c = _COUNT.match(part)
        if c:
            out[c.group("reason")] = out.get(c.group("reason"), 0) + int(c.group("n"))
    return out


def reason_text(reason: str) -> str:
    """A 1.9 reason with its plain-language description when it has one."""
    d = describe(reason)
    return reason if d == reason else f"{reason} ({d})"


def cell_text(value: Any, limit: int = 300) -> str:
    """A value of an unknown key, as one short line (a list of objects as ``k=v, ...; k=v, ...``)."""
    if value is None:
        return ""
    if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
        text = "; ".join(", ".join(f"{k}={cell_text(v)}" for k, v in item.items() if v not in (None, "", [], {}, False))
                         for item in value)
    else:
        text = value if isinstance(value, str) else json.dumps(value, separators=(", ", ": "), default=str)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def unknown_keys(obj: Mapping[str, Any], known: Iterable[str]) -> list[str]:
    known = set(known)
    return [k for k in obj if k not in known]


def extras(data: Mapping[str, Any], known: Iterable[str], page: Page) -> None:
    """Add a section per unknown top-level key: a table for a list of objects, else the value as text."""
    for key in unknown_keys(data, known):
        value = data[key]
        if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
            names = list(dict.fromkeys(k for v in value for k in v))[:12]
            table = Table(f"extra-{len(page.extras)}", [Column(n) for n in names])
            table.rows = [[cell_text(v.get(n)) for n in names] for v in value]
            page.tables[table.id] = table
            page.extras.append(Extra(key, table_id=table.id))
        else:
            page.extras.append(Extra(key, text=cell_text(value, limit=4000)))


def plural(n: int, word: str, words: str | None = None) -> str:
    return f"{n:,} {word if n == 1 else (words or word + 's')}"
