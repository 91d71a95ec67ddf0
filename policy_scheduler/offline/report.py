"""Rendering offline results: the JSON shapes other tools depend on, and readable tables."""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import Any

from ..core.explain import Explanation, ExtenderVerdict
from ..core.modern_pods import gates_message
from ..model.pod import Pod
from ..predicates.reasons import describe
from ..terminal import FULL, Layout, text_table
from .priority_report import (
    add_priority_to_simulation,
    bound_by_name_note,
    explanation_extras,
    node_extras,
    preemption_lines,
    preemptions_table,
)
from .results import NodeUsage, Placement, SimulationResult, workload_of
from .simulate import GATED, CapacityResult, Difference

# The "kind" each command's JSON carries, so a saved result can be told apart (policy-scheduler report).
SIMULATE_KIND, EXPLAIN_KIND, CAPACITY_KIND, COMPARE_KIND = "SimulateResult", "ExplainResult", "CapacityResult", "CompareResult"
SWEEP_KIND = "SweepResult"  # policy-scheduler sweep (policy_scheduler.sweep)


@cache
def explain_schema() -> dict[str, Any]:
    return result_schema("explain")


@cache
def result_schema(command: str) -> dict[str, Any]:
    """The JSON Schema of ``command``'s ``-o json`` output (simulate, explain, capacity, compare)."""
    return json.loads(resources.files(__package__).joinpath(f"schema/{command}.schema.json").read_text())


def explain_result_to_dict(e: Explanation, algorithm: str | None = None) -> dict[str, Any]:
    """``explain -o json``: the explanation, tagged with its kind and the algorithm that made it."""
    out: dict[str, Any] = {"kind": EXPLAIN_KIND, **explanation_to_dict(e)}
    if algorithm is not None:
        out["algorithm"] = algorithm
    return out


def explanation_to_dict(e: Explanation) -> dict[str, Any]:
    nodes = {}
    for name, n in e.nodes.items():
        predicates = {}
        for pname, r in n.predicates.items():
            entry: dict[str, Any] = {"fit": r.fit, "reasons": [str(x) for x in r.reasons]}
            if r.error is not None:
                entry["error"] = r.error
            predicates[pname] = entry
        priorities = {p: {"score": s, "weight": w} for p, (s, w) in n.priorities.items()} if n.fit else {}
        extenders = {x: _verdict_to_dict(v, n.fit) for x, v in n.extenders.items()}
        nodes[name] = {"fit": n.fit, "predicates": predicates, "priorities": priorities,
                       "extenders": extenders, "total": n.total if n.fit else None, **node_extras(n.nominated_pods)}
    calls = []
    for c in e.extenders:
        call: dict[str, Any] = {"extender": c.extender, "verb": c.verb, "outcome": c.outcome}
        if c.error is not None:
            call["error"] = c.error
        calls.append(call)
    out = {"pod": e.pod, "host": e.host, "error": e.error, "nodes": nodes, "extenders": calls, **explanation_extras(e)}
    if e.volumes:
        out["volumes"] = [a.to_dict() for a in e.volumes]
    if e.gates:
        out["gated"] = list(e.gates)
    if e.devices:
        out["devices"] = [d.to_dict() for d in e.devices]
    return out


def _verdict_to_dict(v: ExtenderVerdict, node_fit: bool) -> dict[str, Any]:
    """An extender's filter verdict on a node and, for a node that fits, its score and weight."""
    scored = node_fit and v.score is not None
    return {"fit": v.fit, "reasons": [str(x) for x in v.reasons], "score": v.score if scored else None,
            "weight": v.weight if scored else None}


def _requested(u: NodeUsage) -> dict[str, Any]:
    return {"cpu": f"{u.cpu_requested}m", "memory": u.memory_requested, "pods": u.pods}


def _by_namespace(u: NodeUsage) -> dict[str, Any]:
    return {ns: {"cpu": f"{cpu}m", "memory": mem, "pods": pods} for ns, (cpu, mem, pods) in sorted(u.by_namespace.items())}


def usage_to_dict(before: NodeUsage, after: NodeUsage) -> dict[str, Any]:
    return {
        "node": before.name,
        "allocatable": {"cpu": f"{before.cpu_allocatable}m", "memory": before.memory_allocatable, "pods": before.pods_allocatable},
        "requestedBefore": _requested(before),
        "requestedAfter": _requested(after),
        "zone": before.zone,
        "requestedBeforeByNamespace": _by_namespace(before),
        "requestedAfterByNamespace": _by_namespace(after),
        "workloadsBefore": dict(sorted(before.workloads.items())),
        "workloadsAfter": dict(sorted(after.workloads.items())),
    }


def reason_counts(failed: dict[str, list[str]]) -> dict[str, int]:
    """A FitError's histogram (reason -> nodes), most frequent first: the counts of its message."""
    counts: dict[str, int] = {}
    for reasons in failed.values():
        for r in reasons:
            counts[str(r)] = counts.get(str(r), 0) + 1
    return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def pod_requests(pod: Pod) -> dict[str, Any]:
    """The cpu and memory request PodFitsResources checks (containers summed, max with each init container)."""
    return {"cpu": f"{pod.request.milli_cpu}m", "memory": pod.request.memory}


