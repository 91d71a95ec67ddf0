"""The API half of dynamic resource allocation: PreBind writes each claim the cycle reserved, Unreserve takes the pod
back out of them when the pod is not bound after all (upstream 1.36 ``dynamicresources.go``: ``PreBind``,
``bindClaim``, ``Unreserve``).

For each :class:`~policy_scheduler.dra.reserve.ClaimReservation` of a decision, in the pod's order, unless the claim
is already reserved for the pod:

- a claim the cycle allocated gets the finalizer ``resource.kubernetes.io/delete-protection`` first, in a plain
  update (kept if an earlier attempt added it), then ``status.allocation``;
- the pod is appended to ``status.reservedFor`` and, as 1.36 does with DRADeviceBindingConditions and
  DRAResourceClaimDeviceStatus on, ``status.allocation.allocationTimestamp`` is set where missing; one status
  update writes both;
- every write is conditional on the claim's resourceVersion. A conflict re-reads the claim and tries again (5 tries,
  upstream's ``retry.DefaultRetry``); a claim deleted meanwhile (``deletionTimestamp``), allocated elsewhere
  meanwhile, or no longer allocated, fails the pod with upstream's message.

Where upstream gives up at once, one thing is added: a write whose outcome is unknown (no reply, a 5xx) is settled
by reading the claim back once the server answers, as the pod's own binding is (:mod:`..client.reachability`): a
write that took effect is not made twice and not forgotten, one that did not is tried again within the same 5 tries.

Unreserve removes the pod from ``status.reservedFor`` of every claim that is allocated and reserved for it, with
upstream's strategic-merge patch (the claim's uid as precondition); the allocation and the finalizer stay, as
upstream leaves them (the resourceclaim controller deallocates a claim once its last consumer is gone). What the
server answers to each write is put in the scheduler's cache at once (when newer than what the watch delivered),
so that no decision sees a device free between a write and its watch event.

PostFilter (:meth:`ClaimBinder.deallocate`): a claim the cycle names after no node fit (``Decision.deallocate``) is
written back with ``status.allocation``, ``reservedFor`` and ``devices`` cleared, in one status update conditional
on the resourceVersion the decision saw, as upstream's ``UpdateStatus``; a failure (a conflict: the claim changed
meanwhile) is logged, not retried, and changes nothing else for the pod (upstream's PostFilter error only ends up in
the FitError's message, which this scheduler does not carry for pods that may preempt).
"""

from __future__ import annotations

import copy
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ...cache.scheduler_cache import SchedulerCache
from ...dra.reserve import PodClaims, deallocated_claim_raw, pod_reference
from ...errors import ObjectError
from ...model.dra import CLAIM_FINALIZER, ResourceClaim
from ...model.fields import resource_version
from ...model.pod import Pod
from ..client.reachability import Reachability, read_until_answered
from ..client.rest import STRATEGIC_MERGE_PATCH, ApiError, RestClient

log = logging.getLogger(__name__)

PLUGIN = "DynamicResources"
FINALIZER = CLAIM_FINALIZER
RESOURCE = "/apis/resource.k8s.io/v1"
#: ``retry.DefaultRetry``: 5 tries, 10 ms apart.
RETRY_STEPS = 5
RETRY_DELAY = 0.01
#: Locks the claims' writes are spread over (a claim's writes take one of them).
CLAIM_LOCK_STRIPES = 256


class ClaimBindingError(Exception):
    """PreBind failed; the message is upstream's (without the ``running PreBind plugin`` prefix)."""


def claim_path(namespace: str, name: str) -> str:
    return f"{RESOURCE}/namespaces/{namespace}/resourceclaims/{name}"


def is_reserved_for(raw: dict[str, Any], pod: Pod) -> bool:
    """``resourceclaim.IsReservedForPod``: the pod's uid is in ``status.reservedFor``."""
    return any((r or {}).get("uid") == pod.uid for r in (raw.get("status") or {}).get("reservedFor") or ())


def _ref(raw: dict[str, Any]) -> str:
    meta = raw.get("metadata") or {}
    return f"{meta.get('namespace')}/{meta.get('name')}"


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


@dataclass
class PreBound:
    """What PreBind left: ``claims`` holds, per reservation, the claim as last known (the server's reply to our
    write, else the claim as decided); ``error`` is set when PreBind failed."""

    claims: list[dict[str, Any]]
    error: str | None = None
    written: list[int] = field(default_factory=list)  # indexes of the claims this PreBind wrote


