"""The simulate report's data: per-node usage before/after by namespace, the queue, zones, spreading, reasons."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from markupsafe import Markup

from . import charts
from .common import Card, NodeUsage, Page, Triple, cell_text, extras, plural, reason_histogram
from .tables import Column, Table
from .units import binary_bytes, cores, cores_text, millicores, pct_text, percent, usage

TOP_NODES = 30
TOP_NAMESPACES = 8
TOP_WORKLOADS = 20
TOP_REASONS = 20
NO_ZONE = "(no zone)"
KNOWN_KEYS = ("kind", "algorithm", "placements", "nodes")
# The placement keys the queue table shows as numbers when the result has them: key, header, format. The virtual
# clock's placedAt (simulate's re-queueing loop, docs/running.md §13) is in seconds.
QUEUE_NUMBERS = (("priority", "Priority", "int"), ("attempts", "Attempts", "int"), ("placedAt", "Placed at", "seconds"))
KNOWN_PLACEMENT_KEYS = ("pod", "node", "error", "requests", "workload", "reasons", "explain", *(k for k, _, _ in QUEUE_NUMBERS))

@dataclass
class NodeModel(NodeUsage):
    after: Triple
    before_by_namespace: dict[str, Triple] = field(default_factory=dict)
    after_by_namespace: dict[str, Triple] = field(default_factory=dict)
    workloads_before: dict[str, int] = field(default_factory=dict)
    workloads_after: dict[str, int] = field(default_factory=dict)

    @property
    def pods_added(self) -> int:
        return self.after[2] - self.before[2]

    @property
    def fullness(self) -> float:
        """How full the node ends up: the larger of its cpu and memory percentages."""
        return max(self.pct("after", 0) or 0, self.pct("after", 1) or 0)


@dataclass
class QueueItem:
    index: int
    pod: str
    workload: str | None
    requests: tuple[int, int] | None
    node: str | None
    error: str | None
    reasons: dict[str, int]
    extra: dict[str, Any]
    numbers: dict[str, float | None] = field(default_factory=dict)  # QUEUE_NUMBERS' keys the placement has

    @property
    def namespace(self) -> str:
        return self.pod.split("/", 1)[0]


@dataclass
class ZoneModel:
    name: str
    nodes: int
    allocatable: Triple
    before: Triple
    after: Triple
    placed: int


@dataclass
class SimulateModel:
    algorithm: str | None
    nodes: list[NodeModel]
    queue: list[QueueItem]
    namespaces: list[str]  # the stacking order: the largest namespaces, then "other"
    zones: list[ZoneModel]
    # workload -> zone -> (pods before, pods after), for the workloads the simulation placed pods of
    spread: list[tuple[str, dict[str, tuple[int, int]]]]
    unplaced_without_workload: int
    reasons: list[tuple[str, int, int]]  # reason, unschedulable pods citing it, nodes in total

    @property
    def scheduled(self) -> int:
        return sum(1 for q in self.queue if q.node)

    @property
    def unschedulable(self) -> int:
        return len(self.queue) - self.scheduled


def _by_namespace(raw: Any) -> dict[str, Triple]:
    return {str(ns): usage(u) for ns, u in raw.items()} if isinstance(raw, dict) else {}


def _counts(raw: Any) -> dict[str, int]:
    return {str(k): int(v) for k, v in raw.items() if isinstance(v, int)} if isinstance(raw, dict) else {}


ALL_NAMESPACES = "all namespaces"


def node_model(raw: Mapping[str, Any]) -> NodeModel:
    before, after = usage(raw.get("requestedBefore")), usage(raw.get("requestedAfter"))
    if "requestedAfterByNamespace" in raw:
        before_ns = _by_namespace(raw.get("requestedBeforeByNamespace"))
        after_ns = _by_namespace(raw.get("requestedAfterByNamespace"))
    else:  # saved before results carried the breakdown: one stack for everything
        before_ns, after_ns = {ALL_NAMESPACES: before}, {ALL_NAMESPACES: after}
    return NodeModel(
        name=str(raw["node"]), zone=raw.get("zone"), allocatable=usage(raw.get("allocatable")),
        before=before, after=after, before_by_namespace=before_ns, after_by_namespace=after_ns,
        workloads_before=_counts(raw.get("workloadsBefore")), workloads_after=_counts(raw.get("workloadsAfter")),
    )


def queue_item(i: int, raw: Mapping[str, Any]) -> QueueItem:
    req = raw.get("requests")
    requests = (millicores(req.get("cpu")), int(req.get("memory") or 0)) if isinstance(req, dict) else None
    node = raw.get("node")
    return QueueItem(
        index=i + 1, pod=str(raw["pod"]), workload=raw.get("workload"), requests=requests, node=node,
        error=raw.get("error"), reasons={} if node else reason_histogram(raw),
        extra={k: raw[k] for k in raw if k not in KNOWN_PLACEMENT_KEYS},
        numbers={k: _number(raw[k]) for k, _, _ in QUEUE_NUMBERS if k in raw},
    )


def _number(value: Any) -> float | None:
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def namespace_order(nodes: Sequence[NodeModel], top: int = TOP_NAMESPACES) -> list[str]:
    """Namespaces by cpu requested after (then memory), the largest ``top``; "other" for the rest."""
    totals: dict[str, tuple[int, int]] = {}
    for n in nodes:
        for ns, (cpu, mem, _) in n.after_by_namespace.items():
            c, m = totals.get(ns, (0, 0))
            totals[ns] = (c + cpu, m + mem)
    ranked = sorted(totals, key=lambda ns: (-totals[ns][0], -totals[ns][1], ns))
    return ranked if len(ranked) <= top else [*ranked[:top], "other"]


def zones(nodes: Sequence[NodeModel]) -> list[ZoneModel]:
    out: dict[str, ZoneModel] = {}
    for n in nodes:
        name = n.zone or NO_ZONE
        z = out.setdefault(name, ZoneModel(name, 0, (0, 0, 0), (0, 0, 0), (0, 0, 0), 0))
        z.nodes += 1
        z.allocatable = _add(z.allocatable, n.allocatable)
        z.before = _add(z.before, n.before)
        z.after = _add(z.after, n.after)
        z.placed += n.pods_added
    return [out[k] for k in sorted(out, key=lambda k: (k == NO_ZONE, k))]


def _add(a: Triple, b: Triple) -> Triple:
    return (a[0] + b[0], a[1] + b[1], a[2] + b[2])


def spreading(nodes: Sequence[NodeModel], top: int = TOP_WORKLOADS) -> list[tuple[str, dict[str, tuple[int, int]]]]:
    """For the workloads that gained pods: their pods per zone before and after, most pods placed first."""
    table: dict[str, dict[str, list[int]]] = {}
    for n in nodes:
        zone = n.zone or NO_ZONE
        for w, count in n.workloads_before.items():
            table.setdefault(w, {}).setdefault(zone, [0, 0])[0] += count
        for w, count in n.workloads_after.items():
            table.setdefault(w, {}).setdefault(zone, [0, 0])[1] += count
    gained = {w: sum(a - b for b, a in zs.values()) for w, zs in table.items()}
    ranked = sorted((w for w in table if gained[w] > 0), key=lambda w: (-gained[w], w))[:top]
    return [(w, {z: (b, a) for z, (b, a) in table[w].items()}) for w in ranked]


def reason_totals(queue: Sequence[QueueItem]) -> list[tuple[str, int, int]]:
    """Each FitError reason: how many unschedulable pods cite it and on how many nodes in all."""
    pods: dict[str, int] = {}
    node_count: dict[str, int] = {}
    for q in queue:
        for reason, n in q.reasons.items():
            pods[reason] = pods.get(reason, 0) + 1
            node_count[reason] = node_count.get(reason, 0) + n
    return sorted(((r, pods[r], node_count[r]) for r in pods), key=lambda t: (-t[1], -t[2], t[0]))


def prepare(data: Mapping[str, Any]) -> SimulateModel:
    nodes = [node_model(n) for n in data.get("nodes") or ()]
    queue = [queue_item(i, p) for i, p in enumerate(data.get("placements") or ())]
    return SimulateModel(
        algorithm=data.get("algorithm"), nodes=nodes, queue=queue, namespaces=namespace_order(nodes),
        zones=zones(nodes), spread=spreading(nodes),
        unplaced_without_workload=sum(1 for q in queue if q.node and not q.workload),
        reasons=reason_totals(queue),
    )


def top_nodes(nodes: Sequence[NodeModel], n: int = TOP_NODES) -> list[NodeModel]:
    """All nodes (in order) when they fit in a chart, else the ``n`` fullest after the simulation."""
    if len(nodes) <= n:
        return list(nodes)
    return sorted(nodes, key=lambda x: (-x.fullness, -x.pods_added, x.name))[:n]


def _collapse(by_ns: Mapping[str, Triple], keep: Sequence[str]) -> dict[str, Triple]:
    out: dict[str, Triple] = {}
    for ns, t in by_ns.items():
        key = ns if ns in keep else "other"
        out[key] = _add(out.get(key, (0, 0, 0)), t)
    return out


PANELS = (charts.UsagePanel("CPU requested", cores_text),
          charts.UsagePanel("Memory requested", binary_bytes),
          charts.UsagePanel("Pods", lambda p: f"{int(p)} pods"))


def usage_chart(model: SimulateModel, shown: Sequence[NodeModel]) -> Markup:
    rows = [charts.UsageRow(n.name, n.zone or "", n.allocatable, _collapse(n.before_by_namespace, model.namespaces),
                            _collapse(n.after_by_namespace, model.namespaces)) for n in shown]
    return charts.usage_chart(rows, PANELS, charts.category_colors(model.namespaces),
                              "Requested resources per node before and after, by namespace")


def utilisation_buckets(nodes: Sequence[NodeModel], i: int, width: int = 10) -> list[charts.Bucket]:
    """How many nodes have requested 0-10 %, 10-20 %, ... of resource ``i`` before and after (100 % in the last)."""
    n = 100 // width
    counts = [[0, 0] for _ in range(n)]
    for node in nodes:
        for s, which in enumerate(("before", "after")):
            pct = node.pct(which, i)
            if pct is not None:
                counts[min(n - 1, max(0, int(pct // width)))][s] += 1
    return [charts.Bucket(f"{k * width}", (b, a)) for k, (b, a) in enumerate(counts)]


def utilisation_chart(model: SimulateModel) -> Markup:
    panels = [(f"{PANELS[i].title}: nodes per bucket", utilisation_buckets(model.nodes, i)) for i in (0, 1)]
    return charts.histogram_chart(panels, ("before", "after"), "Nodes by requested share of allocatable")


def zone_chart(model: SimulateModel) -> Markup:
    rows = []
    for z in model.zones:
        values, tips = [], []
        for i, panel in enumerate(PANELS):
            b, a = percent(z.before[i], z.allocatable[i]), percent(z.after[i], z.allocatable[i])
            values.append((b, a))
            tips.append(f"{z.name}: {panel.fmt(z.before[i])} → {panel.fmt(z.after[i])} of {panel.fmt(z.allocatable[i])}")
        rows.append(charts.PairRow(f"{z.name} (+{z.placed})", values, tips,
                                   title=f"{z.name}: {plural(z.nodes, 'node')}, {plural(z.placed, 'pod')} placed"))
    return charts.paired_chart(rows, [p.title for p in PANELS], ("before", "after"),
                               "Requested resources per zone before and after")


def spread_rows(model: SimulateModel) -> tuple[list[str], list[dict[str, Any]]]:
    """The spreading matrix for the template: zone names, and per workload its cells (before, after, shade)."""
    names = [z.name for z in model.zones]
    rows = []
    for workload, per_zone in model.spread:
        total_after = sum(a for _, a in per_zone.values()) or 1
        cells = []
        for z in names:
            b, a = per_zone.get(z, (0, 0))
            cells.append({"before": b, "after": a, "shade": round(a / total_after, 2),
                          "tip": f"{workload} in {z}: {b} before, {a} after"})
        rows.append({"workload": workload, "cells": cells, "added": sum(a - b for b, a in per_zone.values())})
    return names, rows


def reason_chart(model: SimulateModel) -> Markup:
    bars = [charts.Bar(r, pods, f"{plural(pods, 'unschedulable pod')} cite “{r}”, on {plural(nodes, 'node')} in all",
                       charts.FAIL_COLOR, note=f"({plural(nodes, 'node')})")
            for r, pods, nodes in model.reasons[:TOP_REASONS]]
    return charts.bar_chart(bars, "Why pods are unschedulable: pods per reason", lambda v: f"{int(v)}")


def queue_table(model: SimulateModel) -> Table:
    extra_names = list(dict.fromkeys(k for q in model.queue for k in q.extra))
    numbers = [(k, label, fmt) for k, label, fmt in QUEUE_NUMBERS if any(k in q.numbers for q in model.queue)]
    table = Table("queue", [
        Column("#", "num", "int"), Column("Pod"), Column("Workload"), Column("CPU (cores)", "num", "cores"),
        Column("Memory", "num", "bytes"), Column("Node"), Column("Reason", pooled=True, wide=True),
        *[Column(label, "num", fmt) for _, label, fmt in numbers],
        *[Column(n) for n in extra_names], Column("", "class"),
    ], presets=[("unschedulable", "fail"), ("scheduled", "ok")], page_size=25)
    for q in model.queue:
        cpu, mem = q.requests if q.requests else (None, None)
        table.rows.append([
            q.index, q.pod, q.workload or "", cpu, mem, q.node or "unschedulable",
            table.pool.ref(q.error or ""), *[q.numbers.get(k) for k, _, _ in numbers],
            *[cell_text(q.extra.get(n)) for n in extra_names],
            "ok" if q.node else "fail",
        ])
    return table


def node_table(model: SimulateModel) -> Table:
    table = Table("nodes", [
        Column("Node"), Column("Zone"), Column("CPU before", "bar", "pct"), Column("CPU after", "bar", "pct"),
        Column("Memory before", "bar", "pct"), Column("Memory after", "bar", "pct"),
        Column("Pods before", "num", "int"), Column("Pods after", "num", "int"), Column("Pods change", "num", "int"),
        Column("CPU allocatable (cores)", "num", "cores"), Column("Memory allocatable", "num", "bytes"),
        Column("Pods allocatable", "num", "int"), Column("", "class"),
    ], presets=[("changed", "changed")], page_size=25)
    for n in model.nodes:
        table.rows.append([
            n.name, n.zone or "", n.pct("before", 0), n.pct("after", 0), n.pct("before", 1), n.pct("after", 1),
            n.before[2], n.after[2], n.pods_added, n.allocatable[0], n.allocatable[1], n.allocatable[2],
            "changed" if n.after != n.before else "",
        ])
    return table


def cards(model: SimulateModel) -> list[Card]:
    alloc = before = after = (0, 0, 0)
    for n in model.nodes:
        alloc, before, after = _add(alloc, n.allocatable), _add(before, n.before), _add(after, n.after)
    zone_names = [z.name for z in model.zones if z.name != NO_ZONE]
    return [
        Card("Pending pods", f"{len(model.queue):,}", "in queue order"),
        Card("Scheduled", f"{model.scheduled:,}", "assumed before the next pod", "good" if model.scheduled else ""),
        Card("Unschedulable", f"{model.unschedulable:,}", "FitError", "bad" if model.unschedulable else "good"),
        Card("Nodes", f"{len(model.nodes):,}", plural(len(zone_names), "zone") if zone_names else "no zone labels"),
        Card("Cluster CPU requested", f"{pct_text(percent(before[0], alloc[0]))} → {pct_text(percent(after[0], alloc[0]))}",
             f"{cores(after[0])} of {cores_text(alloc[0])}"),
        Card("Cluster memory requested",
             f"{pct_text(percent(before[1], alloc[1]))} → {pct_text(percent(after[1], alloc[1]))}",
             f"{binary_bytes(after[1])} of {binary_bytes(alloc[1])}"),
    ]


def context(data: Mapping[str, Any]) -> dict[str, Any]:
    """Everything ``simulate.html.j2`` shows."""
    model = prepare(data)
    shown = top_nodes(model.nodes)
    page = Page("simulate", "Simulation of the pending queue",
                f"{model.algorithm or 'algorithm not recorded'} · {plural(len(model.queue), 'pending pod')} "
                f"on {plural(len(model.nodes), 'node')}", cards(model))
    for t in (queue_table(model), node_table(model)):
        page.tables[t.id] = t
    extras(data, KNOWN_KEYS, page)
    zone_names, spread = spread_rows(model)
    colors = charts.category_colors(model.namespaces)
    return {
        "page": page, "model": model,
        "usage_chart": usage_chart(model, shown) if shown else None,
        "utilisation_chart": utilisation_chart(model) if model.nodes else None,
        "nodes_shown": len(shown), "namespace_colors": colors,
        "zone_chart": zone_chart(model) if model.zones else None,
        "zone_names": zone_names, "spread": spread,
        "reason_chart": reason_chart(model) if model.reasons else None,
    }
