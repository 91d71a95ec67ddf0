"""Offline scheduling with the ``PodPriority`` gate on: priority queue, nominations and preemption.

* Priorities: every pod in the snapshot gets the ``spec.priority`` 1.9's Priority admission plugin
  would have given it at creation (:func:`with_pod_priorities`); a pod that already carries one (read
  back from a cluster) keeps it.
* :func:`simulate_with_priority` runs 1.9's scheduling loop over the pending pods with its
  ``PriorityQueue``: an *activeQ* popped by priority, then by the snapshot's queue order (``simulate``'s
  FIFO order), and an *unschedulableQ* for pods that found no node. After a FitError it calls
  ``Preempt``; a chosen node becomes the pod's nomination, the victims are deleted from the simulated
  cluster and the lower-priority nominations on that node are cleared. The cluster events that follow
  move pods back to the activeQ exactly as 1.9's event handlers do: a deleted pod moves every
  unschedulable pod (``MoveAllToActiveQueue``), a pod whose nomination changed is updated (moved), a
  newly assumed pod moves the pods whose required affinity it satisfies (``AssignedPodAdded``). So the
  preemptor is retried once its victims are gone, as 1.9 retries it; nothing is retried otherwise.
* :func:`explain_with_priority` explains one pod and, when it does not fit, what preemption would do.
"""

from __future__ import annotations

import dataclasses
import heapq
import logging
from collections.abc import Callable
from dataclasses import dataclass, field

from ..core.generic_scheduler import Explanation, FitError, GenericScheduler
from ..core.nominated import NominatedPods, nominated_node_of
from ..core.preemption import PreemptionResult
from ..errors import ObjectError, PredicateError, SchedulingError
from ..model.pod import Pod
from ..model.priority import PriorityClass, admitted_preemption_policy, admitted_priority
from ..model.topology import matches_required_pod_affinity
from ..predicates.volume_binder import VolumeBindingError
from .results import NodeUsage, Placement, SchedulerBuilder, SimulationResult, assume_volumes, split_gated
from .snapshot import Snapshot

log = logging.getLogger(__name__)

PREEMPTED_BY = "preempted by"


# -- priorities ---------------------------------------------------------------------------------------
def _classes(snapshot: Snapshot) -> tuple[dict[str, PriorityClass], PriorityClass | None]:
    classes: dict[str, PriorityClass] = {}
    default: PriorityClass | None = None
    for pc in snapshot.priority_classes:
        classes[pc.name] = pc
        if pc.global_default:
            if default is not None:
                raise ObjectError(
                    f"PriorityClass {pc.name}", "globalDefault",
                    f"PriorityClass {default.name} is already marked as default. Only one default can exist",
                    snapshot.origins.get(("PriorityClass", "", pc.name)),
                )
            default = pc
    return classes, default


def with_priority(pod: Pod, priority: int, preemption_policy: str | None = None) -> Pod:
    """A copy of ``pod`` whose priority is ``priority`` (and, given, whose preemption policy is
    ``preemption_policy``); the manifest is left as it is."""
    policy = preemption_policy or pod.preemption_policy
    if pod.priority == priority and pod.preemption_policy == policy:
        return pod
    clone = object.__new__(Pod)
    for slot in Pod.__slots__:
        setattr(clone, slot, getattr(pod, slot))
    clone.priority = priority
    clone.preemption_policy = policy
    return clone


def admit(pod: Pod, classes: dict[str, PriorityClass], default: PriorityClass | None, source: str | None) -> Pod:
    """``pod`` with the priority the admission plugin gives it; an unknown class names ``source``."""
    spec = pod.raw.get("spec")
    spec = spec if isinstance(spec, dict) else {}
    try:
        priority = admitted_priority(pod.ref, spec, pod.annotations, classes, default)
    except ObjectError as e:
        if source:
            raise e.with_source(source) from None
        raise
    policy = admitted_preemption_policy(spec, pod.annotations, classes, default)
    return with_priority(pod, pod.priority if priority is None else priority, policy)


def with_pod_priorities(snapshot: Snapshot) -> Snapshot:
    """The snapshot with every pod's priority resolved from its PriorityClass (gate ``PodPriority``)."""
    classes, default = _classes(snapshot)
    pods = [admit(p, classes, default, snapshot.origins.get(("Pod", p.namespace, p.name))) for p in snapshot.pods]
    return dataclasses.replace(snapshot, pods=pods)


def admit_pod(snapshot: Snapshot, pod: Pod, source: str | None = None) -> Pod:
    """One pod (e.g. ``explain``'s manifest file) admitted against the snapshot's classes."""
    classes, default = _classes(snapshot)
    return admit(pod, classes, default, source or snapshot.origins.get(("Pod", pod.namespace, pod.name)))


