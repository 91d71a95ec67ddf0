"""One pod through the scheduler (upstream ``scheduler.go`` ``scheduleOne`` up to the bind).

:meth:`SchedulingCycle.decide` runs the algorithm for a popped pod; after a FitError it asks the preemption
executor to preempt (gate ``PodPriority``), after DynamicResources' PostFilter has named the claim to deallocate,
if any (``Decision.deallocate``: the caller writes it); on success it assumes the pod's late-bound volumes (upstream's
Reserve) and the pod itself on the chosen node, and clears the pod's nomination. What it decided comes back
as a :class:`Decision`: the caller binds an assumed pod, and reports and re-queues a failed one.

The daemon (:mod:`policy_scheduler.kube.daemon.scheduler`) calls it under the cache lock, with the API server
behind its binder and preemption executor; the offline commands (:mod:`policy_scheduler.offline.driver`)
with an in-memory cluster, a binder that only records, and a virtual clock. Pure: no network, no threads,
no clock but the one that times the algorithm.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from ..cache.scheduler_cache import CacheError
from ..core.fit_error import FitError
from ..dra.reserve import PodClaims, assume_pod_claims, revert_pod_claims
from ..errors import PredicateError, RefusedPodError, SchedulingError
from ..predicates.dynamic_resources import dynamic_resources_of
from ..predicates.volume_binder import (
    PodVolumes,
    VolumeBindingError,
    assume_pod_volumes,
    decide_pod_volumes,
    revert_assumed_pod_volumes,
    volume_binder_of,
)

if TYPE_CHECKING:
    from ..core.explain import Explanation
    from ..core.generic_scheduler import GenericScheduler
    from ..model.dra import ResourceClaim
    from ..model.pod import Pod

log = logging.getLogger(__name__)

#: The ``PodScheduled=False`` reasons (upstream ``v1.PodReasonUnschedulable``, ``SchedulerError``).
UNSCHEDULABLE = "Unschedulable"
SCHEDULER_ERROR = "SchedulerError"


class Assumer(Protocol):
    """Where an assumed pod goes: the daemon's SchedulerCache (TTL, confirmation by the watch), or the
    offline cluster (the assumption is final). Raises CacheError when it cannot."""

    def assume_pod(self, pod: Pod) -> None:
        ...


class PreemptionExecutor(Protocol):
    """Carries out ``Preempt`` after a FitError; True when the pod's re-queue is left to it."""

    def attempt(self, pod: Pod, error: FitError, algorithm: GenericScheduler) -> bool:
        ...


class Nominations(Protocol):
    def clear_nomination(self, pod: Pod) -> bool:
        ...


class _NoNominations:
    """Where nothing is ever nominated (the gate PodPriority off, one-off placements)."""

    def clear_nomination(self, pod: Pod) -> bool:
        return False


NO_NOMINATIONS = _NoNominations()


@dataclass
class Decision:
    """What one cycle decided for ``pod``.

    Assumed: ``host`` and ``assumed`` set (``volumes``: its late-bound claims, assumed with it). Failed:
    ``error`` (the FailedScheduling message), ``reason`` / ``message`` (the PodScheduled=False condition),
    ``unschedulable`` (it failed for lack of a node: back to unschedulableQ), ``requeue`` (False: the
    preemption executor re-queues it), ``result`` (``unschedulable`` or ``error`` for the attempt metrics,
    None for a failure after the algorithm, which upstream does not count as an attempt's result).
    ``abandoned``: the caller told it to stop after the algorithm ran; nothing was assumed. ``deallocate``: after
    a FitError, the allocated claim DynamicResources' PostFilter deallocates (the caller writes it).
    """

    pod: Pod
    algorithm: GenericScheduler
    host: str | None = None
    assumed: Pod | None = None
    volumes: PodVolumes | None = None
    claims: PodClaims | None = None
    deallocate: ResourceClaim | None = None
    error: str | None = None
    fit_error: FitError | None = None
    reason: str = ""
    message: str | None = None
    unschedulable: bool = False
    requeue: bool = True
    result: str | None = None
    explanation: Explanation | None = None
    abandoned: bool = False
    decided_ns: int = 0  # time.monotonic_ns() when the algorithm returned (the daemon's latency metric)

    @property
    def failed_predicates(self) -> dict[str, list[str]] | None:
        return self.fit_error.failed_predicates if self.fit_error is not None else None


