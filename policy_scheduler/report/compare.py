"""The compare report's data: the pods that move as node-to-node flows, and utilisation under A and B."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from markupsafe import Markup

from . import charts
from .common import Card, NodeUsage, Page, Triple, extras, plural
from .tables import Column, Table
from .units import binary_bytes, cores_text, usage

UNSCHEDULABLE = "unschedulable"
TOP_FLOW_NODES = 14
TOP_NODES = 30
KNOWN_KEYS = ("kind", "a", "b", "pods", "differences", "scheduled", "nodes")



@dataclass
class Move:
    pod: str
    a_node: str | None
    a_error: str | None
    b_node: str | None
    b_error: str | None

    @property
    def source(self) -> str:
        return self.a_node or UNSCHEDULABLE

    @property
    def target(self) -> str:
        return self.b_node or UNSCHEDULABLE

    @property
    def kind(self) -> str:
        if self.a_node and not self.b_node:
            return "lost"
        if self.b_node and not self.a_node:
            return "gained"
        return "moved"


@dataclass
class NodeModel(NodeUsage):
    a: Triple
    b: Triple

    @property
    def difference(self) -> float:
        """How differently A and B fill the node: the summed gaps of the cpu and memory percentages."""
        return sum(abs((self.pct("a", i) or 0) - (self.pct("b", i) or 0)) for i in (0, 1))


@dataclass
class CompareModel:
    a: str
    b: str
    pods: int
    moves: list[Move]
    scheduled: tuple[int, int] | None
    nodes: list[NodeModel]


def prepare(data: Mapping[str, Any]) -> CompareModel:
    moves = []
    for d in data.get("differences") or ():
        a, b = d.get("a") or {}, d.get("b") or {}
        moves.append(Move(str(d["pod"]), a.get("node"), a.get("error"), b.get("node"), b.get("error")))
    sched = data.get("scheduled")
    nodes = [NodeModel(str(n["node"]), n.get("zone"), usage(n.get("allocatable")), usage(n.get("requestedBefore")),
                       usage(n.get("requestedA")), usage(n.get("requestedB")))
             for n in data.get("nodes") or () if isinstance(n, dict) and "node" in n]
    return CompareModel(str(data.get("a")), str(data.get("b")), int(data.get("pods") or 0), moves,
                        (int(sched["a"]), int(sched["b"])) if isinstance(sched, dict) else None, nodes)


def flows(moves: Sequence[Move], top: int = TOP_FLOW_NODES, group: Callable[[str], str] | None = None,
          ) -> tuple[list[charts.Flow], list[tuple[str, int]], list[tuple[str, int]]]:
    """Moves grouped by (node under A, node under B), or by what ``group`` maps a node to (its zone); beyond
    the ``top`` busiest entries of a side, the rest is one "other nodes" entry. Returns the flows and each
    side's entries with their pod counts."""
    def grouped_name(name: str) -> str:
        return name if group is None or name == UNSCHEDULABLE else group(name)

    def keep(names: Sequence[str]) -> dict[str, str]:
        counts: dict[str, int] = {}
        for n in names:
            counts[n] = counts.get(n, 0) + 1
        ranked = sorted(counts, key=lambda n: (n != UNSCHEDULABLE, -counts[n], n))
        others = ranked[top:]
        label = f"{len(others)} other nodes"
        return {n: (label if n in others else n) for n in counts}

    left_of = keep([grouped_name(m.source) for m in moves])
    right_of = keep([grouped_name(m.target) for m in moves])
    grouped: dict[tuple[str, str], list[str]] = {}
    for m in moves:
        grouped.setdefault((left_of[grouped_name(m.source)], right_of[grouped_name(m.target)]), []).append(m.pod)
    out = []
    for (src, dst), pods in grouped.items():
        shown = ", ".join(pods[:6]) + (f" and {len(pods) - 6} more" if len(pods) > 6 else "")
        out.append(charts.Flow(src, dst, len(pods), f"{plural(len(pods), 'pod')}: {src} → {dst}: {shown}"))

    def side(index: int) -> list[tuple[str, int]]:
        totals: dict[str, int] = {}
        for f in out:
            name = (f.source, f.target)[index]
            totals[name] = totals.get(name, 0) + f.count
        return sorted(totals.items(), key=lambda kv: (kv[0] == UNSCHEDULABLE, kv[0].endswith(" other nodes"), -kv[1], kv[0]))

    left, right = side(0), side(1)
    order_l = {n: i for i, (n, _) in enumerate(left)}
    order_r = {n: i for i, (n, _) in enumerate(right)}
    out.sort(key=lambda f: (order_l[f.source], order_r[f.target]))
    return out, left, right


def flow_chart(model: CompareModel) -> Markup:
    fl, left, right = flows(model.moves)
    return charts.flow_chart(fl, left, right, (f"A: {model.a}", f"B: {model.b}"), "Pods that land differently")