# -- what the simulation records ------------------------------------------------------------------------
@dataclass
class Victim:
    pod: Pod
    node: str
    simulated: bool  # placed earlier in this simulation (else: running in the snapshot)
    pdb: str | None = None  # the PodDisruptionBudget this eviction violates


@dataclass
class Preemption:
    """One ``Preempt`` that chose a node: the preemptor is nominated there, the victims deleted."""

    preemptor: Pod
    node: str
    victims: list[Victim]
    pdb_violations: int
    nominations_cleared: list[Pod]


@dataclass
class PodProgress:
    """A pending pod's way through the queue."""

    priority: int
    attempts: int = 0
    nominated_node: str | None = None
    preempted_by: str | None = None
    preemption: str = ""  # what the last preemption attempt for this pod concluded


@dataclass
class PrioritySimulation:
    pods: dict[str, PodProgress] = field(default_factory=dict)  # pod ref -> progress
    preemptions: list[Preemption] = field(default_factory=list)
    stopped: str | None = None


# -- 1.9's PriorityQueue, deterministic ------------------------------------------------------------------
class _PriorityQueue:
    def __init__(self, order: dict[str, int]) -> None:
        self._order = order
        self._heap: list[tuple[int, int, str]] = []
        self._active: dict[str, Pod] = {}
        self._unschedulable: dict[str, Pod] = {}
        self._move_request = False

    def add(self, pod: Pod) -> None:
        self._unschedulable.pop(pod.key, None)
        if pod.key not in self._active:
            self._active[pod.key] = pod
            heapq.heappush(self._heap, (-pod.priority, self._order[pod.key], pod.key))

    def pop(self) -> Pod | None:
        while self._heap:
            _, _, key = heapq.heappop(self._heap)
            pod = self._active.pop(key, None)
            if pod is not None:
                self._move_request = False
                return pod
        return None

    def add_unschedulable_if_not_present(self, pod: Pod) -> None:
        if pod.key in self._active or pod.key in self._unschedulable:
            return
        if self._move_request:
            self.add(pod)
        else:
            self._unschedulable[pod.key] = pod

    def move_all_to_active(self) -> None:
        for pod in list(self._unschedulable.values()):
            self.add(pod)
        self._move_request = True

    def updated(self, pod: Pod) -> None:
        """The pod object changed (its nomination): an unschedulable pod becomes active."""
        if pod.key in self._unschedulable:
            self.add(self._unschedulable[pod.key])

    def assigned_pod_added(self, assigned: Pod) -> None:
        for pod in list(self._unschedulable.values()):
            if matches_required_pod_affinity(pod, assigned):
                self.add(pod)

    def remaining(self) -> list[Pod]:
        return [*self._active.values(), *self._unschedulable.values()]


# -- simulate ---------------------------------------------------------------------------------------------
def simulate_with_priority(
    snapshot: Snapshot,
    build: SchedulerBuilder,
    *,
    scheduler_name: str = "default-scheduler",
    explain: bool = False,
    progress: Callable[[int], None] | None = None,
) -> SimulationResult:
    """``simulate`` with the gate on: the pending pods through 1.9's priority queue, with preemption."""
    snapshot = with_pod_priorities(snapshot)
    cluster = snapshot.cluster_state()
    scheduler = build(cluster)
    scheduler.nominated_pods = nominated = NominatedPods()
    before = NodeUsage.of(cluster)
    pending, gated = split_gated(snapshot.pending_pods(scheduler_name))
    order = {p.key: i for i, p in enumerate(pending)}
    queue = _PriorityQueue(order)
    record = PrioritySimulation()
    placements: dict[str, Placement] = {}
    for pod in pending:
        node = nominated_node_of(pod)  # nominated by a live scheduler before the snapshot was taken
        if node:
            nominated.nominate(pod, node)
        record.pods[pod.ref] = PodProgress(pod.priority, nominated_node=node or None)
        queue.add(pod)
    budget = len(pending) * (len(cluster.pods) + len(pending) + 2)
    attempts = 0
    while (pod := queue.pop()) is not None:
        attempts += 1
        if attempts > budget:  # a safety net; every retry follows an eviction or a new nomination
            record.stopped = f"stopped after {budget} scheduling attempts"
            break
        state = record.pods[pod.ref]
        state.attempts += 1
        if state.attempts == 1 and progress:
            progress(1)
        placement, fit_error = _attempt(scheduler, pod, explain)
        placements[pod.key] = placement
        if placement.node is not None:
            nominated.remove(pod)
            state.nominated_node = None
            queue.assigned_pod_added(cluster.pods[pod.key])
            continue
        if fit_error is None:  # not a FitError: 1.9 retries it after a back-off; offline it stays failed
            continue
        result = scheduler.preempt(pod, fit_error, snapshot.pod_disruption_budgets, nominated.node_for(pod) or "")
        if result.post_filter_message:  # preemptionPolicy Never: the message says why it did not preempt
            fit_error.add_post_filter_message(result.post_filter_message)
            placement.error = str(fit_error)
        if placement.explanation is not None:
            placement.explanation.preemption = result
            placement.explanation.error = placement.error
        state.preemption = result.message
        changed = _apply(result, pod, cluster, nominated, queue, placements, record)
        queue.add_unschedulable_if_not_present(pod)
        if changed:
            queue.updated(pod)
        state.nominated_node = nominated.node_for(pod)
    for pod in queue.remaining():
        if pod.key not in placements:
            placements[pod.key] = Placement(pod, None, f"not attempted: {record.stopped}")
    final = [placements[p.key] for p in sorted(pending, key=lambda p: (-p.priority, order[p.key]))]
    result = SimulationResult(final, before, NodeUsage.of(cluster), cluster, gated=gated)
    result.pod_priority = record
    return result


