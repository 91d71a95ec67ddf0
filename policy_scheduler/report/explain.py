"""The explain report's data: the node × predicate verdict grid, the node × priority scores, host and tie set."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from markupsafe import Markup

from . import charts
from .common import Card, Page, extras, fit_error_histogram, plural, reason_text
from .tables import Column, Table

TOP_HEATMAP = 30
KNOWN_KEYS = ("kind", "algorithm", "pod", "host", "error", "nodes", "extenders")


@dataclass
class Verdict:
    fit: bool | None  # None: not evaluated (an extender that never saw the node)
    reasons: list[str] = field(default_factory=list)
    error: str | None = None

    @property
    def text(self) -> str:
        if self.error:
            return f"error: {self.error}"
        return "; ".join(reason_text(r) for r in self.reasons) or ("fits" if self.fit else "does not fit")


@dataclass
class NodeModel:
    name: str
    fit: bool
    predicates: dict[str, Verdict]
    extenders: dict[str, Verdict]
    scores: dict[str, tuple[int, int]]  # priority (or "extender <url>") -> (score, weight)
    total: int | None
    host: bool = False
    tie: bool = False


@dataclass
class ExplainModel:
    pod: str
    host: str | None
    error: str | None
    algorithm: str | None
    predicates: list[str]
    extenders: list[str]
    priorities: list[str]
    weights: dict[str, int | None]
    nodes: list[NodeModel]  # host first, then the tie set, the other feasible nodes by total, the rest by name
    calls: list[dict[str, Any]]

    @property
    def feasible(self) -> list[NodeModel]:
        return [n for n in self.nodes if n.fit]

    @property
    def tie_set(self) -> list[str]:
        return [n.name for n in self.nodes if n.tie]


def _verdict(raw: Any) -> Verdict:
    if not isinstance(raw, dict):
        return Verdict(None)
    return Verdict(raw.get("fit"), [str(r) for r in raw.get("reasons") or ()], raw.get("error"))


def node_model(name: str, raw: Mapping[str, Any]) -> NodeModel:
    scores: dict[str, tuple[int, int]] = {}
    for p, s in (raw.get("priorities") or {}).items():
        if isinstance(s, dict) and isinstance(s.get("score"), int):
            scores[p] = (s["score"], s.get("weight") if isinstance(s.get("weight"), int) else 1)
    extenders = {}
    for x, v in (raw.get("extenders") or {}).items():
        extenders[x] = _verdict(v)
        if isinstance(v, dict) and isinstance(v.get("score"), int):
            scores[f"extender {x}"] = (v["score"], v.get("weight") if isinstance(v.get("weight"), int) else 1)
    return NodeModel(name, bool(raw.get("fit")), {p: _verdict(v) for p, v in (raw.get("predicates") or {}).items()},
                     extenders, scores, raw.get("total") if isinstance(raw.get("total"), int) else None)


def prepare(data: Mapping[str, Any]) -> ExplainModel:
    nodes = [node_model(name, raw) for name, raw in (data.get("nodes") or {}).items()]
    host = data.get("host")
    predicates = list(dict.fromkeys(p for n in nodes for p in n.predicates))
    extenders = list(dict.fromkeys(x for n in nodes for x in n.extenders))
    priorities = list(dict.fromkeys(p for n in nodes if n.fit for p in n.scores))
    weights: dict[str, int | None] = {p: next((n.scores[p][1] for n in nodes if p in n.scores), None) for p in priorities}
    totals = [n.total for n in nodes if n.fit and n.total is not None]
    best = max(totals, default=None)
    for n in nodes:
        n.host = n.name == host
        # selectHost picks round-robin among the nodes with the highest total: that set is the tie set
        n.tie = n.fit and (n.host if best is None else n.total == best)
    nodes.sort(key=lambda n: (not n.host, not n.tie, not n.fit, -(n.total or 0) if n.fit else 0, n.name))
    return ExplainModel(
        pod=str(data.get("pod")), host=host, error=data.get("error"), algorithm=data.get("algorithm"),
        predicates=predicates, extenders=extenders, priorities=priorities, weights=weights, nodes=nodes,
        calls=[c for c in data.get("extenders") or () if isinstance(c, dict)],
    )


def failure_counts(model: ExplainModel) -> list[tuple[str, list[str]]]:
    """Each predicate (and extender filter) that rejected a node, with the nodes it rejected, most first."""
    out: dict[str, list[str]] = {}
    for n in model.nodes:
        for p, v in n.predicates.items():
            if v.fit is False:
                out.setdefault(p, []).append(n.name)
        for x, v in n.extenders.items():
            if v.fit is False:
                out.setdefault(f"extender {x}", []).append(n.name)
    return sorted(out.items(), key=lambda kv: (-len(kv[1]), kv[0]))


def failure_chart(model: ExplainModel) -> Markup:
    bars = []
    for name, nodes in failure_counts(model):
        shown = ", ".join(nodes[:8]) + (f" and {len(nodes) - 8} more" if len(nodes) > 8 else "")
        bars.append(charts.Bar(name, len(nodes), f"{name} rejects {plural(len(nodes), 'node')}: {shown}", charts.FAIL_COLOR))
    return charts.bar_chart(bars, "Nodes each predicate rejects", lambda v: f"{int(v)}")


def reason_chart(model: ExplainModel) -> Markup:
    hist = fit_error_histogram(model.error or "")
    bars = [charts.Bar(r, n, f"{plural(n, 'node')}: {reason_text(r)}", charts.FAIL_COLOR)
            for r, n in sorted(hist.items(), key=lambda kv: (-kv[1], kv[0]))]
    return charts.bar_chart(bars, "The FitError: nodes per reason", lambda v: f"{int(v)}")


def heatmap(model: ExplainModel, top: int = TOP_HEATMAP) -> Markup:
    feasible = [n for n in model.nodes if n.fit][:top]
    columns = [charts.HeatColumn(p, model.weights[p]) for p in model.priorities]
    rows = [charts.HeatRow(n.name, [n.scores[p][0] if p in n.scores else None for p in model.priorities], n.total,
                           n.host, n.tie) for n in feasible]
    return charts.heatmap(rows, columns, "Priority scores of the feasible nodes")


def _row_class(n: NodeModel) -> str:
    return " ".join(c for c, on in (("host", n.host), ("tie", n.tie), ("fit", n.fit), ("nofit", not n.fit)) if on)


def grid_table(model: ExplainModel) -> Table:
    table = Table("grid", [
        Column("Node"), Column("Fits", title="the node passes every predicate (and extender filter)"),
        Column("Total", "num", "int"),
        *[Column(p, "verdict", vertical=True, title=p) for p in model.predicates],
        *[Column(f"extender {x}", "verdict", vertical=True, title=f"extender filter {x}") for x in model.extenders],
        Column("", "class"),
    ], presets=[("feasible", "fit"), ("infeasible", "nofit"), ("tie set", "tie")], page_size=25)
    for n in model.nodes:
        cells = [_verdict_cell(table, n.predicates.get(p)) for p in model.predicates]
        cells += [_verdict_cell(table, n.extenders.get(x)) for x in model.extenders]
        table.rows.append([n.name, "yes" if n.fit else "no", n.total if n.fit else None, *cells, _row_class(n)])
    return table


def _verdict_cell(table: Table, v: Verdict | None) -> int | None:
    if v is None or v.fit is None:
        return None
    if v.fit and not v.error:
        return 0
    return table.pool.ref(v.text) + 1


def score_table(model: ExplainModel) -> Table:
    table = Table("scores", [
        Column("Node"),
        *[Column(p, "heat", weight=model.weights[p], vertical=True, title=f"{p} (weight {model.weights[p]})")
          for p in model.priorities],
        Column("Total", "num", "int"), Column("", "class"),
    ], presets=[("tie set", "tie")], page_size=25, empty="No node fits, so no node was scored.")
    for n in model.feasible:
        table.rows.append([n.name, *[n.scores[p][0] if p in n.scores else None for p in model.priorities], n.total,
                           _row_class(n)])
    return table


def cards(model: ExplainModel) -> list[Card]:
    feasible = len(model.feasible)
    ties = model.tie_set
    out = [
        Card("Pod", model.pod),
        Card("Result", model.host or "unschedulable", "chosen host" if model.host else "FitError",
             "good" if model.host else "bad"),
        Card("Feasible nodes", f"{feasible:,} / {len(model.nodes):,}", "pass every predicate"),
    ]
    if model.host:
        out.append(Card("Tie set", f"{len(ties):,}", "highest total: round-robin picks one" if len(ties) > 1
                        else "a single best node"))
    return out


def context(data: Mapping[str, Any]) -> dict[str, Any]:
    """Everything ``explain.html.j2`` shows."""
    model = prepare(data)
    outcome = f"scheduled onto {model.host}" if model.host else "unschedulable"
    page = Page("explain", f"Why {model.pod} lands where it does",
                f"{model.algorithm or 'algorithm not recorded'} · {outcome} · {plural(len(model.nodes), 'node')}",
                cards(model))
    for t in (grid_table(model), score_table(model)):
        page.tables[t.id] = t
    extras(data, KNOWN_KEYS, page)
    feasible = len(model.feasible)
    return {
        "page": page, "model": model,
        "failure_chart": failure_chart(model) if failure_counts(model) else None,
        "reason_chart": reason_chart(model) if model.error else None,
        "heatmap": heatmap(model) if feasible and model.priorities else None,
        "heatmap_shown": min(feasible, TOP_HEATMAP), "feasible": feasible,
        "calls": model.calls,
    }
