"""Rendering offline results: the JSON shapes other tools depend on, and readable tables."""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import Any

from ..core.generic_scheduler import Explanation, ExtenderVerdict
from ..predicates.reasons import describe
from .simulate import CapacityResult, Difference, NodeUsage, Placement, SimulationResult


@cache
def explain_schema() -> dict[str, Any]:
    return json.loads(resources.files(__package__).joinpath("schema/explain.schema.json").read_text())


def explanation_to_dict(e: Explanation) -> dict[str, Any]:
    nodes = {}
    for name, n in e.nodes.items():
        predicates = {}
        for pname, r in n.predicates.items():
            entry: dict[str, Any] = {"fit": r.fit, "reasons": list(r.reasons)}
            if r.error is not None:
                entry["error"] = r.error
            predicates[pname] = entry
        priorities = {p: {"score": s, "weight": w} for p, (s, w) in n.priorities.items()} if n.fit else {}
        extenders = {x: _verdict_to_dict(v, n.fit) for x, v in n.extenders.items()}
        nodes[name] = {"fit": n.fit, "predicates": predicates, "priorities": priorities,
                       "extenders": extenders, "total": n.total if n.fit else None}
    calls = []
    for c in e.extenders:
        call: dict[str, Any] = {"extender": c.extender, "verb": c.verb, "outcome": c.outcome}
        if c.error is not None:
            call["error"] = c.error
        calls.append(call)
    return {"pod": e.pod, "host": e.host, "error": e.error, "nodes": nodes, "extenders": calls}


def _verdict_to_dict(v: ExtenderVerdict, node_fit: bool) -> dict[str, Any]:
    """An extender's filter verdict on a node and, for a node that fits, its score and weight."""
    scored = node_fit and v.score is not None
    return {"fit": v.fit, "reasons": list(v.reasons), "score": v.score if scored else None,
            "weight": v.weight if scored else None}


def usage_to_dict(before: NodeUsage, after: NodeUsage) -> dict[str, Any]:
    return {
        "node": before.name,
        "allocatable": {"cpu": f"{before.cpu_allocatable}m", "memory": before.memory_allocatable, "pods": before.pods_allocatable},
        "requestedBefore": {"cpu": f"{before.cpu_requested}m", "memory": before.memory_requested, "pods": before.pods},
        "requestedAfter": {"cpu": f"{after.cpu_requested}m", "memory": after.memory_requested, "pods": after.pods},
    }


def placement_to_dict(p: Placement) -> dict[str, Any]:
    out: dict[str, Any] = {"pod": p.pod.ref, "node": p.node, "error": p.error}
    if p.explanation is not None:
        out["explain"] = explanation_to_dict(p.explanation)
    return out


def simulation_to_dict(result: SimulationResult) -> dict[str, Any]:
    return {
        "placements": [placement_to_dict(p) for p in result.placements],
        "nodes": [usage_to_dict(result.before[n], result.after[n]) for n in result.before],
    }


def capacity_to_dict(result: CapacityResult) -> dict[str, Any]:
    return {"replicas": result.replicas, "placements": result.placements, "stopReason": result.stop_reason}


def differences_to_dict(label_a: str, label_b: str, diffs: list[Difference], total: int) -> dict[str, Any]:
    return {
        "a": label_a,
        "b": label_b,
        "pods": total,
        "differences": [
            {"pod": d.pod, "a": {"node": d.a_node, "error": d.a_error}, "b": {"node": d.b_node, "error": d.b_error}}
            for d in diffs
        ],
    }


# -- tables ---------------------------------------------------------------------------------------
def _table(rows: list[list[str]]) -> str:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]
    return "\n".join(lines)


def _gib(n: int) -> str:
    return f"{n / 2**30:.1f}Gi"


def _pct(used: int, alloc: int) -> str:
    return f"{100 * used // alloc}%" if alloc else "-"


