"""CheckVolumeBinding under the cluster's rules: the modern volume binder (upstream 1.26
``pkg/scheduler/framework/plugins/volumebinding``: ``binder.go`` ``GetPodVolumes``, ``FindPodVolumes``,
``checkBoundClaims``, ``findMatchingVolumes``, ``checkVolumeProvisions``, ``AssumePodVolumes``,
``RevertAssumedPodVolumes``, ``checkBindings``; ``component-helpers/storage/volume`` ``FindMatchingVolume``,
``CheckNodeAffinity``, ``IsDelayBindingMode``, ``GetBindVolumeToClaim``).

Which pods it decides for: every pod with an unbound claim of a ``WaitForFirstConsumer`` class, a
claim bound to a PV with the GA ``spec.nodeAffinity``, or a generic ephemeral volume (its claim
``<pod>-<volume>`` must exist and be owned by the pod; all things 1.9 never knew); with the
``VolumeScheduling`` gate on, every pod with claims (the alpha gate became this). Other pods keep 1.9's
decisions (:func:`applies`). For a pod it decides for, on each node:

* a claim that cannot be found, that is being deleted or whose claim is ``Lost``, or an unbound
  claim that binds immediately: the attempt fails with upstream's error (its PreFilter);
* a bound claim: its PV must exist (else ``ERR_REASON_PV_NOT_EXIST``) and its node affinity (GA field,
  and 1.9's alpha annotation) must admit the node (else ``VolumeNodeAffinityConflict``);
* an unbound ``WaitForFirstConsumer`` claim: already annotated with a selected node, only that node;
  else an available static PV (``FindMatchingVolume``: smallest fitting, distinct per claim, pre-bound
  first, of the claim's ``volumeAttributesClassName``) whose node affinity admits the node, else dynamic provisioning if the class has a provisioner
  and its ``allowedTopologies`` admit the node's labels; otherwise ``VolumeBindingNoMatch``.

Storage capacity (``CSIStorageCapacity``, ``node(s) did not have enough free storage``) is not
checked: CSIDriver and CSIStorageCapacity objects are not read.

Everything here is pure: the decision reads the cluster cache, the assumption writes it.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import TYPE_CHECKING

from ..cache.cluster import ListerError
from ..errors import PredicateError
from ..model.labels import SelectorError, label_selector
from ..model.pod import pod_claim_names
from ..model.volumes import match_topology_selector_terms
from .metadata import PredicateMetadata, require_node
from .reasons import ERR_VOLUME_BIND_CONFLICT, ERR_VOLUME_NODE_CONFLICT
from .storage_class import VOLUME_BINDING_WAIT
from .volume_binding import (
    VolumeBinder,
    VolumeBindingChecker,
    access_modes_satisfied,
    check_node_affinity,
    claim_request,
    is_volume_bound_to_claim,
    persistent_volume_class,
    volume_capacity,
)

if TYPE_CHECKING:
    from ..algorithm import FitPredicate, PluginFactoryArgs
    from ..cache.cluster import ClusterState
    from ..cache.node_info import NodeInfo
    from ..model.node import Node
    from ..model.pod import Pod
    from ..model.volumes import PersistentVolume, PersistentVolumeClaim

log = logging.getLogger(__name__)

ERR_REASON_PV_NOT_EXIST = "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)"
UNBOUND_IMMEDIATE_CLAIMS = "pod has unbound immediate PersistentVolumeClaims"
EPHEMERAL_CLAIM_MISSING = 'waiting for ephemeral volume controller to create the persistentvolumeclaim "{name}"'
NOT_SUPPORTED_PROVISIONER = "kubernetes.io/no-provisioner"
DEFAULT_BIND_TIMEOUT = 600.0  # VolumeBindingArgs.bindTimeoutSeconds


class VolumeBindingError(Exception):
    """The volumes of an assumed pod cannot be (or were not) bound; the pod goes back to the queue."""


def ephemeral_not_owned(pod: Pod, pvc: PersistentVolumeClaim) -> str:
    """``ephemeral.VolumeIsForPod``'s error: a claim of the ephemeral volume's name the pod does not own."""
    return f"PVC {pvc.namespace}/{pvc.name} was not created for pod {pod.namespace}/{pod.name} (pod is not owner)"


def delay_binding_mode(cluster: ClusterState, pvc: PersistentVolumeClaim) -> bool:
    """``IsDelayBindingMode``: the claim's class exists and is ``WaitForFirstConsumer``. A class without
    a binding mode is ``Immediate``: the API server defaults it (only a manifest can lack it)."""
    if not pvc.storage_class_name:
        return False
    try:
        storage_class = cluster.get_storage_class(pvc.storage_class_name)
    except ListerError:
        return False
    return storage_class.volume_binding_mode == VOLUME_BINDING_WAIT


def volume_node_affinity_matches(pv: PersistentVolume, node: Node) -> bool:
    """The GA ``spec.nodeAffinity`` (as 1.26 checks it: the node's labels) and 1.9's alpha annotation."""
    if pv.node_affinity is not None and not pv.node_affinity.matches(node.labels):
        return False
    return check_node_affinity(pv, node.labels)


def applies(cluster: ClusterState, pod: Pod, all_claims: bool = False) -> bool:
    """Whether the modern binder decides for ``pod``: it has an unbound ``WaitForFirstConsumer`` claim or
    a claim bound to a PV with the GA node affinity (``all_claims``: any claim at all)."""
    names = pod_claim_names(pod)
    if not names:
        return False
    if all_claims or pod.ephemeral_claims:
        return True
    for name in names:
        try:
            pvc = cluster.get_pvc(pod.namespace, name)
        except ListerError:
            continue
        if pvc.volume_name:
            try:
                if cluster.get_pv(pvc.volume_name).node_affinity is not None:
                    return True
            except ListerError:
                continue
        elif delay_binding_mode(cluster, pvc):
            return True
    return False


@dataclass(frozen=True, slots=True)
class PodVolumeClaims:
    """``GetPodVolumeClaims``: bound claims and unbound ``WaitForFirstConsumer`` claims."""

    bound: tuple[PersistentVolumeClaim, ...]
    delayed: tuple[PersistentVolumeClaim, ...]


@dataclass(slots=True)
class PodVolumes:
    """What binding the pod's claims on one node takes: PVs to pre-bind and claims to provision."""

    node: str
    static_bindings: list[tuple[PersistentVolumeClaim, PersistentVolume]] = field(default_factory=list)
    dynamic_provisions: list[PersistentVolumeClaim] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not self.static_bindings and not self.dynamic_provisions

    def actions(self) -> list[VolumeAction]:
        """One line per claim: which PV it binds, or that it is provisioned on the node."""
        out = [VolumeAction(f"{pvc.namespace}/{pvc.name}", "bind", pv.name, self.node) for pvc, pv in self.static_bindings]
        out += [VolumeAction(f"{pvc.namespace}/{pvc.name}", "provision", None, self.node) for pvc in self.dynamic_provisions]
        return sorted(out, key=lambda a: a.claim)


@dataclass(frozen=True, slots=True)
class VolumeAction:
    claim: str  # namespace/name
    action: str  # "bind" (a static PV) or "provision" (dynamically, on the node)
    volume: str | None
    node: str

    def to_dict(self) -> dict[str, str | None]:
        return {"claim": self.claim, "action": self.action, "volume": self.volume, "node": self.node}

    def __str__(self) -> str:
        if self.action == "bind":
            return f"{self.claim} -> PV {self.volume}"
        return f"{self.claim} -> provisioned on {self.node}"


class ClusterVolumeBinder:
    """The decision half of 1.26's ``volumeBinder`` over the cluster cache (assumed objects included)."""

    def __init__(self, cluster: ClusterState, all_claims: bool = False) -> None:
        self.cluster = cluster
        self.all_claims = all_claims

    def applies(self, pod: Pod) -> bool:
        return applies(self.cluster, pod, self.all_claims)

    # -- PreFilter ---------------------------------------------------------------------------------
    def pod_volume_claims(self, pod: Pod) -> PodVolumeClaims:
        """The claims, classified; upstream's PreFilter errors raise PredicateError."""
        bound: list[PersistentVolumeClaim] = []
        delayed: list[PersistentVolumeClaim] = []
        immediate = False
        for name in pod_claim_names(pod):
            ephemeral = name in pod.ephemeral_claims
            try:
                pvc = self.cluster.get_pvc(pod.namespace, name)
            except ListerError as e:
                if ephemeral:  # normal right after the pod is created
                    raise PredicateError(EPHEMERAL_CLAIM_MISSING.format(name=name)) from None
                raise PredicateError(str(e)) from None
            if ephemeral and not pvc.controlled_by(pod.uid):
                raise PredicateError(ephemeral_not_owned(pod, pvc))
            if pvc.phase == "Lost":
                raise PredicateError(f'persistentvolumeclaim "{pvc.name}" bound to non-existent persistentvolume "{pvc.volume_name}"')
            if pvc.deleting:
                raise PredicateError(f'persistentvolumeclaim "{pvc.name}" is being deleted')
            if pvc.fully_bound:
                bound.append(pvc)
            elif not pvc.volume_name and delay_binding_mode(self.cluster, pvc):
                delayed.append(pvc)
            else:  # unbound and not late-bound, or pre-bound and not yet completed by the PV controller
                immediate = True
        if immediate:
            raise PredicateError(UNBOUND_IMMEDIATE_CLAIMS)
        return PodVolumeClaims(tuple(bound), tuple(delayed))

    # -- Filter ------------------------------------------------------------------------------------
    def find_pod_volumes(self, pod: Pod, claims: PodVolumeClaims, node: Node) -> tuple[PodVolumes, list[str]]:
        """``FindPodVolumes``: the bindings for ``node`` and the reasons it cannot serve the pod."""
        volumes = PodVolumes(node.name)
        bound_ok, pv_found = self._check_bound_claims(claims.bound, node) if claims.bound else (True, True)
        unbound_ok = True
        if claims.delayed:
            unbound_ok = self._find_unbound(pod, claims.delayed, node, volumes)
        reasons = []
        if not bound_ok:
            reasons.append(ERR_VOLUME_NODE_CONFLICT)
        if not unbound_ok:
            reasons.append(ERR_VOLUME_BIND_CONFLICT)
        if not pv_found:
            reasons.append(ERR_REASON_PV_NOT_EXIST)
        return volumes, reasons

    def _check_bound_claims(self, claims: Sequence[PersistentVolumeClaim], node: Node) -> tuple[bool, bool]:
        for pvc in claims:
            try:
                pv = self.cluster.get_pv(pvc.volume_name)
            except ListerError:
                return True, False
            if not volume_node_affinity_matches(pv, node):
                log.debug('PersistentVolume "%s" and node "%s" mismatch for pod', pv.name, node.name)
                return False, True
        return True, True

    def _find_unbound(self, pod: Pod, claims: Sequence[PersistentVolumeClaim], node: Node, volumes: PodVolumes) -> bool:
        to_match, to_provision = [], []
        for pvc in claims:
            if pvc.selected_node is not None:
                if pvc.selected_node != node.name:
                    return False  # upstream's fast path: provisioning was started for another node
                to_provision.append(pvc)
            else:
                to_match.append(pvc)
        if to_match:
            found, unmatched = self._find_matching_volumes(to_match, node, volumes)
            to_provision += unmatched
            if found and not to_provision:
                return True
        if to_provision:
            return self._check_volume_provisions(to_provision, node, volumes)
        return True

    def _find_matching_volumes(
        self, claims: Sequence[PersistentVolumeClaim], node: Node, volumes: PodVolumes
    ) -> tuple[bool, list[PersistentVolumeClaim]]:
        """``findMatchingVolumes``: smallest request first, each claim its own PV; the unmatched claims."""
        all_pvs = self.cluster.list_persistent_volumes()
        chosen: set[str] = set()
        unmatched = []
        for pvc in sorted(claims, key=claim_request):
            pv = find_matching_volume(pvc, all_pvs, node, chosen)
            if pv is None:
                unmatched.append(pvc)
                continue
            chosen.add(pv.name)
            volumes.static_bindings.append((pvc, pv))
        return not unmatched, unmatched

    def _check_volume_provisions(self, claims: Sequence[PersistentVolumeClaim], node: Node, volumes: PodVolumes) -> bool:
        """``checkVolumeProvisions``: the class can provision, and on this node (``allowedTopologies``)."""
        for pvc in claims:
            class_name = pvc.storage_class_name
            if not class_name:
                raise PredicateError(f'no class for claim "{pvc.namespace}/{pvc.name}"')
            try:
                storage_class = self.cluster.get_storage_class(class_name)
            except ListerError:
                raise PredicateError(f'failed to find storage class "{class_name}"') from None
            if storage_class.provisioner in ("", NOT_SUPPORTED_PROVISIONER):
                log.debug('Storage class "%s" of claim "%s/%s" does not support dynamic provisioning',
                          class_name, pvc.namespace, pvc.name)
                volumes.dynamic_provisions.clear()
                return False
            if not match_topology_selector_terms(storage_class.allowed_topologies, node.labels):
                log.debug('Node "%s" cannot satisfy provisioning topology requirements of claim "%s/%s"',
                          node.name, pvc.namespace, pvc.name)
                volumes.dynamic_provisions.clear()
                return False
            volumes.dynamic_provisions.append(pvc)
        return True


def find_matching_volume(
    pvc: PersistentVolumeClaim, volumes: Sequence[PersistentVolume], node: Node, excluded: set[str]
) -> PersistentVolume | None:
    """``FindMatchingVolume`` on the scheduler path (a node given), with the ``VolumeAttributesClass`` gate
    on, as 1.34+ always have it (``vacEnabled``): a PV whose ``spec.volumeAttributesClassName`` differs from
    the claim's is skipped, a pre-bound one too, and a claim without a class matches only PVs without one.
    On 1.26 neither object can carry the field, and on 1.32 (beta, off) the API server drops it, so this is
    every line's decision on the objects its server keeps."""
    requested = claim_request(pvc)
    spec = pvc.raw.get("spec") or {}
    selector = None
    if spec.get("selector") is not None:
        try:
            selector = label_selector(spec["selector"])
        except SelectorError as e:
            raise PredicateError(f"error creating internal label selector for claim: {pvc.namespace}/{pvc.name}: {e}") from None
    claim_mode = spec.get("volumeMode") or "Filesystem"
    smallest: PersistentVolume | None = None
    smallest_qty = Fraction(0)
    for pv in volumes:
        if pv.name in excluded:
            continue
        bound_to_claim = is_volume_bound_to_claim(pv, pvc)
        if pv.spec.get("claimRef") and not bound_to_claim:
            continue
        qty = volume_capacity(pv)
        if qty < requested:
            continue
        if (pv.spec.get("volumeMode") or "Filesystem") != claim_mode:
            continue
        if pv.volume_attributes_class != pvc.volume_attributes_class:
            continue  # VolumeAttributesClass (GA 1.34, locked on in 1.36): the same class, or neither has one
        if (pv.raw.get("metadata") or {}).get("deletionTimestamp"):
            continue
        affinity_ok = volume_node_affinity_matches(pv, node)
        if bound_to_claim:
            return pv if affinity_ok else None
        if pv.phase != "Available":
            continue
        if selector is not None and not selector.matches(pv.labels):
            continue
        if persistent_volume_class(pv) != pvc.storage_class_name or not affinity_ok:
            continue
        if not access_modes_satisfied(pvc, pv):
            continue
        if smallest is None or smallest_qty > qty:
            smallest, smallest_qty = pv, qty
    return smallest


class ClusterVolumeBindingChecker:
    """CheckVolumeBinding under the cluster's rules (a fit predicate); no-op for pods it does not decide for."""

    def __init__(self, binder: ClusterVolumeBinder) -> None:
        self.binder = binder

    def __call__(self, pod: Pod, meta: PredicateMetadata | None, node_info: NodeInfo | None) -> tuple[bool, list[str]]:
        if not self.binder.applies(pod):
            return True, []
        node = require_node(node_info)
        claims = self.binder.pod_volume_claims(pod)
        _, reasons = self.binder.find_pod_volumes(pod, claims, node)
        return not reasons, reasons


# -- after the node is chosen (the daemon's Reserve / the simulation's assume) ----------------------
def volume_binder_of(predicates: Mapping[str, object]) -> ClusterVolumeBinder | None:
    """The modern binder of a built scheduler's predicates (None under 1.9's rules)."""
    checker = predicates.get("CheckVolumeBinding")
    return checker.binder if isinstance(checker, ClusterVolumeBindingChecker) else None


def decide_pod_volumes(binder: ClusterVolumeBinder, pod: Pod, node_name: str) -> PodVolumes | None:
    """The bindings for the chosen node (recomputed from the same cache the decision read), or None
    when the binder does not decide for the pod. Raises PredicateError / VolumeBindingError."""
    if not binder.applies(pod):
        return None
    try:
        node = binder.cluster.get_node(node_name)
    except ListerError as e:
        raise VolumeBindingError(str(e)) from None
    claims = binder.pod_volume_claims(pod)
    volumes, reasons = binder.find_pod_volumes(pod, claims, node)
    if reasons:
        raise VolumeBindingError(f"node {node_name!r} can no longer serve the pod's volumes: {', '.join(reasons)}")
    return volumes


def assume_pod_volumes(cluster: ClusterState, volumes: PodVolumes) -> PodVolumes:
    """``AssumePodVolumes``: pre-bind the chosen PVs and annotate the claims to provision, in the cache
    only. Returns the objects to write (the same shape, with the updated copies); on error everything
    assumed so far is restored and VolumeBindingError raised."""
    assumed = PodVolumes(volumes.node)
    try:
        for pvc, pv in volumes.static_bindings:
            new_pv = pv.bound_to(pvc)
            cluster.assume_persistent_volume(new_pv)
            assumed.static_bindings.append((pvc, new_pv))
        for pvc in volumes.dynamic_provisions:
            new_pvc = pvc.with_selected_node(volumes.node)
            cluster.assume_persistent_volume_claim(new_pvc)
            assumed.dynamic_provisions.append(new_pvc)
    except ListerError as e:
        revert_assumed_pod_volumes(cluster, assumed)
        raise VolumeBindingError(str(e)) from None
    return assumed


def revert_assumed_pod_volumes(cluster: ClusterState, volumes: PodVolumes) -> None:
    """``RevertAssumedPodVolumes``: decisions see the API objects again (nothing is written back)."""
    for _, pv in volumes.static_bindings:
        cluster.restore_persistent_volume(pv.name)
    for pvc in volumes.dynamic_provisions:
        cluster.restore_persistent_volume_claim(pvc.namespace, pvc.name)


def check_bindings(cluster: ClusterState, node_name: str, volumes: PodVolumes) -> bool:
    """``checkBindings`` on the API objects (never the assumed copies): True when every claim the pod
    waits for is fully bound, False while it is not yet; VolumeBindingError when binding failed and the
    pod must be scheduled again. ``volumes`` holds the objects as written (their resourceVersions)."""
    try:
        node = cluster.get_node(node_name)
    except ListerError as e:
        raise VolumeBindingError(f'failed to get node "{node_name}": {e}') from None
    for pvc, written_pv in volumes.static_bindings:
        pv = cluster.api_pv(written_pv.name)
        if pv is None:
            raise VolumeBindingError(f'failed to check binding: persistentvolume "{written_pv.name}" not found')
        api_pvc = cluster.api_pvc(pvc.namespace, pvc.name)
        if api_pvc is None:
            raise VolumeBindingError(f'failed to check binding: persistentvolumeclaim "{pvc.namespace}/{pvc.name}" not found')
        if written_pv.resource_version > pv.resource_version:
            return False  # our write has not come back through the watch yet
        if not volume_node_affinity_matches(pv, node):
            raise VolumeBindingError(f'pv "{pv.name}" node affinity doesn\'t match node "{node.name}": no matching NodeSelectorTerms')
        ref = pv.spec.get("claimRef") or {}
        if not ref or not ref.get("uid"):
            raise VolumeBindingError(f'ClaimRef got reset for pv "{pv.name}"')
        if not api_pvc.fully_bound:
            return False
    for written in volumes.dynamic_provisions:
        pvc = cluster.api_pvc(written.namespace, written.name)
        if pvc is None:
            raise VolumeBindingError(f'failed to check provisioning pvc: persistentvolumeclaim "{written.namespace}/{written.name}" not found')
        if written.resource_version > pvc.resource_version:
            return False
        if pvc.selected_node != node_name:
            # The provisioner removes the annotation when provisioning failed: schedule again.
            raise VolumeBindingError(f'provisioning failed for PVC "{pvc.name}"')
        if pvc.volume_name:
            pv = cluster.api_pv(pvc.volume_name)
            if pv is None:
                return False  # possibly not seen yet
            if not volume_node_affinity_matches(pv, node):
                raise VolumeBindingError(f'pv "{pv.name}" node affinity doesn\'t match node "{node.name}": no matching NodeSelectorTerms')
        if not pvc.fully_bound:
            return False
    return True


def new_volume_binding_predicate(args: PluginFactoryArgs) -> FitPredicate:
    """CheckVolumeBinding. Under 1.9's rules: a no-op unless the ``VolumeScheduling`` feature gate is on.
    Under the cluster's rules: the modern binder (this module), for pods with late-bound claims
    or PVs with the GA node affinity (with the gate on, for every pod with claims)."""
    enabled = args.feature_gates.enabled("VolumeScheduling")
    if args.feature_gates.cluster_rules:
        return ClusterVolumeBindingChecker(ClusterVolumeBinder(args.cluster, all_claims=enabled))
    return VolumeBindingChecker(VolumeBinder(args.cluster) if enabled else None)
