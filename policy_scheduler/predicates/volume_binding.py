"""CheckVolumeBinding (upstream ``NewVolumeBindingPredicate`` / ``VolumeBindingChecker.predicate`` and the
1.9 alpha volume binder's ``FindPodVolumes``: ``pkg/controller/volume/persistentvolume/
scheduler_binder.go``, ``index.go`` ``findMatchingVolume``, ``pv_controller.go`` ``shouldDelayBinding`` and
``pkg/volume/util`` ``CheckNodeAffinity``).

Without the ``VolumeScheduling`` gate the predicate always fits. With it:

* an unbound claim that does not wait for its first consumer is an error (``pod has unbound PersistentVolumeClaims``);
* a bound claim whose PV's alpha node affinity (annotation ``volume.alpha.kubernetes.io/node-affinity``,
  every node selector term must match in 1.9) rejects the node → ``VolumeNodeAffinityConflict``;
* unbound ``WaitForFirstConsumer`` claims, smallest request first, must each find a distinct available
  PV (unclaimed or pre-bound to the claim, same class, selector, access modes, enough capacity, node
  affinity matching) → otherwise ``VolumeBindingNoMatch``.

The binder's binding cache (used when a pod is assumed) is not part of the predicate.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING, Any

from ..cache.cluster import ListerError
from ..errors import PredicateError
from ..model.labels import SelectorError, label_selector, node_selector_requirements
from ..model.quantity import QuantityError, parse_quantity
from .metadata import PredicateMetadata, require_node
from .reasons import ERR_VOLUME_BIND_CONFLICT, ERR_VOLUME_NODE_CONFLICT
from .storage_class import delays_binding

if TYPE_CHECKING:
    from ..cache.cluster import ClusterState
    from ..cache.node_info import NodeInfo
    from ..model.node import Node
    from ..model.pod import Pod
    from ..model.volumes import PersistentVolume, PersistentVolumeClaim

log = logging.getLogger(__name__)

ALPHA_STORAGE_NODE_AFFINITY_ANNOTATION = "volume.alpha.kubernetes.io/node-affinity"
BETA_STORAGE_CLASS_ANNOTATION = "volume.beta.kubernetes.io/storage-class"
UNBOUND_IMMEDIATE_CLAIMS = "pod has unbound PersistentVolumeClaims"


def _meta(raw: Mapping[str, Any]) -> Mapping[str, Any]:
    return raw.get("metadata") or {}


def _spec(raw: Mapping[str, Any]) -> Mapping[str, Any]:
    return raw.get("spec") or {}


def _storage(resources: Mapping[str, Any] | None) -> Fraction:
    """The ``storage`` quantity of a resource list (0 when absent or unparsable)."""
    q = (resources or {}).get("storage")
    if q is None:
        return Fraction(0)
    try:
        return parse_quantity(q)
    except QuantityError:
        return Fraction(0)


def claim_request(pvc: PersistentVolumeClaim) -> Fraction:
    return _storage((_spec(pvc.raw).get("resources") or {}).get("requests"))


def volume_capacity(pv: PersistentVolume) -> Fraction:
    return _storage(pv.spec.get("capacity"))


def persistent_volume_class(pv: PersistentVolume) -> str:
    """``GetPersistentVolumeClass``: the beta annotation wins over ``spec.storageClassName``."""
    annotations = _meta(pv.raw).get("annotations") or {}
    if BETA_STORAGE_CLASS_ANNOTATION in annotations:
        return annotations[BETA_STORAGE_CLASS_ANNOTATION]
    return pv.spec.get("storageClassName") or ""


def check_node_affinity(pv: PersistentVolume, node_labels: Mapping[str, str]) -> bool:
    """1.9 ``CheckNodeAffinity``: no annotation fits; every term of the alpha annotation must match."""
    raw = (_meta(pv.raw).get("annotations") or {}).get(ALPHA_STORAGE_NODE_AFFINITY_ANNOTATION) or ""
    if not raw:
        return True
    try:
        affinity = json.loads(raw)
        required = affinity.get("requiredDuringSchedulingIgnoredDuringExecution")
        if required is None:
            return True
        for term in required.get("nodeSelectorTerms") or ():
            if not node_selector_requirements((term or {}).get("matchExpressions")).matches(node_labels):
                return False
    except (ValueError, AttributeError, TypeError, SelectorError) as e:
        log.debug("PersistentVolume %s node affinity unusable: %s", pv.name, e)
        return False
    return True


def is_volume_bound_to_claim(pv: PersistentVolume, pvc: PersistentVolumeClaim) -> bool:
    """``isVolumeBoundToClaim``: the PV's claimRef names this claim (and its UID, when set)."""
    ref = pv.spec.get("claimRef")
    if not ref:
        return False
    if (ref.get("name") or "") != pvc.name or (ref.get("namespace") or "") != pvc.namespace:
        return False
    uid = ref.get("uid") or ""
    return not uid or uid == (_meta(pvc.raw).get("uid") or "")


def access_modes_satisfied(pvc: PersistentVolumeClaim, pv: PersistentVolume) -> bool:
    """``checkAccessModes``: the PV offers every access mode the claim asks for."""
    offered = set(pv.spec.get("accessModes") or ())
    return all(mode in offered for mode in _spec(pvc.raw).get("accessModes") or ())


