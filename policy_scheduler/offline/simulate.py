"""Offline scheduling on a snapshot: simulate a queue, explain one pod, count capacity, compare policies.

The queue is scheduled one pod at a time, each placed pod assumed onto its node before the next, exactly
as the daemon's schedule-one loop does (without binding).
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..cache.cluster import ClusterState
from ..core.generic_scheduler import Explanation, GenericScheduler
from ..errors import SchedulingError
from ..model.pod import Pod
from .snapshot import Snapshot

log = logging.getLogger(__name__)

SchedulerBuilder = Callable[[ClusterState], GenericScheduler]


@dataclass
class Placement:
    pod: Pod
    node: str | None
    error: str | None
    explanation: Explanation | None = None


@dataclass
class NodeUsage:
    """Requested cpu (millicores), memory (bytes) and pod count against allocatable."""

    name: str
    cpu_allocatable: int
    memory_allocatable: int
    pods_allocatable: int
    cpu_requested: int
    memory_requested: int
    pods: int

    @classmethod
    def of(cls, cluster: ClusterState) -> dict[str, NodeUsage]:
        out = {}
        for node in cluster.node_list():
            info = cluster.node_infos[node.name]
            out[node.name] = cls(
                node.name,
                info.allocatable.milli_cpu, info.allocatable.memory, info.allocatable.allowed_pod_number,
                info.requested.milli_cpu, info.requested.memory, len(info.pods),
            )
        return out


@dataclass
class SimulationResult:
    placements: list[Placement]
    before: dict[str, NodeUsage]
    after: dict[str, NodeUsage]
    cluster: ClusterState = field(repr=False)

    @property
    def scheduled(self) -> int:
        return sum(1 for p in self.placements if p.node)


def schedule_one(scheduler: GenericScheduler, pod: Pod, explain: bool = False) -> Placement:
    """Schedule ``pod`` and, if a node was found, assume it there."""
    if explain:
        explanation = scheduler.explain(pod)
        host, error = explanation.host, explanation.error
    else:
        explanation = None
        try:
            host, error = scheduler.schedule(pod), None
        except SchedulingError as e:
            host, error = None, str(e)
    if host is not None:
        scheduler.cluster.assume(pod, host)
        log.info("scheduled pod=%s node=%s", pod.ref, host)
    else:
        log.info("unschedulable pod=%s reason=%r", pod.ref, error)
    return Placement(pod, host, error, explanation)


def simulate(
    snapshot: Snapshot,
    build: SchedulerBuilder,
    *,
    scheduler_name: str = "default-scheduler",
    explain: bool = False,
    progress: Callable[[int], None] | None = None,
) -> SimulationResult:
    cluster = snapshot.cluster_state()
    scheduler = build(cluster)
    before = NodeUsage.of(cluster)
    placements = []
    for pod in snapshot.pending_pods(scheduler_name):
        placements.append(schedule_one(scheduler, pod, explain))
        if progress:
            progress(1)
    return SimulationResult(placements, before, NodeUsage.of(cluster), cluster)


def explain_pod(snapshot: Snapshot, pod: Pod, build: SchedulerBuilder) -> Explanation:
    """Every node's verdict for every predicate, the priority scores of the feasible nodes, the host."""
    cluster = snapshot.cluster_state()
    if pod.key in cluster.pods:
        cluster.remove_pod(cluster.pods[pod.key])
    unbound = pod.with_node_name("") if pod.node_name else pod
    return build(cluster).explain(unbound)


@dataclass
class CapacityResult:
    replicas: int
    placements: dict[str, int]
    stop_reason: str | None
    limited_by_max: bool


def capacity(
    snapshot: Snapshot, template: dict[str, Any], build: SchedulerBuilder, max_replicas: int | None = None
) -> CapacityResult:
    """How many more copies of ``template`` fit (as kubernetes-sigs/cluster-capacity counts them)."""
    cluster = snapshot.cluster_state()
    scheduler = build(cluster)
    meta = template.get("metadata") or {}
    base_name = meta.get("name") or "capacity-pod"
    counts: dict[str, int] = {}
    replicas = 0
    stop_reason = None
    while max_replicas is None or replicas < max_replicas:
        raw = copy.deepcopy(template)
        raw.setdefault("metadata", {})
        raw["metadata"]["name"] = f"{base_name}-{replicas}"
        raw["metadata"]["uid"] = f"capacity-{replicas}"
        raw["metadata"].setdefault("namespace", meta.get("namespace") or "default")
        raw.setdefault("spec", {})["nodeName"] = ""
        placement = schedule_one(scheduler, Pod(raw))
        if placement.node is None:
            stop_reason = placement.error
            break
        counts[placement.node] = counts.get(placement.node, 0) + 1
        replicas += 1
    return CapacityResult(replicas, dict(sorted(counts.items())), stop_reason, stop_reason is None)


@dataclass
class Difference:
    pod: str
    a_node: str | None
    a_error: str | None
    b_node: str | None
    b_error: str | None


def compare(
    snapshot: Snapshot, build_a: SchedulerBuilder, build_b: SchedulerBuilder, scheduler_name: str = "default-scheduler"
) -> tuple[SimulationResult, SimulationResult, list[Difference]]:
    """Simulate the same queue under two algorithms; list the pods that land differently."""
    a = simulate(snapshot, build_a, scheduler_name=scheduler_name)
    b = simulate(snapshot, build_b, scheduler_name=scheduler_name)
    diffs = [
        Difference(pa.pod.ref, pa.node, pa.error, pb.node, pb.error)
        for pa, pb in zip(a.placements, b.placements)
        if pa.node != pb.node
    ]
    return a, b, diffs


def placements_as_pods(placements: Sequence[Placement]) -> list[dict[str, Any]]:
    """The scheduled pods with ``spec.nodeName`` set, ready to apply."""
    out = []
    for p in placements:
        if p.node is None:
            continue
        raw = copy.deepcopy(p.pod.raw)
        raw.setdefault("spec", {})["nodeName"] = p.node
        raw.setdefault("apiVersion", "v1")
        raw.setdefault("kind", "Pod")
        out.append(raw)
    return out