def _attempt(scheduler: GenericScheduler, pod: Pod, explain: bool) -> tuple[Placement, FitError | None]:
    """One scheduling attempt; a placed pod is assumed."""
    explanation: Explanation | None = None
    fit_error: FitError | None = None
    if explain:
        explanation = scheduler.explain(pod)
        host, error, fit_error = explanation.host, explanation.error, explanation.fit_error
    else:
        try:
            host, error = scheduler.schedule(pod), None
        except FitError as e:
            host, error, fit_error = None, str(e), e
        except SchedulingError as e:
            host, error = None, str(e)
    volumes = []
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
    failed = fit_error.failed_predicates if fit_error is not None else None
    return Placement(pod, host, error, explanation, failed=failed, volumes=volumes), fit_error


def _apply(
    result: PreemptionResult, pod: Pod, cluster, nominated: NominatedPods, queue: _PriorityQueue,
    placements: dict[str, Placement], record: PrioritySimulation,
) -> bool:
    """Carry out a preemption as the 1.9 loop does; True when the preemptor's nomination changed."""
    changed = False
    if result.node is not None:
        changed = nominated.nominate(pod, result.node)
        victims = []
        for victim in result.victims:
            cached = cluster.pods[victim.key]
            cluster.remove_pod(cached)
            pdb = result.violated_pdbs.get(victim.key)
            victims.append(Victim(cached, result.node, victim.key in placements, pdb.ref if pdb else None))
            if victim.key in placements:
                placement = placements[victim.key]
                placement.node, placement.failed = None, None
                placement.error = f"{PREEMPTED_BY} {pod.ref} on node {result.node}"
                record.pods[victim.ref].preempted_by = pod.ref
            log.info("preempted pod=%s node=%s by=%s", victim.ref, result.node, pod.ref)
        record.preemptions.append(
            Preemption(pod, result.node, victims, result.num_pdb_violations, list(result.nominated_pods_to_clear)))
        if result.victims:
            queue.move_all_to_active()  # the victims' delete events
    for other in result.nominated_pods_to_clear:
        if nominated.remove(other):
            if other.key == pod.key:
                changed = True
            else:
                queue.updated(other)
                record.pods[other.ref].nominated_node = None
    return changed


# -- explain ----------------------------------------------------------------------------------------------
def explain_with_priority(snapshot: Snapshot, pod: Pod, build: SchedulerBuilder, source: str | None = None) -> Explanation:
    """``explain`` with the gate on: the snapshot's nominations count, and an unschedulable pod gets the
    preemption 1.9 would attempt. ``source`` names the pod's manifest when it is not in the snapshot."""
    snapshot = with_pod_priorities(snapshot)
    target = admit_pod(snapshot, pod, source)
    cluster = snapshot.cluster_state()
    if target.key in cluster.pods:
        cluster.remove_pod(cluster.pods[target.key])
    scheduler = build(cluster)
    scheduler.nominated_pods = nominated = NominatedPods()
    for p in snapshot.pending_pods(target.scheduler_name):
        node = nominated_node_of(p)
        if node and p.key != target.key:
            nominated.nominate(p, node)
    explanation = scheduler.explain(target)
    explanation.node_name = target.node_name
    if explanation.fit_error is not None and not target.node_name:
        explanation.preemption = scheduler.preempt(target, explanation.fit_error, snapshot.pod_disruption_budgets)
        if explanation.preemption.post_filter_message:
            explanation.fit_error.add_post_filter_message(explanation.preemption.post_filter_message)
            explanation.error = str(explanation.fit_error)
    return explanation