class SchedulingCycle:
    """``scheduleOne``'s decision half, shared by ``run`` and the offline commands.

    ``algorithm`` returns the generic scheduler in force (the daemon swaps it on a policy change);
    ``cache`` takes the assumed pod; ``nominations`` (the queue) forgets an assumed pod's nomination;
    ``preemption`` (None: the gate is off) is asked after a FitError; ``volumes``: whether late-bound
    claims are assumed (the cluster's rules); ``explain``: decide through ``explain`` (the offline
    ``--explain``), keeping every node's verdicts on the decision.
    """

    def __init__(
        self,
        *,
        algorithm: Callable[[], GenericScheduler],
        cache: Assumer,
        nominations: Nominations,
        preemption: PreemptionExecutor | None = None,
        volumes: bool = True,
        explain: bool = False,
    ) -> None:
        self.algorithm = algorithm
        self.cache = cache
        self.nominations = nominations
        self.preemption = preemption
        self.volumes = volumes
        self.explain = explain

    def decide(self, pod: Pod, proceed: Callable[[], bool] = lambda: True) -> Decision:
        """Schedule ``pod``; ``proceed()`` is asked once the algorithm has run (False: assume nothing)."""
        algorithm = self.algorithm()
        decision = Decision(pod, algorithm)
        error = self._run_algorithm(decision)
        decision.decided_ns = time.monotonic_ns()
        if error is not None:
            self._failed(decision, error)
            return decision
        if not proceed():
            decision.abandoned = True
            return decision
        host = decision.host
        assert host is not None
        try:
            volumes = self._assume_volumes(algorithm, pod, host)
        except (PredicateError, VolumeBindingError) as e:
            log.info("assuming the volumes of pod=%s on node=%s failed: %s", pod.ref, host, e)
            return self._error(decision, f'running Reserve plugin "VolumeBinding": {e}', str(e))
        try:
            claims = self._reserve_claims(algorithm, pod, host)
        except SchedulingError as e:
            if volumes is not None:
                revert_assumed_pod_volumes(algorithm.cluster, volumes)
            log.info("reserving the claims of pod=%s on node=%s failed: %s", pod.ref, host, e)
            return self._error(decision, f'running Reserve plugin "DynamicResources": {e}', str(e))
        assumed = pod.with_node_name(host)
        try:
            self.cache.assume_pod(assumed)
        except CacheError as e:
            if volumes is not None:
                revert_assumed_pod_volumes(algorithm.cluster, volumes)
            if claims is not None:
                revert_pod_claims(algorithm.cluster, claims)
            log.error("scheduler cache AssumePod failed: %s", e)
            return self._error(decision, f"AssumePod failed: {e}", str(e))
        self.nominations.clear_nomination(pod)  # 1.11's DeleteNominatedPodIfExists: it is on its node now
        decision.assumed, decision.volumes, decision.claims = assumed, volumes, claims
        return decision

    def _run_algorithm(self, decision: Decision) -> SchedulingError | None:
        pod, algorithm = decision.pod, decision.algorithm
        try:
            if self.explain:
                explanation = decision.explanation = algorithm.explain(pod)
                decision.host = explanation.host
                if explanation.host is None:
                    return explanation.fit_error or SchedulingError(explanation.error or "")
            else:
                decision.host = algorithm.schedule(pod)
        except SchedulingError as e:
            return e
        except Exception as e:  # a plugin bug fails this pod, not the scheduler
            log.exception("scheduling %s failed", pod.ref)
            return SchedulingError(f"{type(e).__name__}: {e}")
        return None

    def _failed(self, decision: Decision, error: SchedulingError) -> None:
        """The algorithm found no node: preempt after a FitError, then report it (upstream's error func)."""
        pod = decision.pod
        if isinstance(error, FitError):
            decision.fit_error = error
            decision.deallocate = self._claim_to_deallocate(decision.algorithm, pod, error)
            if self.preemption is not None:
                try:
                    decision.requeue = not self.preemption.attempt(pod, error, decision.algorithm)
                except Exception:  # an engine bug fails this preemption, not the scheduler
                    log.exception("preemption for %s failed", pod.ref)
        # A refused field keeps the pod unschedulable whatever the nodes: it waits like a FitError's pod.
        decision.unschedulable = isinstance(error, (FitError, RefusedPodError))
        decision.result = "unschedulable" if decision.unschedulable else "error"
        decision.error = decision.message = str(error)  # after preemption: its message may have been added
        decision.reason = UNSCHEDULABLE
        decision.host = None
        log.info("unschedulable pod=%s reason=%r", pod.ref, decision.error)

    def _error(self, decision: Decision, event: str, message: str) -> Decision:
        """A failure after the algorithm chose ``decision.host`` (Reserve, AssumePod): retried, not unschedulable."""
        decision.error, decision.message, decision.reason = event, message, SCHEDULER_ERROR
        decision.host = None
        return decision

    def _reserve_claims(self, algorithm: GenericScheduler, pod: Pod, host: str) -> PodClaims | None:
        """Upstream's DynamicResources Reserve: the claims' allocations on ``host``, assumed in the cluster (None
        when the pod has no claims or DynamicResources does not decide for it)."""
        if not pod.resource_claims:
            return None
        checker = dynamic_resources_of(algorithm.algorithms_for(pod).predicates)
        if checker is None:
            return None
        claims = checker.reserve(pod, algorithm.cluster.node_infos.get(host))
        if claims is None:
            return None
        assume_pod_claims(algorithm.cluster, claims)
        return claims

    def _claim_to_deallocate(self, algorithm: GenericScheduler, pod: Pod, error: FitError) -> ResourceClaim | None:
        """Upstream's DynamicResources PostFilter, which runs before preemption's: the claim it deallocates."""
        if not pod.resource_claims:
            return None
        checker = dynamic_resources_of(algorithm.algorithms_for(pod).predicates)
        if checker is None:
            return None
        return checker.claim_to_deallocate(pod, error.failed_predicates)

    def _assume_volumes(self, algorithm: GenericScheduler, pod: Pod, host: str) -> PodVolumes | None:
        """Upstream's VolumeBinding Reserve: the bindings for ``host``, assumed in the cluster (None when the
        pod's claims are all bound or the cluster's volume binder does not decide for it)."""
        if not self.volumes:
            return None
        binder = volume_binder_of(algorithm.predicates)
        if binder is None:
            return None
        decided = decide_pod_volumes(binder, pod, host)
        if decided is None or decided.empty:
            return None
        return assume_pod_volumes(algorithm.cluster, decided)
