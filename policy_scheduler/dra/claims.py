"""A pod's ResourceClaims as upstream's DynamicResources plugin finds them (``foreachPodResourceClaim`` in
``dynamicresources.go`` and ``resourceclaim.Name`` / ``IsForPod`` of ``dynamic-resource-allocation``, 1.36).

Each ``spec.resourceClaims`` entry names its claim directly (``resourceClaimName``) or through a template, in
which case the claim is the one ``status.resourceClaimStatuses`` names (the resourceclaim controller creates
it and records its name; a status entry without a name means no claim is needed, and the entry is skipped).
A claim made from a template must be controlled by the pod. The messages are upstream's, verbatim; each makes
the pod unschedulable on every node (``UnschedulableAndUnresolvable`` in PreFilter).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..cache.cluster import ClusterState
    from ..model.dra import ResourceClaim, ResourceClaimTemplate
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
    if claim.controller_uid is None or claim.controller_uid != pod.uid:  # metav1.IsControlledBy
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


def instantiate_template_claims(pod: Pod, templates: Mapping[tuple[str, str], ResourceClaimTemplate]) -> tuple[Pod, list[dict]]:
    """Offline, what the resourceclaim controller does for a pending pod before the scheduler sees it: a claim
    made from each template the pod names and has no claim for yet, controlled by the pod, named
    ``<pod>-<entry>`` (upstream adds five random characters: the name is all that differs), recorded in the pod's
    ``status.resourceClaimStatuses``. Returns the pod (updated) and the claims' objects; a missing template
    leaves its entry alone (the pod then waits: ``ResourceClaim not created yet``)."""
    made: list[dict] = []
    statuses = list((pod.raw.get("status") or {}).get("resourceClaimStatuses") or [])
    for entry in pod.resource_claims:
        if entry.resource_claim_template_name is None or entry.name in pod.resource_claim_statuses:
            continue
        template = templates.get((pod.namespace, entry.resource_claim_template_name))
        if template is None:
            continue
        name = f"{pod.name}-{entry.name}"
        spec = copy.deepcopy((template.raw.get("spec") or {}).get("spec") or {})
        meta_in = (template.raw.get("spec") or {}).get("metadata") or {}
        metadata: dict = {"name": name, "namespace": pod.namespace,
                          "uid": f"{pod.uid or pod.namespace + '/' + pod.name}/{entry.name}",
                          "annotations": {**(meta_in.get("annotations") or {}),
                                          "resource.kubernetes.io/pod-claim-name": entry.name},
                          "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": pod.name, "uid": pod.uid,
                                               "controller": True, "blockOwnerDeletion": True}]}
        if meta_in.get("labels"):
            metadata["labels"] = dict(meta_in["labels"])
        made.append({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": metadata,
                     "spec": spec})
        statuses.append({"name": entry.name, "resourceClaimName": name})
    if not made:
        return pod, made
    raw = {**pod.raw, "status": {**(pod.raw.get("status") or {}), "resourceClaimStatuses": statuses}}
    return type(pod)(raw, pod.rules), made
