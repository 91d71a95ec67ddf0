"""A pod's ResourceClaims as upstream's DynamicResources plugin finds them (``foreachPodResourceClaim`` in
``dynamicresources.go`` and ``resourceclaim.Name`` / ``IsForPod`` of ``dynamic-resource-allocation``, 1.36).

Each ``spec.resourceClaims`` entry names its claim directly (``resourceClaimName``) or through a template, in
which case the claim is the one ``status.resourceClaimStatuses`` names (the resourceclaim controller creates
it and records its name; a status entry without a name means no claim is needed, and the entry is skipped).
A claim made from a template must be controlled by the pod. The messages are upstream's, verbatim; each makes
the pod unschedulable on every node (``UnschedulableAndUnresolvable`` in PreFilter).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..cache.cluster import ClusterState
    from ..model.dra import ResourceClaim
    from ..model.pod import Pod, PodResourceClaim

#: ``resourceclaim.ErrClaimNotFound``.
CLAIM_NOT_CREATED = "ResourceClaim not created yet"
#: ``resourceclaim.ErrAPIUnsupported``.
API_UNSUPPORTED = "none of the supported fields are set"


class PodClaimError(Exception):
    """The pod's claims cannot be used yet: the message upstream's PreFilter reports."""

    def __init__(self, message: str) -> None:
        self.message = message
        super().__init__(message)


@dataclass(frozen=True, slots=True)
class PodClaim:
    """One of the pod's claims: the pod's entry name and the claim as the API server last reported it."""

    pod_claim_name: str
    claim: ResourceClaim


def claim_name(pod: Pod, entry: PodResourceClaim) -> tuple[str | None, bool]:
    """``resourceclaim.Name``: the claim's name (None: no claim is needed) and whether the pod must own it."""
    if entry.resource_claim_name is not None:
        return entry.resource_claim_name, False
    if entry.resource_claim_template_name is not None:
        if entry.name in pod.resource_claim_statuses:
            return pod.resource_claim_statuses[entry.name], True
        raise PodClaimError(f'pod "{pod.namespace}/{pod.name}": {CLAIM_NOT_CREATED}')
    raise PodClaimError(f'pod "{pod.namespace}/{pod.name}", spec.resourceClaim "{entry.name}": {API_UNSUPPORTED}')


def is_for_pod(pod: Pod, claim: ResourceClaim) -> str | None:
    """``resourceclaim.IsForPod`` (PodGroup claims off, as 1.36's defaults have it): None, or the error."""
    if claim.namespace != pod.namespace:
        return (f"ResourceClaim {claim.namespace}/{claim.name} is not in the same namespace as Pod "
                f"{pod.namespace}/{pod.name}")
    if not claim.controller_uid or claim.controller_uid != pod.uid:
        return (f"ResourceClaim {claim.namespace}/{claim.name} was not created for Pod {pod.namespace}/{pod.name} "
                "(Pod is not owner)")
    return None


def pod_claims(cluster: ClusterState, pod: Pod) -> list[PodClaim]:
    """``podResourceClaims``: the pod's claims in its order; raises :class:`PodClaimError` as upstream fails."""
    out = []
    for entry in pod.resource_claims:
        name, must_own = claim_name(pod, entry)
        if name is None:
            continue
        claim = cluster.api_resource_claim(pod.namespace, name)
        if claim is None:
            raise PodClaimError(f'could not find ResourceClaim "{pod.namespace}/{name}"')  # the assume cache's
        if claim.deleting:
            raise PodClaimError(f'resourceclaim "{claim.name}" is being deleted')
        if must_own:
            error = is_for_pod(pod, claim)
            if error is not None:
                raise PodClaimError(error)
        out.append(PodClaim(entry.name, claim))
    return out
