"""The offline scheduling loop: ``run``'s scheduling cycle over a snapshot, on a virtual clock.

The pending pods enter the chosen queue in the snapshot's order: 1.9's FIFO, 1.9's PriorityQueue (gate
``PodPriority``) or 1.20's three-queue form. The loop pops a pod, the shared cycle decides
(:mod:`policy_scheduler.scheduling.cycle`), and then, as ``run`` would:

* an assumed pod is bound at once (the binder only records; the assumption is final) and the queue hears
  the pod's bind as the daemon's informer reports it (``AssignedPodAdded``);
* a failed pod is re-queued after the back-off ``run`` waits (1.9: 1 s doubling to 60 s, through its
  requeuer; the three-queue form backs pods off itself);
* a claim DynamicResources' PostFilter deallocates (``Decision.deallocate``) is deallocated in the cluster at once,
  as the daemon's write would be, and the queue hears the claim's update (every waiting pod moves);
* a preemption is carried out in memory: the preemptor is nominated, the victims are deleted from the
  cluster and the lower nominations cleared, and the queue hears the events the daemon's informer would
  deliver (the nominated pod updated, every victim's deletion).

Time is virtual: it moves only when no pod is ready, to the next re-queue or queue flush, so a placement's
time says when ``run`` would have bound it (decisions take no time here). The loop ends when no pod is
queued or waiting, or when every pod still waiting failed since the cluster last changed (the engine is
deterministic: retrying it could not change its verdict).
"""

from __future__ import annotations

import heapq
import itertools
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..cache.cluster import ClusterState
from ..core.fit_error import FitError
from ..core.nominated import NOMINATED_NODE_ANNOTATION
from ..core.preemption import PreemptionResult
from ..dra.reserve import commit_pod_claims, deallocate_claim, release_pod_claims
from ..model.disruption import PodDisruptionBudget
from ..model.pod import Pod, pod_condition
from ..queue import NominatingQueue, PodBackoff, ThreeQueuePriorityQueue, new_scheduling_queue, pod_key
from ..scheduling.cycle import Decision, SchedulingCycle

if TYPE_CHECKING:
    from ..core.generic_scheduler import GenericScheduler

log = logging.getLogger(__name__)

PREEMPTED_BY = "preempted by"


class VirtualClock:
    """Seconds since the simulation started; moved only by the loop."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


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
    placed_at: float | None = None  # virtual seconds
    last_result: PreemptionResult | None = None


@dataclass
class DriverResult:
    decisions: dict[str, Decision]  # pod key -> its last decision
    progress: dict[str, PodProgress]  # pod key -> progress
    preemptions: list[Preemption] = field(default_factory=list)
    stopped: str | None = None
    pods: dict[str, Pod] = field(default_factory=dict)  # pod key -> its latest object


class ClusterAssumer:
    """The offline cache: an assumed pod joins the cluster for good."""

    def __init__(self, cluster: ClusterState) -> None:
        self.cluster = cluster

    def assume_pod(self, pod: Pod) -> None:
        self.cluster.add_pod(pod)


def with_condition(pod: Pod, reason: str, message: str | None) -> Pod:
    """The pod object after the daemon's ``PodScheduled=False`` status PATCH."""
    condition = {"type": "PodScheduled", "status": "False", "reason": reason}
    if message:
        condition["message"] = message
    status = dict(pod.raw.get("status") or {})
    status["conditions"] = [c for c in status.get("conditions") or () if c.get("type") != "PodScheduled"] + [condition]
    return pod.with_status(status)


def with_nomination(pod: Pod, node: str) -> Pod:
    """The pod object after the daemon's nomination PATCH (``""`` clears it): annotation and status."""
    annotations = dict(pod.annotations)
    if node:
        annotations[NOMINATED_NODE_ANNOTATION] = node
    else:
        annotations.pop(NOMINATED_NODE_ANNOTATION, None)
    return pod.with_status({**(pod.raw.get("status") or {}), "nominatedNodeName": node or None}, annotations)


