"""Preemption in the daemon (gate ``PodPriority``): upstream 1.9 ``scheduler.go`` ``preempt``.

After a FitError the loop calls :meth:`Preemptor.attempt` while it still holds the cache lock:

1. the preemptor is re-read from the pod informer (1.9 GETs it): a pod deleted, bound or assumed
   meanwhile is not preempted for;
2. ``Preempt`` runs in the engine (:mod:`policy_scheduler.core.preemption`, pure) over the cache, the
   queue's nominations and the PodDisruptionBudgets of the PDB informer;
3. in memory, at once: the queue records the preemptor's nomination and forgets the nominations to
   clear, so the very next decision counts the preemptor on its node (two-pass predicates) and no longer
   counts the pods it displaced;
4. the API calls go to a worker (below), in 1.9's order: PATCH the preemptor's ``status`` subresource
   (JSON merge patch: the ``NominatedNodeName`` annotation, and ``status.nominatedNodeName``), DELETE each
   victim with its default grace period, a ``Normal`` ``Preempted`` event on each deleted victim, then
   PATCH away the nominations to clear (errors only logged). A failed PATCH or DELETE stops that
   preemption: the in-memory nomination is dropped (a failed PATCH) and the victims not yet deleted stay;
   A DELETE or PATCH with an unknown outcome (no reply, 5xx) is settled, not assumed either way: the
   victim is read back once the API server answers (gone, re-created or terminating: deleted; else the
   deletion failed); a nomination PATCH that got no reply because the server is gone is sent again;
5. only then is the preemptor re-queued (not bound in this cycle; it is retried once its victims are
   gone; after a failed call, after a per-pod back-off of 1 s doubling to 60 s).

Preemptions' API calls run on a pool of workers (1.9 made them on the scheduling goroutine, one after the
other; at hundreds of preemptions a second that queue, not the decisions, set the pace), ordered per pod:
a job waits for every earlier job that patches one of the same pods, so a later preemption's clearing
never overtakes an earlier one's nomination.

A preemptor is not eligible for another preemption while its API calls are in flight, nor while a victim
it deleted is still shown without a deletion timestamp (the watch has not caught up): 1.9's eligibility
rule (``podEligibleToPreemptOthers``: not while lower-priority pods on its node are terminating) applied
to what this scheduler already knows, so a victim is never deleted twice by a pod retried early.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ...core.nominated import NOMINATED_NODE_ANNOTATION, nominated_node_of
from ...errors import ObjectError, SchedulingError
from ...model.disruption import PodDisruptionBudget
from ...model.pod import Pod
from ...queue import PodBackoff, pod_key
from ..client.reachability import Reachability, read_until_answered
from ..client.rest import MERGE_PATCH, ApiError, RestClient
from ..metrics import SchedulerMetrics
from .events import NORMAL, EventRecorder

if TYPE_CHECKING:
    from ...cache.scheduler_cache import SchedulerCache
    from ...core.generic_scheduler import FitError, GenericScheduler
    from ...queue import NominatingQueue
    from .requeuer import Requeuer

log = logging.getLogger(__name__)

#: 1.10's spurious ``409 meaningful conflict`` on back-to-back patches of one object (envtest README).
PATCH_RETRIES = 3

#: DELETEs of one victim whose outcome stayed unknown and whose read-back showed it untouched, before giving up.
DELETE_ATTEMPTS = 3

#: Preemptions whose API calls run at once (each job's calls stay in 1.9's order).
PREEMPTION_WORKERS = 8


@dataclass
class _Job:
    """One preemption's API calls."""

    pod: Pod
    node: str | None
    victims: list[Pod]
    clear: list[Pod]
    requeue: bool
    done: list[str] = field(default_factory=list)  # victims deleted


def nomination_patch(node: str) -> dict[str, Any]:
    """The merge patch that nominates a pod to ``node`` ("" clears it): 1.9's annotation, set to "" to
    clear as 1.9 does, and the ``status.nominatedNodeName`` field of 1.10+ (null to clear)."""
    return {"metadata": {"annotations": {NOMINATED_NODE_ANNOTATION: node}},
            "status": {"nominatedNodeName": node or None}}


