"""The scheduling loop (upstream ``scheduler.go`` ``scheduleOne``): pop, decide, assume, bind.

One pod at a time: the engine decides under the cache lock (so informer events never interleave with
a decision), the pod is assumed onto the chosen node, and its bind goes to a bounded pool so the next
pod is decided while binds are in flight. A failed attempt records a ``FailedScheduling`` event and
the ``PodScheduled=False`` condition, and re-queues the pod after its back-off. With the gate
``PodPriority`` a FitError is followed by a preemption attempt (:mod:`.preemption`): decided here, its API
calls made by the preemption worker, which re-queues the pod once they are done.

A bind whose outcome is unknown (no reply, a connection dropped, a 5xx) keeps the pod assumed on its node,
its expiry not started: the bind worker reads the pod back once the API server answers (:mod:`..client.reachability`)
and only an answer that says *not bound* forgets and re-queues it. While the server is known to be
unreachable the loop pops nothing.

Under the cluster's rules, a pod with late-bound claims (``WaitForFirstConsumer``) also has its volumes
assumed with it (upstream's Reserve); the bind worker writes the PV pre-bindings / selected-node
annotations and the pod waits (:mod:`.volumebinding`, off the bind pool) until every claim is bound,
then is bound itself; a failure or the timeout undoes both assumptions and re-queues the pod.

Shutting down (:meth:`SchedulingLoop.drain`, the daemon's stop event ``stopping``): no pod popped after the stop
is decided, no decision is re-queued, binds not yet sent are not sent (the pod is left for the next scheduler, as
if this one had died before), and the binds on the wire finish within the daemon's bound.

A pod whose ResourceClaims the cycle reserved (``Decision.claims``) has them written before its Binding
(:mod:`.claimbinding`: upstream's DynamicResources PreBind), after its volumes; on 1.35+ it is first nominated to
its node, as upstream does before any PreBind. If writing a claim fails, or the Binding does, the pod is taken
out of the claims it was reserved in (Unreserve), the claims' assumption is reverted, and the pod is re-queued
with upstream's ``running PreBind plugin "DynamicResources": ...``. A pod that fits no node because a claim is
allocated where it cannot go has that claim deallocated first when the cycle says so (``Decision.deallocate``:
upstream's DynamicResources PostFilter, :meth:`.claimbinding.ClaimBinder.deallocate`).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from ...cache.scheduler_cache import CacheError, SchedulerCache
from ...core.extender import binder_for
from ...core.generic_scheduler import GenericScheduler
from ...core.modern_pods import is_gated
from ...dra.reserve import PodClaims, revert_pod_claims
from ...features import KubernetesLine
from ...model.pod import Pod
from ...predicates.volume_binder import (
    PodVolumes,
    VolumeBindingError,
    revert_assumed_pod_volumes,
)
from ...queue import SchedulingQueue
from ...scheduling.cycle import SCHEDULER_ERROR, SchedulingCycle
from ..client.reachability import Reachability, read_until_answered
from ..client.rest import ApiError
from ..metrics import SchedulerMetrics, microseconds
from .binder import Binder, BindOutcome, ExtenderBinder
from .claimbinding import PLUGIN as CLAIMS_PLUGIN
from .claimbinding import ClaimBinder, PreBound
from .events import NORMAL, WARNING, EventRecorder, PodConditionUpdater
from .preemption import Preemptor
from .requeuer import Requeuer
from .volumebinding import VolumeBindingManager

log = logging.getLogger(__name__)

BIND_WORKERS = 16
#: The first line whose scheduler nominates a pod to its node before a PreBind that waits (gate
#: NominatedNodeNameForExpectation, beta and on in 1.35), and whose API server clears the nomination on binding.
NOMINATE_BEFORE_PREBIND_FROM: KubernetesLine = (1, 35)


class SchedulingLoop:
    def __init__(
        self,
        *,
        cache: SchedulerCache,
        queue: SchedulingQueue,
        algorithm: Callable[[], GenericScheduler],
        binder: Binder,
        recorder: EventRecorder,
        conditions: PodConditionUpdater,
        requeuer: Requeuer,
        metrics: SchedulerMetrics,
        bind_workers: int = BIND_WORKERS,
        preemptor: Preemptor | None = None,
        volumes: VolumeBindingManager | None = None,
        reachability: Reachability | None = None,
        claims: ClaimBinder | None = None,
        stopping: threading.Event | None = None,
    ) -> None:
        self.cache = cache
        # The process is shutting down (the daemon's stop event): checked with each loop's own stop, so that no
        # pod is decided after it is set, even before the daemon has told the loop to stop.
        self.stopping = stopping or threading.Event()
        self.reachability = reachability
        self.volumes = volumes
        self.queue = queue
        self.algorithm = algorithm
        self.binder = binder
        self.recorder = recorder
        self.conditions = conditions
        self.requeuer = requeuer
        self.metrics = metrics
        self.preemptor = preemptor
        self.cycle = SchedulingCycle(algorithm=algorithm, cache=cache, nominations=queue, preemption=preemptor,
                                     volumes=volumes is not None)
        self._pool = ThreadPoolExecutor(max_workers=bind_workers, thread_name_prefix="bind")
        self._in_flight = threading.BoundedSemaphore(bind_workers * 2)
        self._pending_binds = 0
        self._binds_done = threading.Condition()
        self._closing = threading.Event()  # shutdown: binds still settling give up
        self._draining = threading.Event()  # shutdown: binds not yet sent are not sent
        self.abandoned = 0  # binds not sent because of the shutdown
        self.claims = claims
        if claims is not None:
            claims.closing = self._closing
        # PreEnqueue of the pod's ResourceClaims (the pod handler's): a popped pod whose claims cannot be found
        # (any more) is held back without an attempt or an event, as upstream's queue does on activation.
        self.hold_back: Callable[[Pod], bool] | None = None
        # The cluster's rules, pods with claims: 1.36's skipPodSchedule also skips a popped pod that is assumed
        # (queued again by an update that came during its cycle, before it was assumed).
        self.skip_assumed = False

    # -- the loop --------------------------------------------------------------------------------
    def run(self, stop: threading.Event) -> None:
        while not self._halted(stop):
            if self.reachability is not None and not self.reachability.reachable:
                # Nothing decided now could be bound: pause (the reachability tracker logs it once).
                self.reachability.wait_reachable(stop)
                continue
            self.schedule_one(timeout=0.2, stop=stop)

    def _halted(self, stop: threading.Event | None) -> bool:
        """Whether this loop may decide no more: its ``stop`` (leadership lost, or shutting down) or the process's."""
        return (stop is not None and stop.is_set()) or self.stopping.is_set()

    def schedule_one(self, timeout: float | None = None, stop: threading.Event | None = None) -> None:
        pod = self.queue.pop(timeout)
        if pod is None:
            return
        if self._halted(stop):
            # Told to stop (leadership lost, or shutting down) while pop waited: decide nothing more.
            self.queue.add_unschedulable_if_not_present(pod, False)
            return
        if is_gated(pod):  # never queued (PodHandler); a gated pod is never decided or assumed either
            log.debug("not scheduling gated pod %s", pod.ref)
            return
        if self.skip_assumed and pod.resource_claims and self.cache.is_assumed(pod.key):
            log.debug("Skip schedule assumed pod %s", pod.ref)
            return
        if self.hold_back is not None and pod.resource_claims and self.hold_back(pod):
            log.debug("not scheduling pod %s: its claims cannot be used yet", pod.ref)
            return
        if pod.deletion_timestamp:
            self.queue.clear_nomination(pod)
            message = f"skip schedule deleting pod: {pod.namespace}/{pod.name}"
            self.recorder.pod_event(pod, WARNING, "FailedScheduling", message)
            return
        log.debug("Attempting to schedule pod: %s", pod.ref)
        start = time.monotonic_ns()
        with self.cache.lock:
            decision = self.cycle.decide(pod, proceed=lambda: not self._halted(stop))
            self.metrics.scheduling_algorithm_latency.observe(microseconds(start, decision.decided_ns))
            if decision.abandoned:
                # Stopped during the decision: bind nothing, leave the pod to whoever schedules next.
                self.queue.add_unschedulable_if_not_present(pod, False)
                return
            if decision.assumed is None:
                if decision.result is not None:
                    self.metrics.schedule_attempts.labels(result=decision.result).inc()
                if decision.deallocate is None or self.claims is None:
                    self._error(pod, decision.error or "", decision.reason, decision.message,
                                unschedulable=decision.unschedulable, requeue=decision.requeue)
                    return
            else:
                binder = self._binder(decision.algorithm, pod)
        if decision.assumed is None:
            # DynamicResources PostFilter: the claim deallocated (outside the cache lock: an API write), then the
            # pod reported and re-queued as any unschedulable pod; the claim's update event moves it.
            assert decision.deallocate is not None and self.claims is not None
            self.claims.deallocate(decision.deallocate, pod)
            self._error(pod, decision.error or "", decision.reason, decision.message,
                        unschedulable=decision.unschedulable, requeue=decision.requeue)
            return
        self.metrics.schedule_attempts.labels(result="scheduled").inc()
        self._in_flight.acquire()
        with self._binds_done:
            self._pending_binds += 1
        self._pool.submit(self._bind, decision.assumed, decision.host, start, binder, decision.volumes,
                          decision.claims)

    def _binder(self, algorithm: GenericScheduler, pod: Pod) -> Binder | ExtenderBinder:
        """The policy's binding extender when it is interested in the pod, else the API server."""
        extender = binder_for(algorithm.extenders, pod)
        return self.binder if extender is None else ExtenderBinder(extender)

    def _error(self, pod: Pod, event: str, reason: str, message: str | None, *, unschedulable: bool,
               requeue: bool = True) -> None:
        """The error handler, the FailedScheduling event and the PodScheduled=False condition. Shutting down, the pod
        is not re-queued: nothing would pop it, and the next scheduler finds it pending."""
        if requeue and not self._draining.is_set() and not self.stopping.is_set():
            self.requeuer.requeue(pod, unschedulable)
        self.recorder.pod_event(pod, WARNING, "FailedScheduling", event)
        self.conditions.update(pod, "False", reason, message)

    # -- binding (bind pool threads) -------------------------------------------------------------
    def _bind(self, assumed: Pod, host: str, start: int, binder: Binder | ExtenderBinder | None = None,
              volumes: PodVolumes | None = None, claims: PodClaims | None = None) -> None:
        try:
            if self._abandon(assumed):
                return
            if volumes is not None:
                self._bind_volumes(assumed, host, start, binder, volumes, claims)
            else:
                self._bind_pod(assumed, host, start, binder, claims)
        finally:
            self._in_flight.release()
            with self._binds_done:
                self._pending_binds -= 1
                self._binds_done.notify_all()

    def _bind_volumes(self, assumed: Pod, host: str, start: int, binder: Binder | ExtenderBinder | None,
                      volumes: PodVolumes, claims: PodClaims | None = None) -> None:
        """``BindPodVolumes``: write, then wait off the pool; the pod's bind follows once they are bound. From 1.35
        the pod is first nominated to ``host``, as upstream's binding cycle does before a PreBind that waits."""
        assert self.volumes is not None
        if self._nominates_before_prebind() and (assumed.raw.get("status") or {}).get("nominatedNodeName") != host:
            self.binder.nominate(assumed, host)
        try:
            written = self.volumes.bind_api_update(assumed, volumes)
        except VolumeBindingError as e:
            self._volumes_failed(assumed, volumes, e)
            return
        except Exception as e:  # a bug in the write path fails this pod, not the daemon
            log.exception("writing the volume bindings of %s failed", assumed.ref)
            self._volumes_failed(assumed, volumes, VolumeBindingError(f"{type(e).__name__}: {e}"))
            return

        def done(error: VolumeBindingError | None) -> None:
            if error is not None:
                self._volumes_failed(assumed, volumes, error)
                return
            log.debug("Success binding volumes for pod %s", assumed.ref)
            with self._binds_done:
                self._pending_binds += 1
            self._pool.submit(self._bind_after_volumes, assumed, host, start, binder, claims, volumes)

        self.volumes.wait(assumed, written, done)

    def _bind_after_volumes(self, assumed: Pod, host: str, start: int, binder: Binder | ExtenderBinder | None,
                            claims: PodClaims | None = None, volumes: PodVolumes | None = None) -> None:
        try:
            self._bind_pod(assumed, host, start, binder, claims, volumes)
        finally:
            with self._binds_done:
                self._pending_binds -= 1
                self._binds_done.notify_all()

    def _volumes_failed(self, assumed: Pod, volumes: PodVolumes, error: VolumeBindingError) -> None:
        """PreBind failed: Unreserve (the volumes' assumption), forget the pod, re-queue it with an event."""
        with self.cache.lock:
            revert_assumed_pod_volumes(self.cache.cluster, volumes)
        self.cache.finish_binding(assumed)
        self._forget(assumed)
        self.metrics.bind_outcomes.labels(outcome="volume_binding_failed").inc()
        message = f'running PreBind plugin "VolumeBinding": {error}'
        log.info("Failed to bind volumes pod=%s node=%s: %s", assumed.ref, volumes.node, error)
        if self._nominates_before_prebind():  # upstream's failure handler clears the nomination it made
            self.binder.nominate(assumed, "")
        self._error(assumed.with_node_name(""), message, SCHEDULER_ERROR, message, unschedulable=False)

    def _pre_bind_claims(self, assumed: Pod, host: str, claims: PodClaims, volumes: PodVolumes | None) -> PreBound | None:
        """DynamicResources PreBind: the claims written; None (and the pod re-queued) when that failed."""
        assert self.claims is not None
        nominated = volumes is None and self._nominates_before_prebind()
        if nominated and (assumed.raw.get("status") or {}).get("nominatedNodeName") != host:
            self.binder.nominate(assumed, host)
        try:
            prebound = self.claims.pre_bind(claims)
        except Exception as e:  # a bug in the write path fails this pod, not the daemon
            log.exception("writing the claims of %s failed", assumed.ref)
            prebound = PreBound([dict(r.claim.raw) for r in claims.reservations], f"{type(e).__name__}: {e}")
        if prebound.error is None:
            return prebound
        self._unreserve_claims(assumed, claims, prebound, volumes)
        self.metrics.bind_outcomes.labels(outcome="claim_binding_failed").inc()
        message = f'running PreBind plugin "{CLAIMS_PLUGIN}": {prebound.error}'
        log.info("Failed to bind claims pod=%s node=%s: %s", assumed.ref, host, prebound.error)
        if self._nominates_before_prebind():  # upstream's failure handler clears the nomination it made
            self.binder.nominate(assumed, "")
        self._error(assumed.with_node_name(""), message, SCHEDULER_ERROR, message, unschedulable=False)
        return None

    def _unreserve_claims(self, assumed: Pod, claims: PodClaims, prebound: PreBound,
                          volumes: PodVolumes | None) -> None:
        """Unreserve: the pod out of its claims' ``reservedFor``, the claims' (and volumes') assumption reverted,
        the pod forgotten."""
        assert self.claims is not None
        try:
            self.claims.unreserve(assumed, prebound.claims)
        except Exception:  # noqa: BLE001 - the assumption must be reverted all the same
            log.exception("unreserving the claims of %s failed", assumed.ref)
        with self.cache.lock:
            revert_pod_claims(self.cache.cluster, claims)
            if volumes is not None:
                revert_assumed_pod_volumes(self.cache.cluster, volumes)
        self.cache.finish_binding(assumed)
        self._forget(assumed)

    def _nominates_before_prebind(self) -> bool:
        return self.cache.cluster.kubernetes_line >= NOMINATE_BEFORE_PREBIND_FROM

    def _bind_pod(self, assumed: Pod, host: str, start: int, binder: Binder | ExtenderBinder | None = None,
                  claims: PodClaims | None = None, volumes: PodVolumes | None = None) -> None:
        try:
            if self.reachability is not None:  # decided before the outage was known: hold it until it ends
                self.reachability.wait_reachable(self._draining)
            if self._abandon(assumed):
                return
            prebound = None
            if claims is not None and claims.reservations and self.claims is not None:
                prebound = self._pre_bind_claims(assumed, host, claims, volumes)
                if prebound is None:
                    return
            bind_start = time.monotonic_ns()
            outcome, error = (binder or self.binder).bind(assumed, host)
            if outcome is BindOutcome.UNKNOWN:
                outcome = self._settle(assumed, host, error)
                if outcome is BindOutcome.UNKNOWN:
                    return  # shutting down with the server silent: the assumption dies with the process
            self.cache.finish_binding(assumed)
            self.metrics.bind_outcomes.labels(outcome=outcome.value).inc()
            end = time.monotonic_ns()
            if outcome is BindOutcome.SUCCESS:
                self.metrics.binding_latency.observe(microseconds(bind_start, end))
                log.info("scheduled pod=%s node=%s", assumed.ref, host)
                self.recorder.pod_event(assumed, NORMAL, "Scheduled", f"Successfully assigned {assumed.name} to {host}")
            elif outcome is BindOutcome.CONFLICT:
                # Already bound: the watch reports where, and the cache follows it.
                log.info("pod %s was already bound: %s", assumed.ref, error)
            else:
                if prebound is not None and claims is not None:  # Unreserve: the claims were written for nothing
                    self._unreserve_claims(assumed, claims, prebound, None)
                self._forget(assumed)
                if outcome is not BindOutcome.NOT_FOUND:
                    log.info("Failed to bind pod: %s: %s", assumed.ref, error)
                    self._error(assumed.with_node_name(""), f"Binding rejected: {error}", "BindingRejected", None,
                                unschedulable=False)
            self.metrics.e2e_scheduling_latency.observe(microseconds(start, end))
        except Exception:
            log.exception("binding %s to %s failed", assumed.ref, host)

    def _settle(self, assumed: Pod, host: str, error: Exception | None) -> BindOutcome:
        """The bind's outcome is unknown: the pod stays assumed on ``host`` (its expiry not started) until
        the server says where it is, read back once the server answers, or the watch settles it first."""
        self.metrics.bind_unknown_outcomes.inc()
        log.info("bind of pod=%s node=%s: outcome unknown (%s); kept assumed until the API server answers",
                 assumed.ref, host, error)

        source = "read back"

        def read() -> BindOutcome:
            nonlocal source
            if not self.cache.is_assumed(assumed.key):  # the watch saw it bound (or deleted) first
                source = "the watch"
                current = self.cache.cluster.pods.get(assumed.key)
                node = None if current is None else current.node_name
            else:
                node = self.binder.bound_node(assumed)
            if node is None:
                return BindOutcome.NOT_FOUND
            if node == "":
                return BindOutcome.UNBOUND
            return BindOutcome.SUCCESS if node == host else BindOutcome.CONFLICT

        try:
            outcome = read_until_answered(read, self.reachability, self._closing, f"settling the bind of {assumed.ref}")
        except ApiError as e:  # the server will not say (403; 500s that last): a failed bind, as upstream's
            log.warning("settling the bind of pod=%s: %s", assumed.ref, e)
            outcome = BindOutcome.UNBOUND
        if outcome is None:
            log.warning("bind of pod=%s node=%s still unknown at shutdown", assumed.ref, host)
            return BindOutcome.UNKNOWN
        log.info("bind of pod=%s node=%s settled: %s (%s)", assumed.ref, host, outcome.value, source)
        return outcome

    def _forget(self, assumed: Pod) -> None:
        if not self.cache.is_assumed(assumed.key):  # the watch settled it (the pod was deleted)
            return
        try:
            self.cache.forget_pod(assumed)
        except CacheError as e:
            log.error("scheduler cache ForgetPod failed: %s", e)

    def _abandon(self, assumed: Pod) -> bool:
        """Shutting down, a Binding not yet sent is not sent: whether this one is dropped (the pod stays pending on
        the server, its assumption dies with the process; volumes already written stay, as after a crash)."""
        if not self._draining.is_set():
            return False
        with self._binds_done:
            self.abandoned += 1
        log.debug("shutting down: not binding pod %s", assumed.ref)
        return True

    def drain(self) -> None:
        """Shutting down: binds not yet sent are dropped from now on; those on the wire go on (:meth:`wait_for_binds`)."""
        self._draining.set()

    def wait_for_binds(self, timeout: float) -> bool:
        """Block until no bind is in flight (or ``timeout``); True if all finished."""
        with self._binds_done:
            return self._binds_done.wait_for(lambda: self._pending_binds == 0, timeout)

    def shutdown(self) -> None:
        self._closing.set()
        self._pool.shutdown(wait=False, cancel_futures=False)
