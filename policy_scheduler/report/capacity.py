"""The capacity report's data: replicas per node and zone, and what stopped the count on each node."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from markupsafe import Markup

from . import charts
from .common import Card, Page, extras, fit_error_histogram, plural, reason_text
from .tables import Column, Table
from .units import binary_bytes, cores_text, millicores

TOP_NODES = 40
KNOWN_KEYS = ("kind", "algorithm", "replicas", "placements", "stopReason", "pod", "requests", "max", "stopReasons",
              "nodes")


@dataclass
class NodeModel:
    name: str
    zone: str | None
    replicas: int
    reasons: list[str]


@dataclass
class CapacityModel:
    replicas: int
    pod: str | None
    requests: tuple[int, int] | None
    algorithm: str | None
    stop_reason: str | None
    stop_reasons: dict[str, int]
    max: int | None
    nodes: list[NodeModel]

    @property
    def zones(self) -> dict[str, int]:
        """Zone -> replicas, for the nodes whose zone is known."""
        out: dict[str, int] = {}
        for n in self.nodes:
            if n.zone:
                out[n.zone] = out.get(n.zone, 0) + n.replicas
        return dict(sorted(out.items()))


def prepare(data: Mapping[str, Any]) -> CapacityModel:
    placements = {str(k): int(v) for k, v in (data.get("placements") or {}).items()}
    if isinstance(data.get("nodes"), list):
        nodes = [NodeModel(str(n["node"]), n.get("zone"), int(n.get("replicas") or 0), [str(r) for r in n.get("reasons") or ()])
                 for n in data["nodes"] if isinstance(n, dict) and "node" in n]
    else:  # a result saved before the per-node breakdown: the nodes that got replicas
        nodes = [NodeModel(name, None, count, []) for name, count in placements.items()]
    stop_reasons = data.get("stopReasons")
    if not isinstance(stop_reasons, dict):
        stop_reasons = fit_error_histogram(data.get("stopReason") or "")
    req = data.get("requests")
    return CapacityModel(
        replicas=int(data.get("replicas") or 0), pod=data.get("pod"),
        requests=(millicores(req.get("cpu")), int(req.get("memory") or 0)) if isinstance(req, dict) else None,
        algorithm=data.get("algorithm"), stop_reason=data.get("stopReason"),
        stop_reasons={str(k): int(v) for k, v in stop_reasons.items()}, max=data.get("max"), nodes=nodes,
    )


def replicas_chart(model: CapacityModel) -> tuple[Markup, dict[str, str]]:
    placed = sorted((n for n in model.nodes if n.replicas), key=lambda n: (-n.replicas, n.name))[:TOP_NODES]
    colors = charts.category_colors(sorted({n.zone or "(no zone)" for n in placed}))
    bars = [charts.Bar(n.name, n.replicas,
                       f"{n.name}{' (' + n.zone + ')' if n.zone else ''}: {plural(n.replicas, 'replica')}"
                       + (f"; then {'; '.join(reason_text(r) for r in n.reasons)}" if n.reasons else ""),
                       colors[n.zone or "(no zone)"]) for n in placed]
    return charts.bar_chart(bars, "Replicas per node", lambda v: f"{int(v)}"), colors


def zone_chart(model: CapacityModel) -> Markup:
    colors = charts.category_colors(list(model.zones))
    bars = [charts.Bar(z, count, f"{z}: {plural(count, 'replica')}", colors[z]) for z, count in model.zones.items()]
    return charts.bar_chart(bars, "Replicas per zone", lambda v: f"{int(v)}")


def stop_chart(model: CapacityModel) -> Markup:
    bars = [charts.Bar(r, n, f"{plural(n, 'node')}: {reason_text(r)}", charts.FAIL_COLOR)
            for r, n in sorted(model.stop_reasons.items(), key=lambda kv: (-kv[1], kv[0]))]
    return charts.bar_chart(bars, "What stopped the count: nodes per reason", lambda v: f"{int(v)}")


def node_table(model: CapacityModel) -> Table:
    table = Table("nodes", [
        Column("Node"), Column("Zone"), Column("Replicas", "num", "int"),
        Column("Why no more fit", pooled=True, wide=True), Column("", "class"),
    ], presets=[("with replicas", "placed"), ("without", "none")], page_size=25)
    for n in sorted(model.nodes, key=lambda n: (-n.replicas, n.name)):
        why = "; ".join(reason_text(r) for r in n.reasons) if n.reasons else (
            f"stopped at --max {model.max}" if model.stop_reason is None and model.max is not None else "")
        table.rows.append([n.name, n.zone or "", n.replicas, table.pool.ref(why), "placed" if n.replicas else "none"])
    return table


def cards(model: CapacityModel) -> list[Card]:
    placed_on = sum(1 for n in model.nodes if n.replicas)
    req = f"{cores_text(model.requests[0])}, {binary_bytes(model.requests[1])}" if model.requests else ""
    stopped = "--max reached" if model.stop_reason is None else "no node fits one more"
    return [
        Card("More replicas fit", f"{model.replicas:,}", stopped, "good" if model.replicas else "bad"),
        Card("Pod", model.pod or "(not recorded)", req),
        Card("Nodes used", f"{placed_on:,} / {len(model.nodes):,}", "get at least one replica"),
    ]


def context(data: Mapping[str, Any]) -> dict[str, Any]:
    """Everything ``capacity.html.j2`` shows."""
    model = prepare(data)
    page = Page("capacity", f"Capacity for {model.pod or 'the pod'}",
                f"{model.algorithm or 'algorithm not recorded'} · {plural(model.replicas, 'more replica')} fit",
                cards(model))
    table = node_table(model)
    page.tables[table.id] = table
    extras(data, KNOWN_KEYS, page)
    chart, zone_colors = replicas_chart(model) if any(n.replicas for n in model.nodes) else (None, {})
    return {
        "page": page, "model": model, "replicas_chart": chart, "zone_colors": zone_colors,
        "nodes_with_replicas": sum(1 for n in model.nodes if n.replicas), "top_nodes": TOP_NODES,
        "zone_chart": zone_chart(model) if model.zones else None,
        "stop_chart": stop_chart(model) if model.stop_reasons else None,
    }
