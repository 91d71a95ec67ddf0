"""Offline scheduling on a snapshot: simulate a queue, explain one pod, count capacity, compare policies.

The queue is scheduled one pod at a time, each placed pod assumed onto its node before the next, exactly
as the daemon's schedule-one loop does (without binding). :func:`simulate` runs that loop, or with the
``PodPriority`` gate :func:`.priority.simulate_with_priority`; what both produce is in :mod:`.results`.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..core.fit_error import FitError, fit_error_message
from ..core.generic_scheduler import Explanation, GenericScheduler
from ..core.modern_pods import gates_message, is_gated
from ..errors import PredicateError, SchedulingError
from ..model.pod import Pod
from ..predicates.volume_binder import (
    VolumeAction,
    VolumeBindingError,
    decide_pod_volumes,
    volume_binder_of,
)
from .priority import simulate_with_priority
from .results import (
    NodeUsage,
    Placement,
    SchedulerBuilder,
    SimulationResult,
    assume_volumes,
    node_zone,
    split_gated,
)
from .snapshot import Snapshot

log = logging.getLogger(__name__)


def schedule_one(scheduler: GenericScheduler, pod: Pod, explain: bool = False) -> Placement:
    """Schedule ``pod`` and, if a node was found, assume it there."""
    failed: dict[str, list[str]] | None = None
    if explain:
        explanation = scheduler.explain(pod)
        host, error = explanation.host, explanation.error
        if host is None:
            failed = _failed_nodes(explanation)
    else:
        explanation = None
        try:
            host, error = scheduler.schedule(pod), None
        except SchedulingError as e:
            host, error = None, str(e)
            failed = e.failed_predicates if isinstance(e, FitError) else None
    volumes: list[VolumeAction] = []
    if host is not None:
        try:
            volumes = assume_volumes(scheduler, pod, host)
        except (PredicateError, VolumeBindingError) as e:
            host, error = None, f'running Reserve plugin "VolumeBinding": {e}'
    if host is not None:
        scheduler.cluster.assume(pod, host)
        log.info("scheduled pod=%s node=%s", pod.ref, host)
    else:
        log.info("unschedulable pod=%s reason=%r", pod.ref, error)
    return Placement(pod, host, error, explanation, failed, volumes)


def _failed_nodes(e: Explanation) -> dict[str, list[str]] | None:
    """The FitError's reasons per node, read back from an explanation (None if the error was not a FitError)."""
    failed = {}
    for name, n in e.nodes.items():
        reasons = [r for p in n.predicates.values() if not p.fit for r in p.reasons]
        reasons += [r for v in n.extenders.values() if v.fit is False for r in v.reasons]
        if not n.fit:
            failed[name] = reasons
    return failed if e.error == fit_error_message(len(e.nodes), failed) else None


def simulate(
    snapshot: Snapshot,
    build: SchedulerBuilder,
    *,
    scheduler_name: str = "default-scheduler",
    explain: bool = False,
    progress: Callable[[int], None] | None = None,
    pod_priority: bool = False,
) -> SimulationResult:
    if pod_priority:  # gate PodPriority: priority queue, nominations, preemption
        return simulate_with_priority(snapshot, build, scheduler_name=scheduler_name, explain=explain, progress=progress)
    cluster = snapshot.cluster_state()
    scheduler = build(cluster)
    before = NodeUsage.of(cluster)
    placements = []
    pending, gated = split_gated(snapshot.pending_pods(scheduler_name))
    for pod in pending:
        placements.append(schedule_one(scheduler, pod, explain))
        if progress:
            progress(1)
    return SimulationResult(placements, before, NodeUsage.of(cluster), cluster, gated=gated)


def explain_pod(snapshot: Snapshot, pod: Pod, build: SchedulerBuilder) -> Explanation:
    """Every node's verdict for every predicate, the priority scores of the feasible nodes, the host."""
    cluster = snapshot.cluster_state()
    if pod.key in cluster.pods:
        cluster.remove_pod(cluster.pods[pod.key])
    # A pod bound by spec.nodeName is evaluated as upstream would: HostName fails on every other node.
    scheduler = build(cluster)
    explanation = scheduler.explain(pod)
    explanation.node_name = pod.node_name
    binder = volume_binder_of(scheduler.predicates)
    if explanation.host is not None and binder is not None:
        try:
            volumes = decide_pod_volumes(binder, pod, explanation.host)
        except (PredicateError, VolumeBindingError) as e:
            log.warning("the volumes of %s on %s: %s", pod.ref, explanation.host, e)
            volumes = None
        explanation.volumes = volumes.actions() if volumes is not None else []
    return explanation


