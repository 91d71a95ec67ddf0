"""DynamicResources: a pod with ResourceClaims lands only where every claim can be allocated (or, allocated
already, is available), as upstream's ``pkg/scheduler/framework/plugins/dynamicresources`` of 1.36 decides.

1.9 never knew ``spec.resourceClaims``, so this applies under the cluster's rules to every pod with claims,
whatever the Policy names (:func:`policy_scheduler.factory.pod_scoped_algorithms`); a Policy may name it too.
The work is in :mod:`policy_scheduler.dra`; this predicate is upstream's PreFilter (once per pod and state of
the cluster's DRA objects: the pod's claims, their classes, the allocator with the devices taken) and Filter
(per node: the allocator's solution, kept for Reserve). Upstream's reasons are ``UnschedulableAndUnresolvable``
(:class:`~.reasons.UnresolvableReason`: preemption skips such a node; it would not free devices anyway in
1.36, the plugin has no PreFilter extensions):

* PreFilter, on every node: ``pod "ns/p": ResourceClaim not created yet``, ``resourceclaim "c" is being
  deleted``, a claim the pod does not own, ``resource claim ns/c is in the process of being allocated``,
  ``request R: device class C does not exist``;
* Filter: ``cannot allocate all claims``, ``resourceclaim not available on the node`` (an allocated claim whose
  node selector does not match), ``invalid resource pools were encountered``.

PostFilter, after no node fit: the allocated claim to deallocate (:meth:`DynamicResourcesChecker.claim_to_deallocate`,
written by the caller: ``Decision.deallocate``) and the message, ``deallocation of ResourceClaim completed``.

Each node's verdict is kept across pods whose claims to allocate have the same spec while nothing it depends on
changes (:mod:`policy_scheduler.dra.verdicts`); the fast path's form asks only the nodes whose verdict may have
changed (:mod:`policy_scheduler.fastpath.dynamic_resources`).

An error of the allocator (a CEL expression that does not compile or evaluate, ...) fails the attempt with
upstream's message (:class:`~policy_scheduler.errors.PredicateError`). A pod whose allocation needs what this
engine does not implement (see :mod:`policy_scheduler.dra.allocator`; extended resources backed by a
DeviceClass) is refused with :class:`UnsupportedDRAFeatureError`, one line naming the feature.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..dra.allocator import (
    AllocationError,
    Allocator,
    Compiler,
    DeviceResult,
    InvalidPoolsError,
    UnsupportedDRAFeature,
)
from ..dra.claims import PodClaimError, pod_claims
from ..dra.reserve import ClaimReservation, PodClaims, consumer_uid
from ..dra.verdicts import allocate, claims_signature, relabel
from ..errors import PredicateError, RefusedPodError
from ..features import Rules
from ..model.dra import ResourceClaim
from .metadata import require_node
from .node_declared_features import ERR_REASON_UNSATISFIED_REQUIREMENTS
from .reasons import PreFilterReason, UnresolvableReason

if TYPE_CHECKING:
    from ..algorithm import FitPredicate, PluginFactoryArgs
    from ..cache.cluster import ClusterState
    from ..cache.node_info import NodeInfo
    from ..model.pod import Pod

NAME = "DynamicResources"
ERR_CANNOT_ALLOCATE = "cannot allocate all claims"
ERR_NOT_AVAILABLE = "resourceclaim not available on the node"
#: PostFilter's messages (``Diagnosis.PostFilterMsg``): before PreFilter got the claims, and after.
NO_CLAIMS_TO_DEALLOCATE = "no new claims to deallocate"
STILL_NOT_SCHEDULABLE = "still not schedulable"
DEALLOCATED = "deallocation of ResourceClaim completed"
#: ``extendedresourcecache``: the implicit extended resource name of a DeviceClass.
IMPLICIT_EXTENDED_RESOURCE_PREFIX = "deviceclass.resource.kubernetes.io/"

class UnsupportedDRAFeatureError(RefusedPodError):
    """The pod's devices would need a DRA feature this scheduler does not implement: refused, whatever the
    nodes (like the refused fields of ``core/modern_pods.py``)."""


@dataclass
class PodState:
    """Upstream's ``stateData`` for one pod and one state of the cluster's DRA objects."""

    reason: str | None = None  # PreFilter: unschedulable on every node
    claims: list[ResourceClaim] = field(default_factory=list)  # in the pod's order
    to_allocate: list[ResourceClaim] = field(default_factory=list)
    allocator: Allocator | None = None
    signature: Any = None  # of ``to_allocate`` (policy_scheduler.dra.verdicts): each node's verdict kept under it
    # node name -> (the Node object it was decided for, reasons, solution, the claims the solution's devices were
    # found for: ``to_allocate``, or another pod's claims of the same signature): a relabelled node is a new object
    nodes: dict[str, tuple[Any, list[str], list[list[DeviceResult]] | None, Any]] = field(default_factory=dict)

    @property
    def has_claims(self) -> bool:
        """PreFilter got as far as the claims (PostFilter then says ``still not schedulable``)."""
        return bool(self.claims)


def dra_extended_resources(cluster: ClusterState, pod: Pod) -> list[str]:
    """The extended resources the pod requests that a DeviceClass backs (``spec.extendedResourceName``, or the
    class's implicit ``deviceclass.resource.kubernetes.io/<class>``)."""
    if not cluster.device_classes:
        return []
    names = {c.extended_resource_name for c in cluster.device_classes.values() if c.extended_resource_name}
    out = []
    for container in (*pod.containers, *pod.init_containers):
        for name in container.requests:
            if name in names or (name.startswith(IMPLICIT_EXTENDED_RESOURCE_PREFIX)
                                 and name[len(IMPLICIT_EXTENDED_RESOURCE_PREFIX):] in cluster.device_classes):
                if name not in out:
                    out.append(name)
    return out


class DynamicResourcesChecker:
    """The predicate; the pod's state is made once per pod and DRA generation (the scheduler asks about one
    pod on every node in turn), each node's solution kept on it."""

    def __init__(self, cluster: ClusterState, compiler: Compiler | None = None) -> None:
        self.cluster = cluster
        self.compiler = compiler
        self._last: tuple[Any, ...] = ()
        self._state = PodState()

    def applies(self, pod: Pod) -> bool:
        """A pod with claims (or extended resources a DeviceClass backs), parsed under the cluster's rules."""
        if pod.rules is not Rules.CLUSTER:
            return False
        return bool(pod.resource_claims) or bool(dra_extended_resources(self.cluster, pod))

    # -- PreFilter ------------------------------------------------------------------------------------------
    def state(self, pod: Pod) -> PodState:
        cluster = self.cluster
        last = self._last
        namespace = cluster.namespaces.get(pod.namespace)
        if (last and last[0] is pod and last[1] is pod.raw and last[2] == cluster.dra_generation
                and last[3] is namespace):
            return self._state
        key = (pod, pod.raw, cluster.dra_generation, namespace)
        self._state = self._pre_filter(pod)
        self._last = key
        return self._state

    def _pre_filter(self, pod: Pod) -> PodState:
        cluster = self.cluster
        extended = dra_extended_resources(cluster, pod)
        if extended:
            raise UnsupportedDRAFeatureError(
                f"extended resources backed by DRA (DRAExtendedResource) are not supported by this scheduler: "
                f"the pod requests {', '.join(extended)}")
        state = PodState()
        try:
            claims = [c.claim for c in pod_claims(cluster, pod)]
        except PodClaimError as e:
            state.reason = e.message
            return state
        if not claims:
            return state
        for claim in claims:
            if claim.allocated:
                continue
            if claim.key in cluster.assumed_resource_claims:
                state.reason = f"resource claim {claim.ref} is in the process of being allocated"
                return state
            for request in claim.spec.requests:
                specs = [(request.name, request.exactly)] if request.exactly is not None else [
                    (f"{request.name}/{s.name}", s) for s in request.first_available]
                for name, spec in specs:
                    if spec.device_class_name not in cluster.device_classes:
                        state.reason = f"request {name}: device class {spec.device_class_name} does not exist"
                        return state
        state.claims = claims
        state.to_allocate = [c for c in claims if not c.allocated]
        if state.to_allocate:
            allocated = cluster.allocated_state()
            state.allocator = Allocator(cluster.device_classes, cluster.slice_list(), allocated.dedicated,
                                        self.compiler, allocated.shared, allocated.consumed,
                                        cluster.dra_slice_cache.setdefault("pools", {}),
                                        cluster.dra_slice_cache)
            state.signature = claims_signature(state.to_allocate, self.compiler)
        return state

    # -- Filter ---------------------------------------------------------------------------------------------
    def __call__(self, pod: Pod, meta: Any, node_info: NodeInfo | None) -> tuple[bool, list[str]]:
        reasons = self._decide(pod, node_info)[1]
        return not reasons, reasons

    def filter(self, pod: Pod, node_info: NodeInfo | None) -> tuple[list[str], list[list[DeviceResult]] | None]:
        """The node's reasons and, where the claims fit, the devices for each claim to allocate."""
        kept = self._decide(pod, node_info)
        _, reasons, solution, for_claims = kept
        if solution is not None and for_claims is not None:
            state = self.state(pod)
            if for_claims is not state.to_allocate:  # another pod's verdict: its devices for this pod's claims
                solution = relabel(solution, state.to_allocate)
                state.nodes[kept[0].name] = (kept[0], reasons, solution, state.to_allocate)
        return reasons, solution

    def _decide(self, pod: Pod, node_info: NodeInfo | None) -> tuple[Any, list[str], Any, Any]:
        """(the node, its reasons, the solution, the claims the solution's devices were found for)."""
        state = self.state(pod)
        if state.reason is not None:
            return None, [PreFilterReason(state.reason)], None, None
        if not state.claims:
            return None, [], None, None
        node = require_node(node_info)
        kept = state.nodes.get(node.name)
        if kept is not None and kept[0] is node:
            return kept
        unavailable = False
        for claim in state.claims:
            selector = claim.allocation_node_selector
            if selector is not None and not any(t.matches(node.labels, node.name) for t in selector):
                unavailable = True
        solution = for_claims = None
        if state.allocator is not None:
            try:
                solution, for_claims = allocate(self.cluster, state.allocator, state.signature, node.name,
                                                node.labels, state.to_allocate)
            except UnsupportedDRAFeature as e:
                raise UnsupportedDRAFeatureError(e.message) from None
            except InvalidPoolsError as e:
                result: tuple[Any, list[str], Any, Any] = (node, [UnresolvableReason(e.message)], None, None)
                state.nodes[node.name] = result
                return result
            except AllocationError as e:
                raise PredicateError(e.message) from None
            if solution is None:
                result = (node, [UnresolvableReason(ERR_CANNOT_ALLOCATE)], None, None)
                state.nodes[node.name] = result
                return result
        result = (node, [UnresolvableReason(ERR_NOT_AVAILABLE)], None, None) if unavailable else (
            node, [], solution, for_claims)
        state.nodes[node.name] = result
        return result

    # -- Reserve --------------------------------------------------------------------------------------------
    def reserve(self, pod: Pod, node_info: NodeInfo | None) -> PodClaims | None:
        """Upstream's Reserve for the chosen node: each claim's reservation (None: the pod has no claims)."""
        state = self.state(pod)
        if not state.claims:
            return None
        reasons, solution = self.filter(pod, node_info)
        if reasons:
            raise PredicateError(f"claim allocation not found for node: {reasons[0]}")
        node = require_node(node_info)
        allocations: dict[tuple[str, str], dict] = {}
        if state.allocator is not None:
            assert solution is not None
            results = state.allocator.allocation_results(node.name, node.labels, state.to_allocate, solution)
            allocations = {c.key: r for c, r in zip(state.to_allocate, results)}
        reservations = tuple(ClaimReservation(c, allocations.get(c.key)) for c in state.claims)
        return PodClaims(pod, node.name, reservations)

    # -- PostFilter -----------------------------------------------------------------------------------------
    def claim_to_deallocate(self, pod: Pod, failed_predicates: Mapping[str, Sequence[str]]) -> ResourceClaim | None:
        """Upstream's ``PostFilter`` after no node fit (``failed_predicates``: the FitError's reasons per node): the
        allocated claim to deallocate so that the next attempt may allocate it elsewhere, or None.

        A claim is *unavailable* when Filter found its allocation's node selector rejecting a node
        (``resourceclaim not available on the node``). Upstream's Filter runs on a node only once every filter
        before it passed (DynamicResources comes after all of 1.9's predicates' counterparts, only
        NodeDeclaredFeatures after it), whereas 1.9 runs every predicate on every node: a node counts only where
        no other predicate failed. Of the unavailable claims, one reserved for nobody (or for this pod alone) is
        picked: upstream takes one at random (a Go map's order), this engine the first in the pod's order
        (docs/deviations.md)."""
        try:
            state = self.state(pod)
        except RefusedPodError:
            return None
        if not state.claims or not any(c.allocation_node_selector is not None for c in state.claims):
            return None
        unavailable: set[int] = set()
        infos = self.cluster.node_infos
        for name, reasons in failed_predicates.items():
            if ERR_NOT_AVAILABLE not in reasons or any(r not in _AFTER_DYNAMIC_RESOURCES for r in reasons):
                continue
            info = infos.get(name)
            node = info.node if info is not None else None
            if node is None:
                continue
            for index, claim in enumerate(state.claims):
                selector = claim.allocation_node_selector
                if selector is not None and not any(t.matches(node.labels, node.name) for t in selector):
                    unavailable.add(index)
        uid = consumer_uid(pod)
        for index, claim in enumerate(state.claims):
            if index not in unavailable:
                continue
            reserved = claim.reserved_for
            if not reserved or (len(reserved) == 1 and reserved[0].uid == uid):
                return claim
        return None

    def post_filter_message(self, pod: Pod, failed_predicates: Mapping[str, Sequence[str]] | None = None) -> str:
        """``PostFilter``'s message: ``deallocation of ResourceClaim completed`` where it deallocates a claim
        (:meth:`claim_to_deallocate`), else ``still not schedulable`` once PreFilter got the claims, else ``no new
        claims to deallocate``."""
        try:
            state = self.state(pod)
        except RefusedPodError:
            return NO_CLAIMS_TO_DEALLOCATE
        if not state.has_claims:
            return NO_CLAIMS_TO_DEALLOCATE
        if failed_predicates is not None and self.claim_to_deallocate(pod, failed_predicates) is not None:
            return DEALLOCATED
        return STILL_NOT_SCHEDULABLE


#: The reasons a node may give besides ``resourceclaim not available on the node`` and still have had upstream's
#: DynamicResources Filter run on it: its own, and those of the plugins after it in the default profile.
_AFTER_DYNAMIC_RESOURCES = frozenset({ERR_NOT_AVAILABLE, ERR_REASON_UNSATISFIED_REQUIREMENTS})


def new_dynamic_resources_predicate(args: PluginFactoryArgs) -> FitPredicate:
    return DynamicResourcesChecker(args.cluster)


def dynamic_resources_of(predicates: dict[str, Callable[..., Any]]) -> DynamicResourcesChecker | None:
    """The DynamicResources predicate among built predicates (named by the Policy or pod-scoped), if any."""
    predicate = predicates.get(NAME)
    return predicate if isinstance(predicate, DynamicResourcesChecker) else None
