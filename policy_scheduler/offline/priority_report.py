"""Rendering what pod priority and preemption did (gate ``PodPriority``), for ``report``'s JSON and tables.

Nothing here is emitted with the gate off (except the ``spec.nodeName`` note of ``explain``), so the
gate-off output of every command is unchanged.
"""

from __future__ import annotations

from typing import Any

from ..core.explain import Explanation
from ..core.preemption import PreemptionResult, Victims
from ..model.pod import Pod
from ..terminal import FULL, Layout, text_table
from .priority import Preemption, PrioritySimulation
from .results import SimulationResult


def _victim(pod: Pod, node: str | None, pdb: str | None) -> dict[str, Any]:
    return {"pod": pod.ref, "priority": pod.priority, "node": node, "pdb": pdb}


def _victims_to_list(victims: Victims, node: str) -> list[dict[str, Any]]:
    return [_victim(p, node, victims.pdbs[p.key].ref if p.key in victims.pdbs else None) for p in victims.pods]


# -- explain ----------------------------------------------------------------------------------------
def preemption_to_dict(result: PreemptionResult) -> dict[str, Any]:
    """``explain``'s ``preemption``: what ``Preempt`` decides for the pod, and every node's part in it."""
    nodes = {}
    for name, n in result.nodes.items():
        entry: dict[str, Any] = {"outcome": n.outcome, "reasons": list(n.reasons), "detail": n.detail}
        if n.victims is not None:
            entry["victims"] = _victims_to_list(n.victims, name)
            entry["pdbViolations"] = n.victims.num_pdb_violations
        nodes[name] = entry
    return {
        "eligible": result.eligible,
        "node": result.node,
        "victims": [_victim(v, result.node, result.violated_pdbs[v.key].ref if v.key in result.violated_pdbs else None)
                    for v in result.victims],
        "pdbViolations": result.num_pdb_violations,
        "nominationsCleared": [p.ref for p in result.nominated_pods_to_clear],
        "message": result.message,
        "nodes": nodes,
    }


def explanation_extras(e: Explanation) -> dict[str, Any]:
    """The keys ``explain -o json`` adds for a pod bound by name, nominated pods, and preemption."""
    out: dict[str, Any] = {}
    if e.node_name:
        out["nodeName"] = e.node_name
    if e.preemption is not None:
        out["preemption"] = preemption_to_dict(e.preemption)
    return out


def node_extras(nominated_pods: list[str]) -> dict[str, Any]:
    return {"nominatedPods": list(nominated_pods)} if nominated_pods else {}


def bound_by_name_note(e: Explanation) -> list[str]:
    """``explain``'s plain statement about a pod whose ``spec.nodeName`` is set."""
    if not e.node_name:
        return []
    return [
        f"Note: spec.nodeName is {e.node_name}. The scheduler would not schedule this pod: it is bound by name, and",
        f"the kubelet on {e.node_name} admits it by running GeneralPredicates. Below, the pod is evaluated as the",
        f"scheduler's predicates would evaluate it: HostName fails on every node but {e.node_name}.",
    ]


def preemption_lines(e: Explanation, layout: Layout = FULL) -> list[str]:
    """``explain``'s table sections about nominated pods and preemption (empty when neither applies)."""
    out = []
    nominated = [(name, n.nominated_pods) for name, n in e.nodes.items() if n.nominated_pods]
    if nominated:
        out += ["", "Nominated pods of equal or higher priority, counted in the first of the two passes:"]
        out += [f"  {name}: {', '.join(pods)}" for name, pods in nominated]
    result = e.preemption
    if result is None:
        return out
    out += ["", f"Preemption (PodPriority): {result.message}."]
    if result.node is not None:
        if result.victims:
            victims = ", ".join(_victim_text(v, result.violated_pdbs.get(v.key)) for v in result.victims)
            out.append(f"  nominate {result.node}, delete: {victims}")
            out.append(f"  PodDisruptionBudgets violated: {result.num_pdb_violations}")
        else:
            out.append(f"  nominate {result.node}; no pod needs to go")
    if result.nominated_pods_to_clear:
        out.append("  nominations cleared: " + ", ".join(p.ref for p in result.nominated_pods_to_clear))
    if result.nodes:
        rows = [["NODE", "PREEMPTION", "WHY"]]
        for name, n in result.nodes.items():
            rows.append([name, n.outcome, _node_why(n)])
        out += ["", text_table(rows, layout, wrap=("WHY",))]
    return out