class ClaimBinder:
    """PreBind and Unreserve of one scheduler; ``closing`` set: settling an unknown outcome gives up."""

    def __init__(self, rest: RestClient, cache: SchedulerCache, *, reachability: Reachability | None = None,
                 closing: threading.Event | None = None, now: Callable[[], str] = _now,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self.rest = rest
        self.cache = cache
        self.reachability = reachability
        self.closing = closing or threading.Event()
        self.now = now
        self.sleep = sleep
        self._claim_locks = tuple(threading.Lock() for _ in range(CLAIM_LOCK_STRIPES))

    # -- PreBind ---------------------------------------------------------------------------------------------
    def pre_bind(self, claims: PodClaims) -> PreBound:
        """Write each reservation not yet in its claim, in the pod's order; stop at the first failure.

        The bind workers of pods sharing a claim write it one at a time, each from the newest claim this
        scheduler knows (its own last write's reply, or the watch's): upstream's conflict-and-retry, without the
        rejected write and the read that a conflict costs."""
        pod = claims.pod
        out = PreBound([copy.deepcopy(r.claim.raw) for r in claims.reservations])
        for i, reservation in enumerate(claims.reservations):
            key = reservation.claim.key
            with self._claim_locks[hash(key) % CLAIM_LOCK_STRIPES]:
                out.claims[i] = self._newest(out.claims[i])
                if is_reserved_for(out.claims[i], pod):
                    continue
                try:
                    out.claims[i] = self._bind_claim(out.claims[i], reservation.allocation, pod)
                except ClaimBindingError as e:
                    out.error = str(e)
                    return out
            out.written.append(i)
            log.info("reserved claim=%s pod=%s node=%s", _ref(out.claims[i]), pod.ref, claims.node)
        return out

    def _newest(self, claim: dict[str, Any]) -> dict[str, Any]:
        """``claim``, or the API object the cache holds for it when that one is newer (same uid)."""
        meta = claim.get("metadata") or {}
        with self.cache.lock:
            current = self.cache.cluster.api_resource_claim(meta.get("namespace") or "", meta.get("name") or "")
        if (current is not None and current.uid == meta.get("uid")
                and resource_version(current.raw) > resource_version(claim)):
            return copy.deepcopy(current.raw)
        return claim

    def _bind_claim(self, claim: dict[str, Any], allocation: dict[str, Any] | None, pod: Pod) -> dict[str, Any]:
        """``bindClaim``: the claim as the server holds it once the allocation (if any) and the pod's reservation
        are written."""
        ref = _ref(claim)
        meta = claim.get("metadata") or {}
        path = claim_path(meta.get("namespace") or "", meta.get("name") or "")
        binding = pod_reference(pod)
        refresh = False
        error: ClaimBindingError | None = None
        for step in range(RETRY_STEPS):
            if step:
                self.sleep(RETRY_DELAY)
            if refresh:
                try:
                    claim = self.rest.get(path)
                except ApiError as e:
                    raise ClaimBindingError(f"get updated claim {ref} after conflict: {e.message}") from None
                log.debug("retrying update after conflict claim=%s", ref)
            refresh = True
            if is_reserved_for(claim, pod):  # an earlier write whose reply was lost took effect
                return claim
            claim = copy.deepcopy(claim)
            meta = claim.setdefault("metadata", {})
            status = claim.setdefault("status", {})
            if meta.get("deletionTimestamp"):
                raise ClaimBindingError(f"claim {ref} got deleted in the meantime")
            what = "add reservation to claim"
            if allocation is not None:
                what = "add allocation and reservation to claim"
                if status.get("allocation"):
                    raise ClaimBindingError(f"claim {ref} got allocated elsewhere in the meantime")
                finalizers = meta.get("finalizers") or []
                if FINALIZER not in finalizers:
                    meta["finalizers"] = [*finalizers, FINALIZER]
                    try:
                        claim = self._write(path, claim)
                    except ApiError as e:
                        settled, error = self._after_failed_write(path, e, f"add finalizer to claim {ref}", pod)
                        if not e.conflict:
                            if settled is None:
                                raise error from None
                            claim, refresh = settled, False  # go on from what the server holds
                        continue
                    self._observe(claim)
                    status = claim.setdefault("status", {})
                status["allocation"] = copy.deepcopy(allocation)
            status["reservedFor"] = [*(status.get("reservedFor") or []), binding]
            if not status.get("allocation"):
                raise ClaimBindingError(f"claim {ref} got deallocated elsewhere in the meantime")
            status["allocation"].setdefault("allocationTimestamp", self.now())
            try:
                reply = self._write(f"{path}/status", claim)
            except ApiError as e:
                settled, error = self._after_failed_write(path, e, f"{what} {ref}", pod)
                if not e.conflict:
                    if settled is None:
                        raise error from None
                    claim, refresh = settled, False  # checked again at the top: written, or to be written
                continue
            self._observe(reply)
            return reply
        assert error is not None
        raise error

    def _write(self, path: str, claim: dict[str, Any]) -> dict[str, Any]:
        return self.rest.put(path, {**claim, "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim"})

    def _after_failed_write(self, path: str, error: ApiError, what: str,
                            pod: Pod) -> tuple[dict[str, Any] | None, ClaimBindingError]:
        """A write failed: upstream's error for it, and, when its outcome is unknown, the claim read back once the
        server answers (None when it never did before shutdown, or refused the read)."""
        failure = ClaimBindingError(f"{what}: {error.message}")
        if not error.indefinite:
            return None, failure
        log.info("%s for pod %s: outcome unknown (%s); reading the claim back", what, pod.ref, error)
        try:
            settled = read_until_answered(lambda: self.rest.get(path), self.reachability, self.closing, what)
        except ApiError as e:
            return None, ClaimBindingError(f"{what}: {e.message}")
        return settled, failure

    # -- Unreserve -------------------------------------------------------------------------------------------
    def unreserve(self, pod: Pod, claims: list[dict[str, Any]]) -> None:
        """Remove the pod from ``status.reservedFor`` of each allocated claim reserved for it (``claims``: as
        :meth:`pre_bind` left them). Failures are logged: the next attempt finds the claim reserved for the pod."""
        for claim in claims:
            if not (claim.get("status") or {}).get("allocation") or not is_reserved_for(claim, pod):
                continue
            meta = claim.get("metadata") or {}
            path = claim_path(meta.get("namespace") or "", meta.get("name") or "")
            patch = {"metadata": {"uid": meta.get("uid")},
                     "status": {"reservedFor": [{"$patch": "delete", "uid": pod.uid}]}}
            log.info("unreserve resourceclaim=%s pod=%s", _ref(claim), pod.ref)
            try:
                # The patch removes by uid: sending it again is harmless, so an unknown outcome is simply retried.
                reply = read_until_answered(
                    lambda p=path, b=patch: self.rest.patch(f"{p}/status", b, STRATEGIC_MERGE_PATCH),
                    self.reachability, self.closing, f"unreserve {_ref(claim)}")
            except ApiError as e:
                log.error("unreserve resourceclaim=%s pod=%s: %s", _ref(claim), pod.ref, e)
                continue
            if reply is not None:
                self._observe(reply)

    # -- PostFilter ------------------------------------------------------------------------------------------
    def deallocate(self, claim: ResourceClaim, pod: Pod) -> bool:
        """Upstream's PostFilter write: ``claim`` (as the decision saw it) deallocated. True when the server took it."""
        path = claim_path(claim.namespace, claim.name)
        log.info("Deallocation of ResourceClaim pod=%s resourceclaim=%s", pod.ref, claim.ref)
        try:
            reply = self._write(f"{path}/status", deallocated_claim_raw(claim))
        except ApiError as e:
            log.warning("deallocating resourceclaim=%s for pod=%s failed: %s", claim.ref, pod.ref, e.message)
            return False
        self._observe(reply)
        return True

    # -- the cache ---------------------------------------------------------------------------------------------
    def _observe(self, raw: dict[str, Any]) -> None:
        """The server's reply about a claim into the cache, unless the watch already delivered something newer. The
        cache gets a copy: the caller goes on from the reply (the finalizer's reply becomes the status write's body),
        and what it adds there is not what the server holds."""
        try:
            claim = ResourceClaim.from_dict(copy.deepcopy(raw))
        except ObjectError as e:
            log.warning("ignoring the claim the API server returned: %s", e)
            return
        with self.cache.lock:
            current = self.cache.cluster.api_resource_claim(claim.namespace, claim.name)
            if current is None or resource_version(raw) > resource_version(current.raw):
                self.cache.cluster.add_resource_claim(claim)