def find_matching_volume(
    pvc: PersistentVolumeClaim, volumes: Sequence[PersistentVolume], node: Node, excluded: set[str]
) -> PersistentVolume | None:
    """``findMatchingVolume`` on the scheduler path: the pre-bound PV, else the smallest fitting one."""
    requested = claim_request(pvc)
    requested_class = pvc.storage_class_name
    raw_selector = _spec(pvc.raw).get("selector")
    selector = None
    if raw_selector is not None:
        try:
            selector = label_selector(raw_selector)
        except SelectorError as e:
            raise PredicateError(
                f"error creating internal label selector for claim: {pvc.namespace}/{pvc.name}: {e}"
            ) from None
    smallest: PersistentVolume | None = None
    smallest_qty = Fraction(0)
    for pv in volumes:
        if pv.name in excluded:
            continue
        qty = volume_capacity(pv)
        affinity_ok = check_node_affinity(pv, node.labels)
        if is_volume_bound_to_claim(pv, pvc):
            if qty < requested:
                continue
            return pv if affinity_ok else None
        if pv.spec.get("claimRef"):
            continue
        if selector is not None and not selector.matches(pv.labels):
            continue
        if persistent_volume_class(pv) != requested_class or not affinity_ok:
            continue
        if not access_modes_satisfied(pvc, pv):
            continue
        if qty >= requested and (smallest is None or smallest_qty > qty):
            smallest, smallest_qty = pv, qty
    return smallest


class VolumeBinder:
    """The read-only half of 1.9's ``volumeBinder``: ``FindPodVolumes`` over the cluster listers."""

    def __init__(self, cluster: ClusterState) -> None:
        self.cluster = cluster

    def should_delay_binding(self, pvc: PersistentVolumeClaim) -> bool:
        """True for a claim of a WaitForFirstConsumer class; an unset binding mode is an error."""
        return delays_binding(self.cluster, pvc.storage_class_name)

    def pod_claims(
        self, pod: Pod
    ) -> tuple[list[PersistentVolumeClaim], list[PersistentVolumeClaim], list[PersistentVolumeClaim]]:
        """``getPodVolumes``: (bound, unbound with delayed binding, unbound with immediate binding)."""
        bound, delayed, immediate = [], [], []
        for volume in pod.volumes:
            claim = volume.get("persistentVolumeClaim")
            if not isinstance(claim, Mapping):
                continue
            claim_name = claim.get("claimName") or ""
            try:
                pvc = self.cluster.get_pvc(pod.namespace, claim_name)
            except ListerError as e:
                raise PredicateError(f'error getting PVC "{claim_name}": {e}') from None
            if pvc.volume_name:
                bound.append(pvc)
            elif self.should_delay_binding(pvc):
                delayed.append(pvc)
            else:
                immediate.append(pvc)
        return bound, delayed, immediate

    def check_bound_claims(self, claims: Sequence[PersistentVolumeClaim], node: Node) -> bool:
        for pvc in claims:
            try:
                pv = self.cluster.get_pv(pvc.volume_name)
            except ListerError:
                raise PredicateError(f'could not find v1.PersistentVolume "{pvc.volume_name}"') from None
            if not check_node_affinity(pv, node.labels):
                log.debug('PersistentVolume "%s", Node "%s" mismatch', pv.name, node.name)
                return False
        return True

    def match_unbound_claims(
        self, claims: Sequence[PersistentVolumeClaim], node: Node
    ) -> list[tuple[PersistentVolumeClaim, PersistentVolume]] | None:
        """``findMatchingVolumes``: a distinct PV per claim, smallest request first; None if one has none."""
        all_pvs = list(self.cluster.persistent_volumes.values())
        chosen: set[str] = set()
        bindings = []
        for pvc in sorted(claims, key=claim_request):
            pv = find_matching_volume(pvc, all_pvs, node, chosen)
            if pv is None:
                log.debug('No matching volumes for PVC "%s/%s" on node "%s"', pvc.namespace, pvc.name, node.name)
                return None
            chosen.add(pv.name)
            bindings.append((pvc, pv))
        return bindings

    def find_pod_volumes(self, pod: Pod, node_name: str) -> PodVolumes:
        """``FindPodVolumes``: can the node serve the pod's claims? Errors raise PredicateError."""
        try:
            node = self.cluster.get_node(node_name)
        except ListerError as e:
            raise PredicateError(f'error getting node "{node_name}": {e}') from None
        bound, delayed, immediate = self.pod_claims(pod)
        if immediate:
            raise PredicateError(UNBOUND_IMMEDIATE_CLAIMS)
        bound_ok = self.check_bound_claims(bound, node) if bound else True
        bindings = self.match_unbound_claims(delayed, node) if delayed else []
        return PodVolumes(bindings is not None, bound_ok, tuple(bindings or ()))


@dataclass(frozen=True, slots=True)
class PodVolumes:
    """What ``FindPodVolumes`` found for one node; ``bindings`` pairs each unbound claim with its PV."""

    unbound_satisfied: bool
    bound_satisfied: bool
    bindings: tuple[tuple[PersistentVolumeClaim, PersistentVolume], ...] = ()


class VolumeBindingChecker:
    def __init__(self, binder: VolumeBinder | None) -> None:
        self.binder = binder

    def __call__(self, pod: Pod, meta: PredicateMetadata | None, node_info: NodeInfo | None) -> tuple[bool, list[str]]:
        if self.binder is None:
            return True, []
        node = require_node(node_info)
        found = self.binder.find_pod_volumes(pod, node.name)
        reasons = []
        if not found.bound_satisfied:
            reasons.append(ERR_VOLUME_NODE_CONFLICT)
        if not found.unbound_satisfied:
            reasons.append(ERR_VOLUME_BIND_CONFLICT)
        return not reasons, reasons