def zone_flow_chart(model: CompareModel) -> Markup | None:
    """The same moves between zones (None when the nodes are not in several zones)."""
    zones = {n.name: n.zone or "(no zone)" for n in model.nodes}
    if len(set(zones.values())) < 2 or not model.moves:
        return None
    fl, left, right = flows(model.moves, group=lambda name: zones.get(name, "(no zone)"))
    return charts.flow_chart(fl, left, right, (f"A: {model.a}", f"B: {model.b}"), "Pods that land differently, by zone")


PANELS = ("CPU requested", "Memory requested", "Pods")
FORMATS = (cores_text, binary_bytes, lambda p: f"{int(p)} pods")


def top_nodes(model: CompareModel, n: int = TOP_NODES) -> list[NodeModel]:
    """The nodes A and B fill most differently (all of them when they fit in the chart)."""
    if len(model.nodes) <= n:
        return list(model.nodes)
    return sorted(model.nodes, key=lambda x: (-x.difference, x.name))[:n]


def utilisation_chart(model: CompareModel, shown: Sequence[NodeModel]) -> Markup:
    rows = []
    for node in shown:
        values, tips = [], []
        for i, fmt in enumerate(FORMATS):
            values.append((node.pct("a", i), node.pct("b", i)))
            tips.append(f"{node.name}: A {fmt(node.a[i])}, B {fmt(node.b[i])} of {fmt(node.allocatable[i])} "
                        f"(before the queue: {fmt(node.before[i])})")
        rows.append(charts.PairRow(node.name, values, tips, title=f"{node.name} ({node.zone or 'no zone'})"))
    return charts.paired_chart(rows, PANELS, (f"A: {model.a}", f"B: {model.b}"), "Utilisation under A and B")


def moves_table(model: CompareModel) -> Table:
    table = Table("moves", [
        Column("Pod"), Column("A"), Column("A error", "tip", pooled=True, tip_for=1), Column("B"),
        Column("B error", "tip", pooled=True, tip_for=3), Column("Change"), Column("", "class"),
    ], presets=[("moved", "moved"), ("unschedulable under B", "lost"), ("unschedulable under A", "gained")],
        page_size=25, empty="Every pod lands on the same node under A and B.")
    for m in model.moves:
        table.rows.append([m.pod, m.a_node or UNSCHEDULABLE, table.pool.ref(m.a_error or ""), m.b_node or UNSCHEDULABLE,
                           table.pool.ref(m.b_error or ""), {"lost": "now unschedulable", "gained": "now scheduled",
                                                             "moved": "other node"}[m.kind], m.kind])
    return table


def node_table(model: CompareModel) -> Table:
    table = Table("nodes", [
        Column("Node"), Column("Zone"), Column("CPU A", "bar", "pct"), Column("CPU B", "bar", "pct"),
        Column("Memory A", "bar", "pct"), Column("Memory B", "bar", "pct"), Column("Pods A", "num", "int"),
        Column("Pods B", "num", "int"), Column("Pods B − A", "num", "int"), Column("", "class"),
    ], presets=[("different", "diff")], page_size=25)
    for n in model.nodes:
        table.rows.append([n.name, n.zone or "", n.pct("a", 0), n.pct("b", 0), n.pct("a", 1), n.pct("b", 1),
                           n.a[2], n.b[2], n.b[2] - n.a[2], "diff" if n.a != n.b else ""])
    return table


def cards(model: CompareModel) -> list[Card]:
    out = [
        Card("A", model.a), Card("B", model.b),
        Card("Pods that land differently", f"{len(model.moves):,} / {model.pods:,}", "of the pending queue"),
    ]
    if model.scheduled:
        a, b = model.scheduled
        out.append(Card("Scheduled A → B", f"{a:,} → {b:,}", f"{b - a:+,} pods" if a != b else "same count",
                        "bad" if b < a else "good" if b > a else ""))
    return out


def context(data: Mapping[str, Any]) -> dict[str, Any]:
    """Everything ``compare.html.j2`` shows."""
    model = prepare(data)
    page = Page("compare", f"{model.a} vs {model.b}",
                f"{plural(model.pods, 'pending pod')} · {plural(len(model.moves), 'pod')} land differently", cards(model))
    for t in (moves_table(model), node_table(model)):
        page.tables[t.id] = t
    extras(data, KNOWN_KEYS, page)
    shown = top_nodes(model)
    return {
        "page": page, "model": model,
        "flow_chart": flow_chart(model) if model.moves else None,
        "zone_flow_chart": zone_flow_chart(model),
        "utilisation_chart": utilisation_chart(model, shown) if shown else None,
        "nodes_shown": len(shown), "series_colors": charts.SERIES_COLORS,
    }
