"""Reserve: what the scheduler decided for a pod's ResourceClaims on its chosen node (upstream's
DynamicResources ``Reserve``), and its assumption in the cluster until the claims are written.

:class:`PodClaims` is what the cycle hands to whoever writes the claims (the daemon's PreBind, as upstream's
``bindClaim``: finalizer, ``status.allocation``, the pod in ``status.reservedFor``, optimistic concurrency on the
claim's resourceVersion); :func:`assume_pod_claims` makes every later decision see the devices taken and the
claims allocated and reserved for the pod (upstream's in-flight allocations), :func:`revert_pod_claims` undoes
it (Unreserve). Offline the assumption becomes final (``offline/driver.py``: :func:`commit_pod_claims`).

PostFilter's deallocation of a claim that keeps a pod off every node (:func:`deallocated_claim_raw`) is written by
the daemon (``kube/daemon/claimbinding.py``) and, offline, applied at once (:func:`deallocate_claim`).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..model.dra import CLAIM_FINALIZER, ResourceClaim

if TYPE_CHECKING:
    from ..cache.cluster import ClusterState
    from ..model.pod import Pod


@dataclass(frozen=True)
class ClaimReservation:
    """One claim of the pod: ``claim`` as the cache held it when decided (its resourceVersion is the one to
    update against); ``allocation`` the ``status.allocation`` JSON to write (None: already allocated, only the
    pod joins ``status.reservedFor``)."""

    claim: ResourceClaim
    allocation: dict | None


@dataclass(frozen=True)
class PodClaims:
    pod: Pod
    node: str
    reservations: tuple[ClaimReservation, ...]


def consumer_uid(pod: Pod) -> str:
    """The UID the pod is reserved under: its own (an API server's pods always have one); offline, a manifest's
    pod without one is known by its key (``namespace/name``), which the API server would refuse as a UID but
    which names it uniquely in a snapshot."""
    return pod.uid or pod.key


def pod_reference(pod: Pod) -> dict[str, str]:
    """The pod's ``ResourceClaimConsumerReference`` (core group: no apiGroup)."""
    return {"resource": "pods", "name": pod.name, "uid": consumer_uid(pod)}


def reserved_claim_raw(reservation: ClaimReservation, pod: Pod) -> dict[str, Any]:
    """The claim object as it reads once written: finalizer, allocation, the pod in ``reservedFor``."""
    raw = copy.deepcopy(reservation.claim.raw)
    meta = raw.setdefault("metadata", {})
    status = raw.setdefault("status", {}) or {}
    raw["status"] = status
    if reservation.allocation is not None:
        finalizers = list(meta.get("finalizers") or [])
        if CLAIM_FINALIZER not in finalizers:
            finalizers.append(CLAIM_FINALIZER)
        meta["finalizers"] = finalizers
        status["allocation"] = copy.deepcopy(reservation.allocation)
    reserved = list(status.get("reservedFor") or [])
    if not any(r.get("uid") == consumer_uid(pod) for r in reserved):
        reserved.append(pod_reference(pod))
    status["reservedFor"] = reserved
    return raw


def assume_pod_claims(cluster: ClusterState, claims: PodClaims) -> None:
    """The claims count as allocated and reserved for the pod, in memory (the devices are taken)."""
    for reservation in claims.reservations:
        cluster.assume_resource_claim(ResourceClaim.from_dict(reserved_claim_raw(reservation, claims.pod)))


def revert_pod_claims(cluster: ClusterState, claims: PodClaims) -> None:
    """Forget the assumption: decisions see the API objects again."""
    for reservation in claims.reservations:
        cluster.restore_resource_claim(reservation.claim.namespace, reservation.claim.name)


def commit_pod_claims(cluster: ClusterState, claims: PodClaims) -> None:
    """Offline: the reservations are written at once (the claims become the API objects)."""
    for reservation in claims.reservations:
        cluster.add_resource_claim(ResourceClaim.from_dict(reserved_claim_raw(reservation, claims.pod)))
        cluster.restore_resource_claim(reservation.claim.namespace, reservation.claim.name)


def release_pod_claims(cluster: ClusterState, pod: Pod) -> None:
    """Offline, after ``pod`` is deleted (a preemption's victim): what the resourceclaim controller does. A claim
    made for the pod (the pod controls it) is deleted; any other claim loses the pod from ``reservedFor``, and
    one reserved for nobody any more is deallocated. Either way its devices are free again."""
    uid = consumer_uid(pod)
    for claim in list(cluster.iter_resource_claims()):
        if pod.uid and claim.controller_uid == pod.uid:
            cluster.remove_resource_claim(claim.namespace, claim.name)
            continue
        if not claim.reserved_for_uid(uid):
            continue
        raw = copy.deepcopy(claim.raw)
        status = raw.setdefault("status", {})
        status["reservedFor"] = [r for r in status.get("reservedFor") or [] if r.get("uid") != uid]
        if not status["reservedFor"]:
            del status["reservedFor"]
            status.pop("allocation", None)
            meta = raw.get("metadata") or {}
            meta["finalizers"] = [f for f in meta.get("finalizers") or [] if f != CLAIM_FINALIZER]
        cluster.restore_resource_claim(claim.namespace, claim.name)
        cluster.add_resource_claim(ResourceClaim.from_dict(raw))


def deallocated_claim_raw(claim: ResourceClaim) -> dict[str, Any]:
    """The claim as upstream's PostFilter writes it (``UpdateStatus``): ``status.allocation``, ``reservedFor`` and
    ``devices`` cleared; metadata (its resourceVersion, the finalizer) as it was."""
    raw = copy.deepcopy(claim.raw)
    status = raw.get("status")
    if isinstance(status, dict):
        for key in ("allocation", "reservedFor", "devices"):
            status.pop(key, None)
    return raw


def deallocate_claim(cluster: ClusterState, claim: ResourceClaim) -> None:
    """Offline: PostFilter's deallocation written at once (the claim's devices are free again)."""
    cluster.add_resource_claim(ResourceClaim.from_dict(deallocated_claim_raw(claim)))
    cluster.restore_resource_claim(claim.namespace, claim.name)
