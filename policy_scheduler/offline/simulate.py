"""Offline scheduling on a snapshot: simulate a queue, explain one pod, count capacity, compare policies.

Every pod goes through the daemon's scheduling cycle (:mod:`policy_scheduler.scheduling.cycle`), each
placed pod assumed onto its node before the next. :func:`simulate` runs ``run``'s loop over the pending
pods on a virtual clock (:mod:`.driver`), with the queue and gates chosen; :func:`capacity` and the
throughput benchmark place copies one by one (:func:`schedule_one`); what they produce is in :mod:`.results`.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..cache.cluster import ClusterState
from ..core.explain import Explanation
from ..core.fit_error import fit_error_message
from ..core.generic_scheduler import GenericScheduler
from ..core.modern_pods import gates_message, is_gated
from ..dra.claims import instantiate_template_claims
from ..dra.explain import explain_devices
from ..dra.reserve import commit_pod_claims
from ..errors import PredicateError
from ..model.dra import ResourceClaim
from ..model.pod import Pod
from ..predicates.dynamic_resources import dynamic_resources_of
from ..predicates.volume_binder import VolumeBindingError, decide_pod_volumes, volume_binder_of
from ..scheduling.cycle import NO_NOMINATIONS, Decision, SchedulingCycle
from .driver import PREEMPTED_BY, ClusterAssumer, DriverResult, OfflineDriver, queue_kind
from .priority import PrioritySimulation, with_pod_priorities
from .results import (
    NodeUsage,
    Placement,
    SchedulerBuilder,
    SimulationResult,
    node_zone,
    split_gated,
)
from .snapshot import Snapshot

log = logging.getLogger(__name__)


def schedule_one(scheduler: GenericScheduler, pod: Pod, explain: bool = False) -> Placement:
    """Schedule ``pod`` once through the shared cycle and, if a node was found, assume it there."""
    decision = SchedulingCycle(algorithm=lambda: scheduler, cache=ClusterAssumer(scheduler.cluster),
                               nominations=NO_NOMINATIONS, explain=explain).decide(pod)
    if decision.assumed is not None:
        log.info("scheduled pod=%s node=%s", pod.ref, decision.host)
        if decision.claims is not None:  # offline the claims' write is final at once
            commit_pod_claims(scheduler.cluster, decision.claims)
    return placement_of(decision)


def placement_of(decision: Decision, attempts: int = 1, placed_at: float | None = None) -> Placement:
    """What a decision means for the pod's placement."""
    volumes = decision.volumes.actions() if decision.volumes is not None else []
    explanation = decision.explanation
    failed = decision.failed_predicates
    if explanation is not None and decision.assumed is None:
        failed = _failed_nodes(explanation)
    host = decision.host if decision.assumed is not None else None
    claims = claims_of(decision) if decision.assumed is not None else []
    return Placement(decision.pod, host, decision.error, explanation, failed, volumes, attempts, placed_at, claims)


def claims_of(decision: Decision) -> list[dict[str, Any]]:
    """The pod's claims as its decision reserved them: ``ns/name``, its devices (``driver/pool/device``), and
    whether this decision allocated it (else it was allocated already, the pod only joins ``reservedFor``)."""
    if decision.claims is None:
        return []
    out = []
    for reservation in decision.claims.reservations:
        claim = reservation.claim
        if reservation.allocation is not None:
            results = reservation.allocation["devices"]["results"]
            devices = [f"{r['driver']}/{r['pool']}/{r['device']}" for r in results]
        else:
            devices = ["/".join(r.device_id) for r in claim.results]
        out.append({"claim": f"{claim.namespace}/{claim.name}", "devices": devices,
                    "allocated": reservation.allocation is not None})
    return out


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
    queue: str | None = None,
) -> SimulationResult:
    """The snapshot's pending pods through ``run``'s loop (:mod:`.driver`): the queue ``queue``
    (``1.9``, the default: the FIFO, or with ``pod_priority`` the PriorityQueue; ``three-queue``), the
    gate ``PodPriority`` (priorities from PriorityClasses, nominations, preemption)."""
    if pod_priority:
        snapshot = with_pod_priorities(snapshot)
    cluster = snapshot.cluster_state()
    scheduler = build(cluster)
    before = NodeUsage.of(cluster)
    pending, gated = split_gated(snapshot.pending_pods(scheduler_name))
    kind = queue_kind(queue, pod_priority)
    driver = OfflineDriver(scheduler, pending, queue_kind=kind, pod_priority=pod_priority,
                           pdbs=snapshot.pod_disruption_budgets, explain=explain, progress=progress)
    run = driver.run()
    order = {p.key: i for i, p in enumerate(pending)}
    if kind != "fifo":  # a priority queue reports in the order it pops: priority, then queue order
        pending = sorted(pending, key=lambda p: (-p.priority, order[p.key]))
    placements = [_placement(run, pod) for pod in pending]
    result = SimulationResult(placements, before, NodeUsage.of(cluster), cluster, gated=gated, queue=kind)
    if pod_priority:
        result.pod_priority = PrioritySimulation({run.pods[p.key].ref: run.progress[p.key] for p in pending},
                                                 run.preemptions, run.stopped)
    return result


def _placement(run: DriverResult, pod: Pod) -> Placement:
    state = run.progress[pod.key]
    decision = run.decisions.get(pod.key)
    if decision is None:
        return Placement(pod, None, f"not attempted: {run.stopped}", attempts=0)
    placement = placement_of(decision, state.attempts, state.placed_at)
    placement.pod = pod
    if state.preempted_by is not None:
        victim = next(v for p in run.preemptions for v in p.victims if v.pod.key == pod.key)
        placement.node, placement.failed = None, None
        placement.error = f"{PREEMPTED_BY} {state.preempted_by} on node {victim.node}"
    return placement


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
    if pod.resource_claims:
        checker = dynamic_resources_of(scheduler.algorithms_for(pod).predicates)
        if checker is not None:
            explanation.devices = explain_devices(checker, pod, cluster.node_infos, list(explanation.nodes))
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
    cluster: ClusterState | None = field(default=None, repr=False)  # the cluster with the copies assumed


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
    templates = {t.key: t for t in snapshot.resource_claim_templates}
    while max_replicas is None or replicas < max_replicas:
        raw = copy.deepcopy(template)
        raw.setdefault("metadata", {})
        raw["metadata"]["name"] = f"{base_name}-{replicas}"
        raw["metadata"]["uid"] = f"capacity-{replicas}"
        raw["metadata"].setdefault("namespace", meta.get("namespace") or "default")
        raw.setdefault("spec", {})["nodeName"] = ""
        pod = Pod(raw, snapshot.rules)
        if pod.resource_claims and templates:  # each copy's claims from templates, as the controller makes them
            pod, made = instantiate_template_claims(pod, templates)
            for claim in made:
                cluster.add_resource_claim(ResourceClaim.from_dict(claim))
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
                          gates, cluster)


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
    queue: str | None = None,
) -> tuple[SimulationResult, SimulationResult, list[Difference]]:
    """Simulate the same queue under two algorithms (and gate settings); list the pods that land differently.
    ``snapshot_b``: the same snapshot parsed under B's rules, when they differ from A's."""
    a = simulate(snapshot, build_a, scheduler_name=scheduler_name, pod_priority=pod_priority_a, queue=queue)
    b = simulate(snapshot_b or snapshot, build_b, scheduler_name=scheduler_name, pod_priority=pod_priority_b, queue=queue)
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