class PDBStore:
    """The PodDisruptionBudget informer's handler: the parsed budgets of every namespace."""

    def __init__(self, api_version: str) -> None:
        self.api_version = api_version
        self._pdbs: dict[str, PodDisruptionBudget] = {}
        self._lock = threading.Lock()

    def on_add(self, raw: dict[str, Any]) -> None:
        meta = raw.get("metadata") or {}
        key = f"{meta.get('namespace')}/{meta.get('name')}"
        try:
            # List items carry no apiVersion; it says which status field counts (podDisruptionsAllowed in 1.9's v1beta1).
            pdb = PodDisruptionBudget.from_dict({**raw, "apiVersion": raw.get("apiVersion") or self.api_version})
        except ObjectError as e:
            log.warning("ignoring PodDisruptionBudget the API server sent: %s", e)
            with self._lock:
                self._pdbs.pop(key, None)
            return
        with self._lock:
            self._pdbs[key] = pdb

    def on_update(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        self.on_add(new)

    def on_delete(self, raw: dict[str, Any]) -> None:
        meta = raw.get("metadata") or {}
        with self._lock:
            self._pdbs.pop(f"{meta.get('namespace')}/{meta.get('name')}", None)

    def list(self) -> list[PodDisruptionBudget]:
        with self._lock:
            return list(self._pdbs.values())


class Preemptor:
    def __init__(
        self,
        rest: RestClient,
        *,
        cache: SchedulerCache,
        queue: NominatingQueue,
        requeuer: Requeuer,
        recorder: EventRecorder,
        metrics: SchedulerMetrics,
        lookup: Callable[[str], Pod | None],
        pdbs: Callable[[], Sequence[PodDisruptionBudget]] = list,
        reachability: Reachability | None = None,
    ) -> None:
        self.rest = rest
        self.reachability = reachability
        self._closing = threading.Event()
        self.cache = cache
        self.queue = queue
        self.requeuer = requeuer
        self.recorder = recorder
        self.metrics = metrics
        self.lookup = lookup
        self.pdbs = pdbs
        self.backoff = PodBackoff()
        self._worker = ThreadPoolExecutor(max_workers=PREEMPTION_WORKERS, thread_name_prefix="preempt")
        self._lock = threading.Condition()
        self._in_flight: set[str] = set()  # preemptors whose API calls are queued or running
        self._last_job: dict[str, Future] = {}  # pod key -> the last job patching that pod
        self._unconfirmed: dict[str, list[Pod]] = {}  # preemptor -> victims deleted, not yet seen terminating

    # -- the loop (cache lock held) --------------------------------------------------------------------
    def attempt(self, pod: Pod, error: FitError, algorithm: GenericScheduler) -> bool:
        """Preempt for ``pod`` after ``error``; True when its re-queue is left to the worker (a node was
        chosen, or an earlier preemption for it is still in progress: the pod returns to the queue once the
        API calls are done)."""
        result, deferred = self._attempt(pod, error, algorithm)
        self.metrics.preemption_attempts.labels(result=result).inc()
        return deferred

    def _attempt(self, pod: Pod, error: FitError, algorithm: GenericScheduler) -> tuple[str, bool]:
        key = pod_key(pod)
        preemptor = self.lookup(key)
        if preemptor is None:
            log.debug("not preempting for %s: it no longer waits for a node", pod.ref)
            return "not_eligible", False
        with self._lock:
            in_flight = key in self._in_flight
            unconfirmed = not in_flight and self._victims_pending(key)
        if in_flight or unconfirmed:
            log.debug("Pod %s is not eligible for more preemption: its last preemption is in progress", pod.ref)
            # In flight: the worker re-queues it when done (a re-queue now could leave it waiting in
            # unschedulableQ for an event that came while it was out of the queue).
            return "not_eligible", in_flight
        try:
            result = algorithm.preempt(preemptor, error, self.pdbs(), detail=False)
        except SchedulingError as e:
            log.error("Error preempting victims to make room for %s: %s", pod.ref, e)
            return "error", False
        self.metrics.preemption_victims.set(len(result.victims))
        result.annotate(error)  # preemptionPolicy Never: the FailedScheduling message says so
        if not result.eligible:
            log.debug("Pod %s is not eligible for more preemption: %s", pod.ref, result.message)
            return "not_eligible", False
        clear = [p for p in result.nominated_pods_to_clear if self._had_nomination(p)]
        for p in result.nominated_pods_to_clear:
            self.queue.clear_nomination(p)
        if result.node is None:
            log.debug("no preemption for %s: %s", pod.ref, result.message)
            if clear:
                self._submit(_Job(preemptor, None, [], clear, requeue=False))
            return "no_node", False
        self.queue.nominate(preemptor, result.node)
        log.info("preempting pod=%s priority=%d node=%s victims=%s pdb_violations=%d nominations_cleared=%s",
                 pod.ref, preemptor.priority, result.node,
                 ",".join(f"{v.ref}({v.priority})" for v in result.victims) or "-",
                 result.num_pdb_violations, ",".join(p.ref for p in clear) or "-")
        self._submit(_Job(preemptor, result.node, list(result.victims), clear, requeue=True))
        return "nominated", True

    def _submit(self, job: _Job) -> None:
        """Queue the job's API calls behind every earlier job that patches one of its pods. The pool takes
        jobs in order, so the earliest unfinished one never waits: no job waits forever."""
        keys = {pod_key(job.pod), *(pod_key(p) for p in job.clear)}
        with self._lock:
            self._in_flight.add(pod_key(job.pod))
            before = [f for k in keys if (f := self._last_job.get(k)) is not None]
            future = self._worker.submit(self._run_after, before, job)
            for k in keys:
                self._last_job[k] = future
        future.add_done_callback(lambda f: self._forget_job(keys, f))

    def _forget_job(self, keys: set[str], future: Future) -> None:
        with self._lock:
            for k in keys:
                if self._last_job.get(k) is future:
                    del self._last_job[k]

    def _run_after(self, before: list[Future], job: _Job) -> None:
        wait(before)
        self._run(job)

    def _had_nomination(self, pod: Pod) -> bool:
        return bool(self.queue.node_for(pod) or nominated_node_of(pod))

    def _victims_pending(self, key: str) -> bool:
        """Whether a victim of ``key``'s last preemption still shows without a deletion timestamp."""
        victims = self._unconfirmed.get(key)
        if not victims:
            return False
        pods = self.cache.cluster.pods
        victims[:] = [v for v in victims if (c := pods.get(v.key)) is not None and not c.deletion_timestamp]
        if not victims:
            del self._unconfirmed[key]
        # Forget the preemptors whose victims all terminated (bound or deleted preemptors never ask again).
        for other in [k for k, vs in self._unconfirmed.items()
                      if k != key and not any((c := pods.get(v.key)) is not None and not c.deletion_timestamp for v in vs)]:
            del self._unconfirmed[other]
        return bool(victims)

    # -- the worker --------------------------------------------------------------------------------------
    def _run(self, job: _Job) -> None:
        key = pod_key(job.pod)
        ok = False
        try:
            ok = self._carry_out(job)
        except Exception:  # the worker must survive anything
            log.exception("preemption for %s failed", job.pod.ref)
        finally:
            with self._lock:
                if job.done:
                    self._unconfirmed[key] = job.done
                self._in_flight.discard(key)
                self._lock.notify_all()
            if job.requeue and ok:
                # Back to unschedulableQ unless a move request came since the pod was popped: its victims'
                # deletions move it, as in 1.9. With no victim, nothing would: straight to activeQ.
                self.requeuer.requeue(job.pod, unschedulable=bool(job.victims))
            elif job.requeue:
                # 1.9 retries at the next event that moves the pod (its nomination's update, once); a
                # failure that lasts (e.g. no RBAC to delete pods) would then wait for any cluster event.
                # Here: retried after a per-pod back-off (1 s doubling to 60 s).
                delay = self.backoff.next_delay(key)
                log.info("preemption for pod=%s node=%s stopped; retrying the pod in %.0fs", job.pod.ref, job.node, delay)
                self.requeuer.requeue(job.pod, unschedulable=False, delay=delay)

    def _carry_out(self, job: _Job) -> bool:
        pod = job.pod
        ok = True
        if job.node is not None:
            try:
                self._patch_status(pod, nomination_patch(job.node))
            except ApiError as e:
                log.error("Error in preemption process. Cannot update pod %s annotations: %s", pod.ref, e)
                if self.queue.node_for(pod) == job.node:
                    self.queue.clear_nomination(pod)
                return False
            for victim in job.victims:
                try:
                    self._delete(victim)
                except ApiError as e:
                    if not e.not_found:
                        log.error("Error preempting pod %s: %s", victim.ref, e)
                        ok = False
                        break
                    log.info("victim pod=%s of pod=%s was already gone", victim.ref, pod.ref)
                    continue
                job.done.append(victim)
                self.recorder.pod_event(victim, NORMAL, "Preempted", f"by {pod.namespace}/{pod.name} on node {job.node}")
            if not ok:
                return False
        # Clearing happens whether or not a node was chosen (1.9: the preemptor's own nomination when
        # preemption cannot help it anywhere); a failure here is not critical.
        for other in job.clear:
            try:
                self._patch_status(other, nomination_patch(""))
            except ApiError as e:
                if not e.not_found:
                    log.error("Cannot remove nominated node annotation of pod %s: %s", other.ref, e)
        return True

    def _patch_status(self, pod: Pod, body: dict[str, Any]) -> None:
        """A merge PATCH of the pod's status (1.10's spurious 409 retried up to PATCH_RETRIES times). It is
        idempotent: when it gets no reply because the server is gone, it is sent again once the server
        answers; any other failure raises."""
        path = f"/api/v1/namespaces/{pod.namespace}/pods/{pod.name}/status"

        def patch() -> bool:
            for attempt in range(PATCH_RETRIES):
                try:
                    self.rest.patch(path, body, content_type=MERGE_PATCH)
                    return True
                except ApiError as e:
                    if not e.conflict or attempt == PATCH_RETRIES - 1:
                        raise
            return True

        try:
            patch()
            return
        except ApiError as e:
            if not e.unavailable:
                raise
            log.info("patching pod=%s: no reply (%s); sending it again once the API server answers", pod.ref, e)
        if read_until_answered(patch, self.reachability, self._closing, f"patching {pod.ref}") is None:
            raise ApiError(0, "", f"PATCH {path}: shutting down with the outcome unknown")

    def _delete(self, victim: Pod) -> None:
        """DELETE with the pod's default grace period; the uid precondition spares a pod re-created under
        the victim's name since the decision. An unknown outcome is settled by reading the victim back once
        the API server answers: gone, re-created or terminating is deleted; still there and not terminating
        means the DELETE never took effect, and it is sent again (up to DELETE_ATTEMPTS in all). Raises the
        DELETE's error when that does not succeed."""
        body: dict[str, Any] = {"apiVersion": "v1", "kind": "DeleteOptions"}
        if victim.uid:
            body["preconditions"] = {"uid": victim.uid}
        path = f"/api/v1/namespaces/{victim.namespace}/pods/{victim.name}"

        def deleted() -> bool:
            try:
                current = self.rest.get(path)
            except ApiError as e:
                if e.not_found:
                    return True
                raise
            meta = current.get("metadata") or {}
            return bool(victim.uid and meta.get("uid") != victim.uid) or bool(meta.get("deletionTimestamp"))

        for attempt in range(1, DELETE_ATTEMPTS + 1):
            try:
                self.rest.delete(path, body=body)
                return
            except ApiError as e:
                if not e.indefinite:
                    raise
                error = e
            log.info("deleting victim pod=%s: outcome unknown (%s); re-checking once the API server answers",
                     victim.ref, error)
            answer = read_until_answered(deleted, self.reachability, self._closing, f"re-checking victim {victim.ref}")
            if answer is None:  # shutting down with the server silent
                break
            if answer:
                log.info("victim pod=%s: deleted", victim.ref)
                return
            if attempt < DELETE_ATTEMPTS:
                log.info("victim pod=%s: still there, not terminating; deleting it again", victim.ref)
        raise error

    # -- lifecycle ---------------------------------------------------------------------------------------
    def wait(self, timeout: float) -> bool:
        """Block until no preemption's API calls are queued or running (or ``timeout``)."""
        with self._lock:
            return self._lock.wait_for(lambda: not self._in_flight, timeout)

    def shutdown(self) -> None:
        self._closing.set()
        self._worker.shutdown(wait=False, cancel_futures=True)
