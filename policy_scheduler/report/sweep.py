"""The sweep report's data: per scenario, the algorithms side by side over every snapshot (how full they fill
the nodes, what they leave unschedulable or how many copies fit, how each differs from the first algorithm
per snapshot), then every row."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from markupsafe import Markup

from . import charts
from .common import Card, Page, extras, plural
from .tables import Column, Table
from .units import millicores, pct_text, seconds_text

KNOWN_KEYS = ("kind", "spec", "snapshots", "algorithms", "scenarios", "metrics", "schedulerName", "executor", "cells",
              "finished", "failed", "interrupted", "rows")
FAILED = "failed"


@dataclass
class Difference:
    """One snapshot, one algorithm against the first one, in one scenario."""

    placed: int | None
    nodes_used: int | None
    cpu_mean: float | None  # percentage points
    tip: str
    tone: str  # "good", "bad" or ""
    error: str | None = None


@dataclass
class ScenarioView:
    index: int
    name: str
    kind: str
    utilisation: Markup | None
    counts: Markup | None
    counts_title: str
    totals: list[dict[str, Any]]
    differences: list[tuple[str, list[Difference]]] = field(default_factory=list)


@dataclass
class SweepModel:
    snapshots: list[str]
    algorithms: list[str]
    scenarios: list[tuple[str, str]]
    rows: list[Mapping[str, Any]]
    cells: int
    failed: int
    interrupted: bool
    executor: str

    def row(self, snapshot: str, algorithm: str, scenario: str) -> Mapping[str, Any] | None:
        return self._index.get((snapshot, algorithm, scenario))

    def __post_init__(self) -> None:
        self._index = {(r.get("snapshot"), r.get("algorithm"), r.get("scenario")): r for r in self.rows}


def _names(items: Any, key: str) -> list[str]:
    return [str(i.get(key)) if isinstance(i, dict) else str(i) for i in items or ()]


def prepare(data: Mapping[str, Any]) -> SweepModel:
    rows = [r for r in data.get("rows") or () if isinstance(r, dict)]
    snapshots = _names(data.get("snapshots"), "name") or list(dict.fromkeys(str(r.get("snapshot")) for r in rows))
    algorithms = _names(data.get("algorithms"), "label") or list(dict.fromkeys(str(r.get("algorithm")) for r in rows))
    scenarios = [(str(s.get("name")), str(s.get("kind", ""))) if isinstance(s, dict) else (str(s), "")
                 for s in data.get("scenarios") or ()]
    scenarios = scenarios or [(n, "") for n in dict.fromkeys(str(r.get("scenario")) for r in rows)]
    return SweepModel(snapshots, algorithms, scenarios, rows, int(data.get("cells") or len(rows)),
                      sum(1 for r in rows if r.get("error")), bool(data.get("interrupted")), str(data.get("executor", "")))


def pct(fraction: Any) -> float | None:
    return None if fraction is None else round(100 * float(fraction), 1)


def _colors(model: SweepModel) -> list[str]:
    return [charts.PALETTE[i % len(charts.PALETTE)] for i in range(len(model.algorithms))]


def utilisation_chart(model: SweepModel, scenario: str) -> Markup | None:
    """Per snapshot, a bar per algorithm: mean requested cpu and memory (% of allocatable), p90 and max marked."""
    rows = []
    for snapshot in model.snapshots:
        values, marks, tips = [], [], []
        for resource in ("cpu", "memory"):
            got = [model.row(snapshot, a, scenario) or {} for a in model.algorithms]
            dist = [g.get(resource) or {} for g in got]
            values.append([pct(d.get("mean")) for d in dist])
            marks.append([[(k, pct(d[k])) for k in ("p90", "max") if d.get(k) is not None] for d in dist])
            tips.append(f"{snapshot} · {resource}: " + "; ".join(
                f"{a} mean {pct_text(pct(d.get('mean')))}, p90 {pct_text(pct(d.get('p90')))}, max {pct_text(pct(d.get('max')))}"
                if d.get("mean") is not None else f"{a}: no result" for a, d in zip(model.algorithms, dist)))
        rows.append(charts.PairRow(snapshot, values, tips, marks=marks))
    if not any(v is not None for r in rows for panel in r.values for v in panel):
        return None
    return charts.paired_chart(rows, ("CPU requested (mean; | p90, max)", "Memory requested (mean; | p90, max)"),
                               model.algorithms, f"Utilisation under each algorithm, {scenario}", colors=_colors(model))


def counts_chart(model: SweepModel, scenario: str, kind: str) -> tuple[Markup | None, str]:
    """Unschedulable pods (or, for capacity, the copies that fit) per snapshot and algorithm."""
    colors = _colors(model)
    bars = []
    for snapshot in model.snapshots:
        for a, algorithm in enumerate(model.algorithms):
            row = model.row(snapshot, algorithm, scenario) or {}
            if kind == "capacity":
                value = (row.get("capacity") or {}).get("replicas")
                tip = f"{snapshot} · {algorithm}: {value} copies fit" + (
                    f"; stopped by: {row['capacity']['stopReason']}" if (row.get("capacity") or {}).get("stopReason") else "")
            else:
                unschedulable = row.get("unschedulable") or {}
                value = unschedulable.get("total")
                reasons = ", ".join(f"{n} {r}" for r, n in (unschedulable.get("byReason") or {}).items())
                tip = f"{snapshot} · {algorithm}: {value} unschedulable" + (f" ({reasons})" if reasons else "")
            if value is None:
                continue
            bars.append(charts.Bar(f"{snapshot} · {algorithm}", value, tip, colors[a]))
    title = "Copies that fit" if kind == "capacity" else "Unschedulable pods"
    return (charts.bar_chart(bars, f"{title}, {scenario}") if bars else None), title


def differences(model: SweepModel, scenario: str) -> list[tuple[str, list[Difference]]]:
    """Per snapshot, each algorithm after the first against the first: pods placed, nodes used, mean cpu."""
    base_name = model.algorithms[0]
    out = []
    for snapshot in model.snapshots:
        base = model.row(snapshot, base_name, scenario) or {}
        cells = []
        for algorithm in model.algorithms[1:]:
            row = model.row(snapshot, algorithm, scenario) or {}
            if row.get("error") or base.get("error") or not row or not base:
                error = row.get("error") or base.get("error") or "no result"
                cells.append(Difference(None, None, None, f"{snapshot} · {algorithm}: {error}", "", error))
                continue
            placed = _delta(row.get("placed"), base.get("placed"))
            used = _delta(row.get("nodesUsed"), base.get("nodesUsed"))
            cpu = _delta(pct((row.get("cpu") or {}).get("mean")), pct((base.get("cpu") or {}).get("mean")))
            tip = (f"{snapshot}: {algorithm} against {base_name}: pods placed {base.get('placed')} → {row.get('placed')}, "
                   f"nodes used {base.get('nodesUsed')} → {row.get('nodesUsed')}, mean cpu "
                   f"{pct_text(pct((base.get('cpu') or {}).get('mean')))} → {pct_text(pct((row.get('cpu') or {}).get('mean')))}")
            tone = "good" if (placed or 0) > 0 else "bad" if (placed or 0) < 0 else ""
            cells.append(Difference(placed, used, None if cpu is None else round(cpu, 1), tip, tone))
        out.append((snapshot, cells))
    return out


def _delta(a: Any, b: Any) -> Any:
    return None if a is None or b is None else a - b


def totals(model: SweepModel, scenario: str) -> list[dict[str, Any]]:
    """Each algorithm over every snapshot: pods placed, unschedulable, copies that fit, failed cells."""
    out = []
    for algorithm in model.algorithms:
        got = [model.row(s, algorithm, scenario) for s in model.snapshots]
        done = [r for r in got if r is not None and not r.get("error")]
        out.append({
            "algorithm": algorithm,
            "placed": sum(r.get("placed") or 0 for r in done),
            "unschedulable": sum((r.get("unschedulable") or {}).get("total") or 0 for r in done),
            "nodesUsed": sum(r.get("nodesUsed") or 0 for r in done),
            "nodes": sum(r.get("nodes") or 0 for r in done),
            "failed": sum(1 for r in got if r is not None and r.get("error")),
            "missing": sum(1 for r in got if r is None),
        })
    return out


def rows_table(model: SweepModel) -> Table:
    table = Table("rows", [
        Column("Snapshot"), Column("Algorithm"), Column("Scenario"), Column("Placed", "num", "int"),
        Column("Unschedulable", "num", "int"), Column("CPU mean", "bar", "pct"), Column("CPU p90", "bar", "pct"),
        Column("Memory mean", "bar", "pct"), Column("Memory p90", "bar", "pct"), Column("Nodes used", "num", "int"),
        Column("Largest free CPU (cores)", "num", "cores"), Column("Largest free memory", "num", "bytes"),
        Column("Zone skew (pods)", "num", "int"), Column("Preemptions", "num", "int"), Column("Time", "num", "seconds"),
        Column("Error", pooled=True, wide=True), Column("", "class"),
    ], presets=[("failed cells", FAILED)], page_size=25, empty="No cell has finished.")
    for r in model.rows:
        cpu, memory, free = r.get("cpu") or {}, r.get("memory") or {}, r.get("largestFree") or {}
        table.rows.append([
            r.get("snapshot"), r.get("algorithm"), r.get("scenario"), r.get("placed"),
            (r.get("unschedulable") or {}).get("total"), pct(cpu.get("mean")), pct(cpu.get("p90")),
            pct(memory.get("mean")), pct(memory.get("p90")), r.get("nodesUsed"),
            millicores(free["cpu"]) if free.get("cpu") is not None else None, free.get("memory"),
            (r.get("zoneSkew") or {}).get("max"), (r.get("preemptions") or {}).get("count"), r.get("wallSeconds"),
            table.pool.ref(r.get("error") or ""), FAILED if r.get("error") else "",
        ])
    return table


def cards(model: SweepModel) -> list[Card]:
    seconds = sum(r.get("wallSeconds") or 0 for r in model.rows)
    out = [
        Card("Cells", f"{len(model.rows):,} / {model.cells:,}", "interrupted" if model.interrupted else "finished",
             "bad" if model.interrupted else ""),
        Card("Failed cells", f"{model.failed:,}", "their rows say why", "bad" if model.failed else "good"),
        Card("Snapshots", f"{len(model.snapshots):,}"), Card("Algorithms", f"{len(model.algorithms):,}"),
        Card("Scenarios", f"{len(model.scenarios):,}"),
    ]
    if any("wallSeconds" in r for r in model.rows):
        out.append(Card("Cell time", seconds_text(seconds), f"on {model.executor}" if model.executor else ""))
    return out


def context(data: Mapping[str, Any]) -> dict[str, Any]:
    """Everything ``sweep.html.j2`` shows."""
    model = prepare(data)
    page = Page("sweep", f"{plural(len(model.snapshots), 'snapshot')} × {plural(len(model.algorithms), 'algorithm')} × "
                         f"{plural(len(model.scenarios), 'scenario')}",
                f"{plural(len(model.rows), 'cell')} of {model.cells:,}" + (f" · {model.failed:,} failed" if model.failed else ""),
                cards(model))
    table = rows_table(model)
    page.tables[table.id] = table
    extras(data, KNOWN_KEYS, page)
    views = []
    for i, (name, kind) in enumerate(model.scenarios):
        counts, title = counts_chart(model, name, kind)
        views.append(ScenarioView(i, name, kind, utilisation_chart(model, name), counts, title, totals(model, name),
                                  differences(model, name) if len(model.algorithms) > 1 else []))
    return {"page": page, "model": model, "scenarios": views,
            "algorithm_colors": dict(zip(model.algorithms, _colors(model)))}