class OfflineDriver:
    """Schedules ``pending`` with ``scheduler`` through a queue of form ``queue_kind``."""

    def __init__(self, scheduler: GenericScheduler, pending: Sequence[Pod], *, queue_kind: str,
                 pod_priority: bool, pdbs: Sequence[PodDisruptionBudget] = (), explain: bool = False,
                 progress: Callable[[int], None] | None = None) -> None:
        self.cluster = scheduler.cluster
        self.clock = VirtualClock()
        self.queue = new_scheduling_queue(queue_kind, self.clock)
        self.queue.namespace_labels = self.cluster.namespace_labels  # waiting pods' namespaceSelectors
        self.pdbs = list(pdbs)
        self.progress = progress
        self.explain = explain  # preemption then says why each node lost
        # 1.9 re-queues through the requeuer's back-off; the three-queue form backs pods off itself.
        self.backoff = None if isinstance(self.queue, ThreeQueuePriorityQueue) else PodBackoff(clock=self.clock)
        if pod_priority and isinstance(self.queue, NominatingQueue):  # the queue's nominations count
            scheduler.nominated_pods = self.queue
        self.cycle = SchedulingCycle(algorithm=lambda: scheduler, cache=ClusterAssumer(self.cluster),
                                     nominations=self.queue, explain=explain,
                                     preemption=self if pod_priority and isinstance(self.queue, NominatingQueue) else None)
        self.result = DriverResult({}, {})
        self._requeues: list[tuple[float, int, str, bool]] = []
        self._seq = itertools.count()
        self._waiting: set[str] = set()
        self._epoch = 0  # cluster changes so far (a pod assumed, victims deleted, a nomination changed)
        self._failed_at: dict[str, int] = {}  # pod key -> the epoch its last failed attempt started in
        self._gone: set[str] = set()  # placed here, then preempted: deleted, as a victim is
        for pod in pending:
            self.result.pods[pod.key] = pod
            self.result.progress[pod.key] = PodProgress(pod.priority)
            self.queue.add(pod)
            if isinstance(self.queue, NominatingQueue):
                self.result.progress[pod.key].nominated_node = self.queue.node_for(pod)
        self._budget = len(pending) * (len(self.cluster.pods) + len(pending) + 2)

    # -- the loop ------------------------------------------------------------------------------------
    def run(self) -> DriverResult:
        attempts = 0
        while True:
            self._deliver_due()
            pod = self.queue.pop(0)
            if pod is None:
                if not self._advance():
                    break
                continue
            attempts += 1
            if attempts > self._budget:  # a safety net; every retry follows a change or a back-off
                self.result.stopped = f"stopped after {self._budget} scheduling attempts"
                break
            self._schedule(pod)
        return self.result

    def _schedule(self, pod: Pod) -> None:
        epoch = self._epoch  # changes its own preemption makes count as later ones: it is retried after them
        state = self.result.progress[pod.key]
        state.attempts += 1
        if state.attempts == 1 and self.progress:
            self.progress(1)
        decision = self.cycle.decide(pod)
        self.result.decisions[pod.key] = decision
        if decision.explanation is not None and state.last_result is not None and decision.fit_error is not None:
            decision.explanation.preemption = state.last_result
            decision.explanation.error = decision.error
        if decision.assumed is not None:
            if decision.claims is not None:  # the claims' write, at once: later pods see the devices taken
                commit_pod_claims(self.cluster, decision.claims)
            state.placed_at, state.nominated_node = self.clock.now, None
            self._epoch += 1
            log.info("scheduled pod=%s node=%s", pod.ref, decision.host)
            self.queue.delete(pod)  # the bind, as the informer reports it
            self.queue.assigned_pod_added(decision.assumed)
            return
        self._failed_at[pod.key] = epoch
        if decision.requeue:
            self._requeue(pod, decision.unschedulable)
        if decision.deallocate is not None:  # PostFilter's write, at once; its update event moves the waiting pods
            deallocate_claim(self.cluster, decision.deallocate)
            self._epoch += 1
            log.info("deallocated claim=%s pod=%s", decision.deallocate.ref, pod.ref)
            self.queue.move_all_to_active()
        self._condition_updated(pod, decision)

    def _condition_updated(self, pod: Pod, decision: Decision) -> None:
        """``run`` writes ``PodScheduled=False`` when status, reason or message change; its update event reaches
        the queue: a pod out of every sub-queue enters activeQ (1.9 retries it before its back-off is over, as
        ``run`` does). The three-queue form re-queues at once, before the event (run's requeuer, no delay)."""
        key = pod.key
        old = self.result.pods[key]
        current = pod_condition(old.raw, "PodScheduled") or {}
        if (current.get("status"), current.get("reason"), current.get("message")) == (
                "False", decision.reason, decision.message):
            return
        if self.backoff is None:
            self._deliver_due()
        new = self.result.pods[key] = with_condition(old, decision.reason, decision.message)
        self.queue.update(old, new)

    def _requeue(self, pod: Pod, unschedulable: bool) -> None:
        """``run``'s requeuer: back into the queue after the pod's back-off (FIFO, PriorityQueue), or at once
        (the three-queue form waits in its own podBackoffQ)."""
        key = pod.key
        if key in self._waiting:
            return
        delay = self.backoff.next_delay(pod_key(pod)) if self.backoff is not None else 0.0
        self._waiting.add(key)
        heapq.heappush(self._requeues, (self.clock.now + delay, next(self._seq), key, unschedulable))

    def _deliver_due(self) -> None:
        if isinstance(self.queue, ThreeQueuePriorityQueue):
            self.queue.flush_due(self.clock.now)
        while self._requeues and self._requeues[0][0] <= self.clock.now:
            _, _, key, unschedulable = heapq.heappop(self._requeues)
            self._waiting.discard(key)
            if key in self.cluster.pods or key in self._gone:  # placed (or deleted) meanwhile: as the requeuer
                continue
            self.queue.add_unschedulable_if_not_present(self.result.pods[key], unschedulable)

    def _advance(self) -> bool:
        """Nothing is ready: move the clock to the next re-queue or flush; False when the simulation is over."""
        waiting = [k for k in self.result.pods if k not in self.cluster.pods and k not in self._gone]
        if all(self._failed_at.get(k) == self._epoch for k in waiting):
            return False  # nothing changed since each of them failed: retrying cannot help
        moments = [self._requeues[0][0]] if self._requeues else []
        if isinstance(self.queue, ThreeQueuePriorityQueue) and (flush := self.queue.next_flush_at()) is not None:
            moments.append(flush)
        if not moments:
            return False
        self.clock.now = max(self.clock.now, min(moments))
        return True

    # -- preemption (PreemptionExecutor) ---------------------------------------------------------------
    def attempt(self, pod: Pod, error: FitError, algorithm: GenericScheduler) -> bool:
        """``Preempt`` carried out in memory, with the events the daemon's informer would deliver. True when
        a node was chosen (the pod is re-queued as the daemon's preemption worker re-queues it)."""
        assert isinstance(self.queue, NominatingQueue)
        state = self.result.progress[pod.key]
        result = algorithm.preempt(pod, error, self.pdbs, self.queue.node_for(pod) or "", detail=self.explain)
        state.last_result, state.preemption = result, result.message
        result.annotate(error)  # preemptionPolicy Never: the message says why it did not preempt
        if not result.eligible:
            return False
        for other in result.nominated_pods_to_clear:
            self._set_nomination(other, "")
        if result.node is None:
            return False
        self._set_nomination(pod, result.node)
        victims = [self._evict(victim, pod, result) for victim in result.victims]
        self.result.preemptions.append(Preemption(pod, result.node, victims, result.num_pdb_violations,
                                                  list(result.nominated_pods_to_clear)))
        self._requeue(self.result.pods[pod.key], unschedulable=bool(victims))
        return True

    def _set_nomination(self, pod: Pod, node: str) -> None:
        """Nominate (``""``: clear) as the daemon does: in the queue at once, then the pod's update event."""
        assert isinstance(self.queue, NominatingQueue)
        key = pod.key
        if (self.queue.node_for(pod) or "") == node and key in self.result.pods:
            return
        if node:
            self.queue.nominate(pod, node)
        else:
            self.queue.clear_nomination(pod)
        old = self.result.pods.get(key, pod)
        new = self.result.pods[key] = with_nomination(old, node)
        self.result.progress[key].nominated_node = node or None
        self._epoch += 1
        if key not in self.cluster.pods:
            self.queue.update(old, new)

    def _evict(self, victim: Pod, preemptor: Pod, result: PreemptionResult) -> Victim:
        assert result.node is not None
        cached = self.cluster.pods[victim.key]
        self.cluster.remove_pod(cached)
        release_pod_claims(self.cluster, cached)  # its claims' devices are free again (resourceclaim controller)
        self._epoch += 1
        simulated = victim.key in self.result.progress
        if simulated:
            self._gone.add(victim.key)
            self.result.progress[victim.key].preempted_by = preemptor.ref
            self.result.progress[victim.key].placed_at = None
        log.info("preempted pod=%s node=%s by=%s", victim.ref, result.node, preemptor.ref)
        self.queue.move_all_to_active()  # the victim's delete event
        pdb = result.violated_pdbs.get(victim.key)
        return Victim(cached, result.node, simulated, pdb.ref if pdb else None)


def queue_kind(name: str | None, pod_priority: bool) -> str:
    """The queue form for ``--scheduling-queue`` (``1.9``, ``three-queue``; None: 1.9) and the gate."""
    if name in (None, "1.9"):
        return "priority" if pod_priority else "fifo"
    return name