def simulation_table(result: SimulationResult) -> str:
    rows = [["POD", "NODE", "REASON"]]
    for p in result.placements:
        rows.append([p.pod.ref, p.node or "-", p.error or ""])
    usage = [["NODE", "CPU BEFORE", "CPU AFTER", "CPU ALLOC", "MEM BEFORE", "MEM AFTER", "MEM ALLOC", "PODS"]]
    for name, b in result.before.items():
        a = result.after[name]
        usage.append([
            name,
            f"{b.cpu_requested}m ({_pct(b.cpu_requested, b.cpu_allocatable)})",
            f"{a.cpu_requested}m ({_pct(a.cpu_requested, a.cpu_allocatable)})",
            f"{a.cpu_allocatable}m",
            _gib(b.memory_requested), _gib(a.memory_requested), _gib(a.memory_allocatable),
            f"{b.pods}->{a.pods}/{a.pods_allocatable}",
        ])
    summary = f"{result.scheduled}/{len(result.placements)} pending pods scheduled."
    return f"{_table(rows)}\n\n{summary}\n\n{_table(usage)}"


def explanation_table(e: Explanation) -> str:
    head = f"Pod {e.pod}: " + (f"scheduled onto {e.host}" if e.host else f"unschedulable: {e.error}")
    rows = [["NODE", "FIT", "TOTAL", "FAILED PREDICATES"]]
    for name, n in e.nodes.items():
        failed = []
        for pname, r in n.predicates.items():
            if r.error:
                failed.append(f"{pname}: error: {r.error}")
            elif not r.fit:
                texts = ", ".join(f"{reason} ({describe(reason)})" if describe(reason) != reason else reason for reason in r.reasons)
                failed.append(texts if list(r.reasons) == [pname] else f"{pname}: {texts}")
        for extender, v in n.extenders.items():
            if v.fit is False:
                failed.append(f"extender {extender}: {', '.join(v.reasons) or 'filtered out'}")
        total = "" if not n.fit or n.total is None else str(n.total)
        rows.append([name, "yes" if n.fit else "no", total, "; ".join(failed)])
    out = [head, "", _table(rows)]
    calls = [f"  {c.verb} {c.extender}: {c.outcome}" + (f": {c.error}" if c.error else "")
             for c in e.extenders if c.outcome != "called"]
    if calls:
        out += ["", "Extender calls:", *calls]
    feasible = [(name, n) for name, n in e.nodes.items() if n.fit and n.priorities]
    if feasible:
        first = feasible[0][1]
        names = list(first.priorities)
        extenders = list(dict.fromkeys(x for _, n in feasible for x, v in n.extenders.items() if v.score is not None))
        weights = {x: next(n.extenders[x].weight for _, n in feasible
                           if x in n.extenders and n.extenders[x].weight is not None) for x in extenders}
        prio_rows = [["NODE", *[f"{p} (x{first.priorities[p][1]})" for p in names],
                      *[f"extender {x} (x{weights[x]})" for x in extenders], "TOTAL"]]
        for name, n in feasible:
            prio_rows.append([
                name, *[str(n.priorities[p][0]) if p in n.priorities else "" for p in names],
                *[_extender_score(n.extenders.get(x)) for x in extenders], str(n.total),
            ])
        out += ["", "Priority scores of the feasible nodes (score x weight summed into TOTAL):", _table(prio_rows)]
    return "\n".join(out)


def _extender_score(v: ExtenderVerdict | None) -> str:
    return "" if v is None or v.score is None else str(v.score)


def capacity_table(result: CapacityResult, max_replicas: int | None) -> str:
    lines = [f"{result.replicas} more replicas fit."]
    if result.placements:
        lines.append("")
        lines.append(_table([["NODE", "REPLICAS"], *[[n, str(c)] for n, c in result.placements.items()]]))
    if result.stop_reason:
        lines += ["", f"Stopped by: {result.stop_reason}"]
    elif max_replicas is not None:
        lines += ["", f"Stopped at --max {max_replicas}."]
    return "\n".join(lines)


def differences_table(label_a: str, label_b: str, diffs: list[Difference], total: int) -> str:
    if not diffs:
        return f"All {total} pending pods land on the same nodes under {label_a} and {label_b}."
    rows = [["POD", f"A: {label_a}", f"B: {label_b}"]]
    for d in diffs:
        rows.append([d.pod, d.a_node or f"unschedulable: {d.a_error}", d.b_node or f"unschedulable: {d.b_error}"])
    return f"{len(diffs)} of {total} pending pods land differently.\n\n{_table(rows)}"