def placement_to_dict(p: Placement) -> dict[str, Any]:
    out: dict[str, Any] = {"pod": p.pod.ref, "node": p.node, "error": p.error,
                           "requests": pod_requests(p.pod), "workload": workload_of(p.pod),
                           "attempts": p.attempts, "placedAt": p.placed_at}
    if p.failed is not None:
        out["reasons"] = reason_counts(p.failed)
    if p.explanation is not None:
        out["explain"] = explanation_to_dict(p.explanation)
    if p.volumes:
        out["volumes"] = [a.to_dict() for a in p.volumes]
    if p.claims:
        out["claims"] = p.claims
    return out


def gated_to_dict(pod: Pod) -> dict[str, Any]:
    """A pending pod kept out of the queue by its scheduling gates (cluster rules)."""
    return {"pod": pod.ref, "gates": list(pod.scheduling_gates), "message": gates_message(pod.scheduling_gates),
            "requests": pod_requests(pod), "workload": workload_of(pod)}


def simulation_to_dict(result: SimulationResult, algorithm: str | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"kind": SIMULATE_KIND}
    if algorithm is not None:
        out["algorithm"] = algorithm
    out["schedulingQueue"] = result.queue
    out["placements"] = [placement_to_dict(p) for p in result.placements]
    if result.gated:  # cluster rules (the HTML report shows an unknown key's objects as a table of its own)
        out["gated"] = [gated_to_dict(pod) for pod in result.gated]
    out["nodes"] = [usage_to_dict(result.before[n], result.after[n]) for n in result.before]
    add_priority_to_simulation(out, result)
    return out


def capacity_to_dict(result: CapacityResult, *, pod: Pod | None = None, max_replicas: int | None = None,
                     algorithm: str | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"kind": CAPACITY_KIND, "replicas": result.replicas, "placements": result.placements,
                           "stopReason": result.stop_reason}
    if algorithm is not None:
        out["algorithm"] = algorithm
    if pod is not None:
        out["pod"] = pod.ref
        out["requests"] = pod_requests(pod)
    out["max"] = max_replicas
    out["stopReasons"] = reason_counts(result.stop_failures)
    if result.gates:
        out["gated"] = list(result.gates)
    out["nodes"] = [
        {"node": name, "zone": zone, "replicas": result.placements.get(name, 0),
         "reasons": [str(x) for x in result.stop_failures.get(name, ())]}
        for name, zone in result.zones.items()
    ]
    return out