@dataclass
class CapacityResult:
    replicas: int
    placements: dict[str, int]
    stop_reason: str | None
    limited_by_max: bool
    stop_failures: dict[str, list[str]] = field(default_factory=dict)  # node -> why one more does not fit there
    zones: dict[str, str | None] = field(default_factory=dict)  # every node -> its zone
    gates: tuple[str, ...] = ()  # the template is gated (cluster rules): no copy would ever be scheduled


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
    stop_failures: dict[str, list[str]] = {}
    gates: tuple[str, ...] = ()
    while max_replicas is None or replicas < max_replicas:
        raw = copy.deepcopy(template)
        raw.setdefault("metadata", {})
        raw["metadata"]["name"] = f"{base_name}-{replicas}"
        raw["metadata"]["uid"] = f"capacity-{replicas}"
        raw["metadata"].setdefault("namespace", meta.get("namespace") or "default")
        raw.setdefault("spec", {})["nodeName"] = ""
        pod = Pod(raw, snapshot.rules)
        if is_gated(pod):  # not counted: every copy would wait for its gates, not for room
            log.info("gated pod=%s gates=%s", pod.ref, ",".join(pod.scheduling_gates))
            gates, stop_reason = pod.scheduling_gates, gates_message(pod.scheduling_gates)
            break
        placement = schedule_one(scheduler, pod)
        if placement.node is None:
            stop_reason = placement.error
            stop_failures = placement.failed or {}
            break
        counts[placement.node] = counts.get(placement.node, 0) + 1
        replicas += 1
    zones = {node.name: node_zone(node.labels) for node in cluster.node_list()}
    return CapacityResult(replicas, dict(sorted(counts.items())), stop_reason, stop_reason is None, stop_failures, zones,
                          gates)


@dataclass
class Difference:
    pod: str
    a_node: str | None
    a_error: str | None
    b_node: str | None
    b_error: str | None


def compare(
    snapshot: Snapshot, build_a: SchedulerBuilder, build_b: SchedulerBuilder, scheduler_name: str = "default-scheduler",
    *, pod_priority_a: bool = False, pod_priority_b: bool = False, snapshot_b: Snapshot | None = None,
) -> tuple[SimulationResult, SimulationResult, list[Difference]]:
    """Simulate the same queue under two algorithms (and gate settings); list the pods that land differently.
    ``snapshot_b``: the same snapshot parsed under B's rules, when they differ from A's."""
    a = simulate(snapshot, build_a, scheduler_name=scheduler_name, pod_priority=pod_priority_a)
    b = simulate(snapshot_b or snapshot, build_b, scheduler_name=scheduler_name, pod_priority=pod_priority_b)
    # The queue orders differ when one side has PodPriority on; a gated pod (one side's rules) is in no queue.
    in_a, in_b = _outcomes(a), _outcomes(b)
    diffs = [
        Difference(ref, *in_a[key], *in_b[key])
        for key, ref in _refs(a, b).items()
        if in_a[key][0] != in_b[key][0] or (in_a[key][0] is None and _gated_text(in_a[key]) != _gated_text(in_b[key]))
    ]
    return a, b, diffs


GATED = "gated"


def _outcomes(result: SimulationResult) -> dict[str, tuple[str | None, str | None]]:
    """pod key -> (node, error): a gated pod's error is ``gated: waiting for scheduling gates: [...]``."""
    out: dict[str, tuple[str | None, str | None]] = {p.pod.key: (p.node, p.error) for p in result.placements}
    for pod in result.gated:
        out[pod.key] = (None, f"{GATED}: {gates_message(pod.scheduling_gates)}")
    return out


def _gated_text(outcome: tuple[str | None, str | None]) -> bool:
    return (outcome[1] or "").startswith(f"{GATED}: ")


def _refs(a: SimulationResult, b: SimulationResult) -> dict[str, str]:
    """Every pending pod of either side, A's placements first."""
    refs: dict[str, str] = {}
    for result in (a, b):
        for pod in [*(p.pod for p in result.placements), *result.gated]:
            refs.setdefault(pod.key, pod.ref)
    return refs


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
