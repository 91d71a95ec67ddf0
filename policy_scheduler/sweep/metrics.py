"""A cell's measures, from what ``simulate`` or ``capacity`` returned (docs/sweep.md defines each).

Over the cluster after the cell (the snapshot's bound pods and every pod the cell placed):

* ``cpu`` / ``memory``: requested over allocatable of every node with some of that resource allocatable, as
  fractions; their mean, 90th percentile (nearest rank) and maximum, rounded to 4 decimals;
* ``nodes`` / ``nodesUsed``: the nodes, and those running at least one pod that is not a DaemonSet's;
* ``largestFree``: the most cpu free on any one node and the most memory free on any one node (allocatable
  minus requested; perhaps two different nodes), among the nodes a new pod could use: not cordoned and not
  NotReady;
* ``zoneSkew``: per workload (controller) with a pod in the cell's queue, the largest minus the smallest
  number of its pods in one zone, over every zone of the cluster's nodes (a zone without one of its pods
  counts 0);

and of the queue: pods ``placed``, ``gated``, ``unschedulable`` (each counted once under its main reason:
the FitError reason that rejected the most nodes, ties by name; else the error itself), ``preemptions``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

from ..cache.cluster import ClusterState
from ..model.pod import Pod
from ..offline.driver import PREEMPTED_BY
from ..offline.report import reason_counts
from ..offline.results import NodeUsage, Placement, SimulationResult, node_zone, workload_of
from ..offline.simulate import CapacityResult

PREEMPTED = "preempted"


def simulation_metrics(result: SimulationResult, metrics: Sequence[str]) -> dict[str, Any]:
    """The measures of a simulated queue, those of ``metrics`` only, in the rows' order."""
    failed = [p for p in result.placements if p.node is None]
    queued = [p.pod for p in result.placements] + list(result.gated)
    out: dict[str, Any] = {}
    if "placed" in metrics:
        out.update(pending=len(queued), placed=result.scheduled, gated=len(result.gated))
    if "unschedulable" in metrics:
        out["unschedulable"] = {"total": len(failed), "byReason": by_reason(failed)}
    out.update(cluster_metrics(result.cluster, metrics))
    if "zoneSkew" in metrics:
        workloads = {w for w in map(workload_of, queued) if w is not None}
        out["zoneSkew"] = zone_skew(result.cluster, workloads)
    if "preemptions" in metrics:
        preemptions = result.pod_priority.preemptions if result.pod_priority is not None else []
        out["preemptions"] = {"count": len(preemptions), "victims": sum(len(p.victims) for p in preemptions)}
    return out


def capacity_metrics(result: CapacityResult, template: Pod, metrics: Sequence[str]) -> dict[str, Any]:
    """The measures of a capacity count: its copies are the pods placed, nothing is left unschedulable."""
    assert result.cluster is not None
    out: dict[str, Any] = {}
    if "placed" in metrics:
        out.update(pending=0, placed=result.replicas, gated=0)
    if "unschedulable" in metrics:
        out["unschedulable"] = {"total": 0, "byReason": {}}
    out.update(cluster_metrics(result.cluster, metrics))
    if "zoneSkew" in metrics:
        out["zoneSkew"] = copies_zone_skew(result, template)
    if "preemptions" in metrics:
        out["preemptions"] = {"count": 0, "victims": 0}
    out["capacity"] = {"replicas": result.replicas, "stopReason": result.stop_reason,
                       "limitedByMax": result.limited_by_max}
    return out


def by_reason(failed: Iterable[Placement]) -> dict[str, int]:
    """Unschedulable pods per main reason, most pods first (ties by reason)."""
    counts: dict[str, int] = {}
    for p in failed:
        reason = main_reason(p)
        counts[reason] = counts.get(reason, 0) + 1
    return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def main_reason(p: Placement) -> str:
    if p.failed:
        return next(iter(reason_counts(p.failed)))
    error = (p.error or "").strip()
    if error.startswith(PREEMPTED_BY):
        return PREEMPTED
    return error.splitlines()[0] if error else "unknown"