def _victim_text(pod: Pod, pdb: Any) -> str:
    text = f"{pod.ref} (priority {pod.priority}"
    return text + (f", PDB {pdb.ref})" if pdb is not None else ")")


def _node_why(n: Any) -> str:
    parts = []
    if n.victims is not None and n.outcome != "does not fit":
        victims = ", ".join(f"{p.ref} ({p.priority})" for p in n.victims.pods) or "none"
        parts.append(f"victims: {victims}; PDB violations: {n.victims.num_pdb_violations}")
    if n.detail:
        parts.append(n.detail)
    if n.reasons and n.outcome != "rejected by an extender":
        parts.append(", ".join(n.reasons))
    return "; ".join(parts)


# -- simulate ---------------------------------------------------------------------------------------
def _preemption_to_dict(p: Preemption) -> dict[str, Any]:
    return {
        "preemptor": p.preemptor.ref,
        "priority": p.preemptor.priority,
        "node": p.node,
        "victims": [{**_victim(v.pod, v.node, v.pdb), "simulated": v.simulated} for v in p.victims],
        "pdbViolations": p.pdb_violations,
        "pdbsViolated": sorted({v.pdb for v in p.victims if v.pdb}),
        "nominationsCleared": [c.ref for c in p.nominations_cleared],
    }


def add_priority_to_simulation(out: dict[str, Any], result: SimulationResult) -> None:
    """Gate on: each placement's priority, attempts and nomination, and every preemption, in order."""
    record: PrioritySimulation | None = result.pod_priority
    if record is None:
        return
    for entry, placement in zip(out["placements"], result.placements):
        progress = record.pods.get(placement.pod.ref)
        if progress is None:
            continue
        entry["priority"] = progress.priority
        entry["attempts"] = progress.attempts
        entry["nominatedNode"] = progress.nominated_node
        entry["preemptedBy"] = progress.preempted_by
        if progress.preemption:
            entry["preemption"] = progress.preemption
    out["preemptions"] = [_preemption_to_dict(p) for p in record.preemptions]
    if record.stopped:
        out["stopped"] = record.stopped


def preemptions_table(result: SimulationResult, title: str = "Preemptions (PodPriority)", layout: Layout = FULL) -> str:
    """The table's section: each preemption with its victims, then the pods left nominated."""
    record: PrioritySimulation | None = result.pod_priority
    if record is None:
        return ""
    if not record.preemptions:
        lines = [f"{title}: none."]
    else:
        rows = [["PREEMPTOR", "PRIORITY", "NODE", "VICTIMS (PRIORITY)", "PDBS VIOLATED"]]
        for p in record.preemptions:
            victims = ", ".join(f"{v.pod.ref} ({v.pod.priority})" for v in p.victims) or "none (room already free)"
            pdbs = ", ".join(sorted({v.pdb for v in p.victims if v.pdb})) or "-"
            rows.append([p.preemptor.ref, str(p.preemptor.priority), p.node, victims, pdbs])
        lines = [f"{title}:", text_table(rows, layout, drop=("PRIORITY",), wrap=("VICTIMS (PRIORITY)", "PDBS VIOLATED"))]
        cleared = [(p.preemptor.ref, c.ref) for p in record.preemptions for c in p.nominations_cleared]
        lines += [f"  {pod} cleared the nomination of {other}" for pod, other in cleared]
    waiting = [(ref, s.nominated_node) for ref, s in record.pods.items() if s.nominated_node]
    lines += [f"  {ref} stays pending, nominated to {node}" for ref, node in waiting]
    if record.stopped:
        lines.append(f"  the simulation {record.stopped}")
    return "\n".join(lines)


def preemptions_of(result: SimulationResult) -> list[dict[str, Any]] | None:
    record: PrioritySimulation | None = result.pod_priority
    return None if record is None else [_preemption_to_dict(p) for p in record.preemptions]


def compare_extras(a: SimulationResult, b: SimulationResult) -> dict[str, Any]:
    """``compare -o json``: each side's preemptions, for a side simulated with PodPriority on."""
    if a.pod_priority is None and b.pod_priority is None:
        return {}
    return {"preemptions": {"a": preemptions_of(a), "b": preemptions_of(b)}}