def differences_to_dict(label_a: str, label_b: str, diffs: list[Difference], total: int,
                        a: SimulationResult | None = None, b: SimulationResult | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {
        "kind": COMPARE_KIND,
        "a": label_a,
        "b": label_b,
        "pods": total,
        "differences": [
            {"pod": d.pod, "a": {"node": d.a_node, "error": d.a_error}, "b": {"node": d.b_node, "error": d.b_error}}
            for d in diffs
        ],
    }
    if a is not None and b is not None:
        out["scheduled"] = {"a": a.scheduled, "b": b.scheduled}
        out["nodes"] = [
            {"node": name, "zone": before.zone,
             "allocatable": {"cpu": f"{before.cpu_allocatable}m", "memory": before.memory_allocatable,
                             "pods": before.pods_allocatable},
             "requestedBefore": _requested(before), "requestedA": _requested(a.after[name]),
             "requestedB": _requested(b.after[name])}
            for name, before in a.before.items()
        ]
    return out


# -- tables ---------------------------------------------------------------------------------------
def _gib(n: int) -> str:
    return f"{n / 2**30:.1f}Gi"


def _pct(used: int, alloc: int) -> str:
    return f"{100 * used // alloc}%" if alloc else "-"


#: The usage table's columns a narrow terminal loses first (allocatable, then before, then pods).
USAGE_DROPS = ("CPU ALLOC", "MEM ALLOC", "CPU BEFORE", "MEM BEFORE", "PODS")


def simulation_table(result: SimulationResult, layout: Layout = FULL) -> str:
    """``simulate``'s tables: the queue, gated pods, volumes, devices, preemptions, then the nodes' usage."""
    # Attempts and the (virtual) time of the bind, once a retry placed some pod.
    retried = any(p.attempts > 1 and p.node for p in result.placements)
    rows = [["POD", "NODE", *(["ATTEMPTS", "PLACED AT"] if retried else []), "REASON"]]
    for p in result.placements:
        timing = [str(p.attempts), "-" if p.placed_at is None else f"{p.placed_at:g}s"] if retried else []
        rows.append([p.pod.ref, p.node or "-", *timing, p.error or ""])
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
    if result.gated:
        summary = (f"{result.scheduled}/{len(result.placements)} pending pods scheduled; {len(result.gated)} more "
                   "gated (not queued until their scheduling gates are removed).")
        gated = [["GATED POD", "GATES"], *[[p.ref, ", ".join(p.scheduling_gates)] for p in result.gated]]
        summary += f"\n\n{text_table(gated, layout, wrap=('GATES',))}"
    volumes = [[p.pod.ref, a.claim, "PV " + (a.volume or "") if a.action == "bind" else "provisioned", a.node]
               for p in result.placements for a in p.volumes]
    if volumes:
        summary += "\n\nVolumes (late-bound claims):\n" + text_table([["POD", "CLAIM", "VOLUME", "NODE"], *volumes], layout,
                                                                  wrap=("VOLUME",))
    devices = [[p.pod.ref, c["claim"], ", ".join(c["devices"]), p.node or "", "allocated" if c["allocated"] else "shared"]
               for p in result.placements for c in p.claims]
    if devices:
        summary += "\n\nDevices (ResourceClaims):\n" + text_table([["POD", "CLAIM", "DEVICES", "NODE", ""], *devices],
                                                               layout, drop=("",), wrap=("DEVICES",))
    preemptions = preemptions_table(result, layout=layout)
    summary += f"\n\n{preemptions}" if preemptions else ""
    queue = text_table(rows, layout, drop=("PLACED AT", "ATTEMPTS"), wrap=("REASON",))
    return f"{queue}\n\n{summary}\n\n{text_table(usage, layout, drop=USAGE_DROPS)}"


def explanation_table(e: Explanation, layout: Layout = FULL) -> str:
    """``explain``'s verdicts per node, the priority scores of the feasible ones, and preemption."""
    if e.gates:
        return (f"Pod {e.pod}: gated: {e.error}. It is not queued, so no node is considered, until its scheduling "
                "gates are removed.")
    head = f"Pod {e.pod}: " + (f"scheduled onto {e.host}" if e.host else f"unschedulable: {e.error}")
    rows = [["NODE", "FIT", "TOTAL", "FAILED PREDICATES"]]
    for name, n in e.nodes.items():
        failed = []
        for pname, r in n.predicates.items():
            if r.error:
                failed.append(f"{pname}: error: {r.error}" + (f" (reasons: {', '.join(r.reasons)})" if r.reasons else ""))
            elif not r.fit:
                texts = ", ".join(f"{reason} ({describe(reason)})" if describe(reason) != reason else reason for reason in r.reasons)
                failed.append(texts if list(r.reasons) == [pname] else f"{pname}: {texts}")
        for extender, v in n.extenders.items():
            if v.fit is False:
                failed.append(f"extender {extender}: {', '.join(v.reasons) or 'filtered out'}")
        total = "" if not n.fit or n.total is None else str(n.total)
        rows.append([name, "yes" if n.fit else "no", total, "; ".join(failed)])
    out = [head, *bound_by_name_note(e)]
    out += [f"Volume: {a}" for a in e.volumes]
    out += ["", text_table(rows, layout, drop=("TOTAL",), wrap=("FAILED PREDICATES",))]
    if e.devices:
        out += ["", "Devices (DynamicResources):", *(f"  {d}" for d in e.devices)]
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
        scores = prio_rows[0][1:-1]  # each priority's column: the detail of TOTAL, dropped right to left
        out += ["", "Priority scores of the feasible nodes (score x weight summed into TOTAL):",
                text_table(prio_rows, layout, drop=scores[::-1])]
    out += preemption_lines(e, layout)
    return "\n".join(out)


def _extender_score(v: ExtenderVerdict | None) -> str:
    return "" if v is None or v.score is None else str(v.score)


def capacity_table(result: CapacityResult, max_replicas: int | None, layout: Layout = FULL) -> str:
    if result.gates:
        return (f"The pod is gated ({result.stop_reason}): no copy of it would be scheduled while its scheduling "
                "gates remain, so none is counted.")
    lines = [f"{result.replicas} more replicas fit."]
    if result.placements:
        lines.append("")
        lines.append(text_table([["NODE", "REPLICAS"], *[[n, str(c)] for n, c in result.placements.items()]], layout))
    if result.stop_reason:
        lines += ["", f"Stopped by: {result.stop_reason}"]
    elif max_replicas is not None:
        lines += ["", f"Stopped at --max {max_replicas}."]
    return "\n".join(lines)


def differences_table(label_a: str, label_b: str, diffs: list[Difference], total: int, layout: Layout = FULL) -> str:
    if not diffs:
        return f"All {total} pending pods land on the same nodes under {label_a} and {label_b}."
    rows = [["POD", f"A: {label_a}", f"B: {label_b}"]]
    for d in diffs:
        rows.append([d.pod, d.a_node or _not_placed(d.a_error), d.b_node or _not_placed(d.b_error)])
    columns = rows[0][1:]  # what A and B did: a node, or a FitError that wraps
    return f"{len(diffs)} of {total} pending pods land differently.\n\n{text_table(rows, layout, wrap=columns)}"


def _not_placed(error: str | None) -> str:
    return error if (error or "").startswith(f"{GATED}: ") else f"unschedulable: {error}"