def cluster_metrics(cluster: ClusterState, metrics: Sequence[str]) -> dict[str, Any]:
    usage = NodeUsage.of(cluster)
    out: dict[str, Any] = {}
    if "cpu" in metrics:
        out["cpu"] = distribution([u.cpu_requested / u.cpu_allocatable for u in usage.values() if u.cpu_allocatable > 0])
    if "memory" in metrics:
        out["memory"] = distribution([u.memory_requested / u.memory_allocatable
                                      for u in usage.values() if u.memory_allocatable > 0])
    if "nodesUsed" in metrics:
        used = sum(1 for name in usage if any(not _daemon(p) for p in cluster.node_infos[name].pods))
        out.update(nodes=len(usage), nodesUsed=used)
    if "largestFree" in metrics:
        out["largestFree"] = largest_free(cluster, usage)
    return out


def distribution(values: Sequence[float]) -> dict[str, float | None]:
    """Mean, 90th percentile (nearest rank) and maximum, rounded to 4 decimals (all None for no values)."""
    if not values:
        return {"mean": None, "p90": None, "max": None}
    ordered = sorted(values)
    p90 = ordered[max(0, math.ceil(0.9 * len(ordered)) - 1)]
    return {"mean": round(math.fsum(ordered) / len(ordered), 4), "p90": round(p90, 4), "max": round(ordered[-1], 4)}


def largest_free(cluster: ClusterState, usage: dict[str, NodeUsage]) -> dict[str, Any]:
    usable = [n.name for n in cluster.node_list()
              if not n.unschedulable and n.condition_status("Ready") in ("", "True")]
    cpu = max(usable, key=lambda n: (usage[n].cpu_allocatable - usage[n].cpu_requested, n), default=None)
    memory = max(usable, key=lambda n: (usage[n].memory_allocatable - usage[n].memory_requested, n), default=None)
    return {
        "cpu": None if cpu is None else f"{max(0, usage[cpu].cpu_allocatable - usage[cpu].cpu_requested)}m",
        "cpuNode": cpu,
        "memory": None if memory is None else max(0, usage[memory].memory_allocatable - usage[memory].memory_requested),
        "memoryNode": memory,
    }


def zone_skew(cluster: ClusterState, workloads: set[str]) -> dict[str, Any]:
    """Max minus min pods per zone of each workload (None: no workload, or the nodes have no zones)."""
    zones = _zones(cluster)
    counts: dict[str, dict[str, int]] = {w: {} for w in workloads}
    for node in cluster.node_list():
        zone = zones.get(node.name)
        if zone is None:
            continue
        for pod in cluster.node_infos[node.name].pods:
            per_zone = counts.get(workload_of(pod) or "")
            if per_zone is not None:
                per_zone[zone] = per_zone.get(zone, 0) + 1
    return _skews(counts, set(zones.values()))


def copies_zone_skew(result: CapacityResult, template: Pod) -> dict[str, Any]:
    """The skew of the copies a capacity count placed, as one workload."""
    per_zone: dict[str, int] = {}
    for node, count in result.placements.items():
        zone = result.zones.get(node)
        if zone is not None:
            per_zone[zone] = per_zone.get(zone, 0) + count
    name = f"copies of {workload_of(template) or 'Pod ' + template.ref}"
    return _skews({name: per_zone} if result.replicas else {}, {z for z in result.zones.values() if z is not None})


def _skews(counts: dict[str, dict[str, int]], zones: set[str]) -> dict[str, Any]:
    if not zones or not counts:
        return {"max": None, "workloads": {}}
    skews = {w: max(c.get(z, 0) for z in zones) - min(c.get(z, 0) for z in zones) for w, c in sorted(counts.items())}
    return {"max": max(skews.values()), "workloads": skews}


def _zones(cluster: ClusterState) -> dict[str, str]:
    return {n.name: z for n in cluster.node_list() if (z := node_zone(n.labels)) is not None}


def _daemon(pod: Pod) -> bool:
    ref = pod.controller_ref()
    return ref is not None and ref.kind == "DaemonSet"
