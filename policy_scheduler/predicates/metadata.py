"""Predicate metadata: what the predicates need per pod, computed once per scheduling attempt.

Implements upstream ``algorithm/predicates/metadata.go`` (``PredicateMetadataFactory.GetMetadata``,
``predicateMetadata.AddPod/RemovePod/ShallowCopy``) and ``getMatchingAntiAffinityTerms`` /
``getMatchingAntiAffinityTermsOfExistingPod`` from ``predicates.go``.

Deliberate difference from 1.9: upstream records ``&term`` of a ``for _, term := range`` loop, so when an
existing pod has several matching required anti-affinity terms every recorded entry aliases the pod's
*last* term (Go loop-variable aliasing). Here each matched term keeps its own topology key, the intended
behaviour recommended by the reference (``predicates.md`` §10 (a)).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..errors import PredicateError
from ..model.affinity import PodAffinityTerm
from ..model.labels import SelectorError, selector_from_set
from ..model.node import Node
from ..model.pod import Pod
from ..model.resources import Resource
from ..model.topology import NO_LABELS, required_anti_affinity_error, term_matches_pod
from .topology_spread import SpreadFilterState, compute_filter_state

if TYPE_CHECKING:
    from ..cache.cluster import ClusterState
    from ..cache.node_info import NodeInfo
    from ..model.workloads import Service

log = logging.getLogger(__name__)

NODE_NOT_FOUND = "node not found"


class MetadataError(ValueError):
    """``AddPod`` / ``RemovePod`` could not update the metadata (upstream returns an error)."""


@dataclass(frozen=True, slots=True)
class MatchingAntiAffinityTerm:
    """A required anti-affinity term of an existing ``pod`` that matches the incoming pod.

    ``node`` is the node the existing pod runs on (``matchingPodAntiAffinityTerm`` upstream).
    """

    term: PodAffinityTerm
    node: Node
    pod: Pod


@dataclass(slots=True)
class PredicateMetadata:
    """Per-pod data shared by all predicates of one scheduling attempt (``predicateMetadata``).

    ``matching_anti_affinity_terms`` is keyed by the existing pod's full name (``name_namespace``); it is
    computed from ``node_infos`` on first use (the vectorised path never needs it), held in
    ``anti_affinity_terms`` (None until then).
    ``precomputed`` is a per-pod cache predicates may fill lazily (e.g. the pods matching the incoming
    pod's own affinity terms); it is shared, not copied, by :meth:`shallow_copy`.
    """

    pod: Pod
    pod_best_effort: bool
    pod_request: Resource
    pod_ports: frozenset[str]
    anti_affinity_terms: dict[str, list[MatchingAntiAffinityTerm]] | None = None
    service_affinity_in_use: bool = False
    service_affinity_matching_pods: list[Pod] | None = None
    service_affinity_services: list[Service] | None = None
    precomputed: dict[str, Any] = field(default_factory=dict)
    # PodTopologySpread (cluster rules only): the filter's state, computed on first use from
    # ``node_infos`` (upstream's PreFilter), kept in step by add_pod / remove_pod, cloned by shallow_copy.
    topology_spread_enabled: bool = False
    node_infos: Mapping[str, NodeInfo] | None = None
    topology_spread: SpreadFilterState | None = None
    topology_spread_computed: bool = False
    # The labels of the pod's namespace when the metadata was made (``GetNamespaceLabelsSnapshot``): what the
    # existing pods' anti-affinity namespaceSelectors are matched against.
    namespace_labels: Mapping[str, str] = field(default_factory=lambda: NO_LABELS)

    def topology_spread_state(self) -> SpreadFilterState | None:
        """The pod's PodTopologySpread filter state (None: no DoNotSchedule constraint, or the cluster
        rules are off). Raises :class:`SelectorError` for a selector that cannot be built."""
        if not self.topology_spread_enabled or not self.pod.topology_spread:
            return None
        if not self.topology_spread_computed:
            infos = self.node_infos.values() if self.node_infos is not None else ()
            self.topology_spread = compute_filter_state(self.pod, infos)
            self.topology_spread_computed = True
        return self.topology_spread

    def _spread_state_or_none(self) -> SpreadFilterState | None:
        try:
            return self.topology_spread_state()
        except SelectorError:
            return None

    @property
    def matching_anti_affinity_terms(self) -> dict[str, list[MatchingAntiAffinityTerm]]:
        """``getMatchingAntiAffinityTerms`` over ``node_infos`` (:meth:`PredicateMetadataFactory.get_metadata`
        checked first that it cannot fail)."""
        if self.anti_affinity_terms is None:
            infos = self.node_infos.values() if self.node_infos is not None else ()
            self.anti_affinity_terms = matching_anti_affinity_terms(self.pod, infos, self.namespace_labels)
        return self.anti_affinity_terms

    @property
    def matching_anti_affinity_term_list(self) -> list[MatchingAntiAffinityTerm]:
        """All recorded terms, flattened in recording order."""
        return [t for terms in self.matching_anti_affinity_terms.values() for t in terms]

    def shallow_copy(self) -> PredicateMetadata:
        """Copy maps and lists (not the pods, terms and nodes they point to)."""
        copy = PredicateMetadata(
            pod=self.pod,
            pod_best_effort=self.pod_best_effort,
            pod_request=self.pod_request,
            pod_ports=self.pod_ports,
            anti_affinity_terms={k: list(v) for k, v in self.matching_anti_affinity_terms.items()},
            service_affinity_in_use=self.service_affinity_in_use,
            service_affinity_matching_pods=_copy_list(self.service_affinity_matching_pods),
            service_affinity_services=_copy_list(self.service_affinity_services),
            precomputed=self.precomputed,
            topology_spread_enabled=self.topology_spread_enabled,
            node_infos=self.node_infos,
            namespace_labels=self.namespace_labels,
        )
        state = self._spread_state_or_none()
        copy.topology_spread = state.clone() if state is not None else None
        copy.topology_spread_computed = self.topology_spread_computed
        return copy

    def add_pod(self, added: Pod, node_info: NodeInfo) -> None:
        """Update the metadata as if ``added`` were running on ``node_info``'s node (``AddPod``)."""
        if added.full_name == self.pod.full_name:
            raise MetadataError("addedPod and meta.pod must not be the same.")
        node = node_info.node if node_info is not None else None
        if node is None:
            raise MetadataError("Invalid node in nodeInfo.")
        try:
            terms = matching_terms_of_existing_pod(self.pod, added, node, self.namespace_labels)
        except SelectorError as e:
            raise MetadataError(str(e)) from None
        if terms:
            self.matching_anti_affinity_terms.setdefault(added.full_name, []).extend(terms)
        if self.service_affinity_in_use and added.namespace == self.pod.namespace:
            if selector_from_set(self.pod.labels).matches(added.labels):
                if self.service_affinity_matching_pods is None:
                    self.service_affinity_matching_pods = []
                self.service_affinity_matching_pods.append(added)
        state = self._spread_state_or_none()
        if state is not None:
            state.update_with_pod(added, self.pod, node_info, 1)

    def remove_pod(self, deleted: Pod, node_info: NodeInfo | None = None) -> None:
        """Update the metadata as if ``deleted`` were gone from the cluster (``RemovePod``);
        ``node_info`` (the node it ran on) is needed for PodTopologySpread's counts."""
        name = deleted.full_name
        if name == self.pod.full_name:
            raise MetadataError("deletedPod and meta.pod must not be the same.")
        self.matching_anti_affinity_terms.pop(name, None)
        pods = self.service_affinity_matching_pods
        if self.service_affinity_in_use and pods and deleted.namespace == pods[0].namespace:
            for i, p in enumerate(pods):
                if p.full_name == name:
                    del pods[i]
                    break
        state = self._spread_state_or_none()
        if state is not None:
            state.update_with_pod(deleted, self.pod, node_info, -1)


def _copy_list(items: list | None) -> list | None:
    return None if items is None else list(items)


def matching_terms_of_existing_pod(
    pod: Pod, existing: Pod, node: Node, namespace_labels: Mapping[str, str]
) -> list[MatchingAntiAffinityTerm]:
    """Required anti-affinity terms of ``existing`` (on ``node``) that match ``pod``, whose namespace has the
    labels ``namespace_labels`` (what a term's namespaceSelector is matched against).

    Raises :class:`SelectorError` when a term's selector cannot be built.
    """
    affinity = existing.affinity
    if affinity is None or affinity.pod_anti_affinity is None:
        return []
    result = []
    for term in affinity.pod_anti_affinity.required:
        if term_matches_pod(existing, term, pod, namespace_labels):
            result.append(MatchingAntiAffinityTerm(term, node, existing))
    return result


def matching_anti_affinity_terms(
    pod: Pod, node_infos: Iterable[NodeInfo], namespace_labels: Mapping[str, str] = NO_LABELS
) -> dict[str, list[MatchingAntiAffinityTerm]]:
    """``getMatchingAntiAffinityTerms``: scan every NodeInfo's pods with affinity (``namespace_labels``: those of
    ``pod``'s namespace).

    Raises :class:`PredicateError` (``node not found``) for a NodeInfo without a node and
    :class:`SelectorError` for a term whose selector cannot be built.
    """
    result: dict[str, list[MatchingAntiAffinityTerm]] = {}
    for info in node_infos:
        node = info.node if info is not None else None
        if node is None:
            raise PredicateError(NODE_NOT_FOUND)
        for existing in info.pods_with_affinity:
            terms = matching_terms_of_existing_pod(pod, existing, node, namespace_labels)
            if terms:
                result.setdefault(existing.full_name, []).extend(terms)
    return result


def anti_affinity_terms_failure(node_infos: Iterable[NodeInfo]) -> str | None:
    """Why :func:`matching_anti_affinity_terms` would raise over ``node_infos``, whatever the incoming pod: a
    NodeInfo without a node, or an existing pod's required anti-affinity term whose selector cannot be built
    (None: it cannot)."""
    for info in node_infos:
        if info is None or info.node is None:
            return NODE_NOT_FOUND
        for existing in info.pods_with_affinity:
            error = required_anti_affinity_error(existing)
            if error is not None:
                return error
    return None


MetadataProducer = Callable[[PredicateMetadata], None]


class PredicateMetadataFactory:
    """Builds :class:`PredicateMetadata` (``PredicateMetadataFactory`` / ``GetMetadata``).

    ``producers`` maps a name to a precompute function (ServiceAffinity registers one per policy
    entry); every producer runs, in mapping order, on every metadata built. The mapping is read at
    each call, so producers registered later are honoured.
    """

    def __init__(
        self, cluster: ClusterState, producers: Mapping[str, MetadataProducer] | None = None,
        topology_spread: bool = False,
    ) -> None:
        self.cluster = cluster
        self.producers: Mapping[str, MetadataProducer] = producers if producers is not None else {}
        self.topology_spread = topology_spread  # the cluster rules: PodTopologySpread's state is kept

    def get_metadata(self, pod: Pod | None, node_infos: Mapping[str, NodeInfo]) -> PredicateMetadata | None:
        """The pod's metadata, or None when it cannot be computed (null pod, null node, bad selector)."""
        if pod is None:
            return None
        failure = self._terms_failure(node_infos)
        if failure is not None:
            log.debug("predicate metadata for pod %s unavailable: %s", pod.ref, failure)
            return None
        meta = PredicateMetadata(
            pod=pod,
            pod_best_effort=pod.best_effort,
            pod_request=pod.request,
            pod_ports=frozenset(pod.host_ports),
            topology_spread_enabled=self.topology_spread,
            node_infos=node_infos,
            namespace_labels=self.cluster.namespace_labels(pod.namespace),
        )
        if node_infos is self.cluster.node_infos and not self.cluster.has_required_anti_affinity:
            meta.anti_affinity_terms = {}  # no cached pod has a term to match: the walk over every node finds none
        for name, precompute in list(self.producers.items()):
            log.debug("Precompute: %s", name)
            precompute(meta)
        return meta

    __call__ = get_metadata

    def _terms_failure(self, node_infos: Mapping[str, NodeInfo]) -> str | None:
        """:func:`anti_affinity_terms_failure`; for the cluster's own NodeInfos, walked only when the cluster
        knows there is a failure to name (``ClusterState.may_fail_anti_affinity_terms``)."""
        if node_infos is self.cluster.node_infos and not self.cluster.may_fail_anti_affinity_terms:
            return None
        return anti_affinity_terms_failure(node_infos.values())


def require_node(node_info: NodeInfo | None) -> Node:
    """The NodeInfo's node, or :class:`PredicateError` ``node not found``.

    A null NodeInfo behaves like upstream's nil ``*NodeInfo``: it has no node.
    """
    node = node_info.node if node_info is not None else None
    if node is None:
        raise PredicateError(NODE_NOT_FOUND)
    return node


def require_claim_name(claim: Mapping[str, Any]) -> str:
    """A volume's ``persistentVolumeClaim.claimName``, or :class:`PredicateError` (the volume predicates'
    ``PersistentVolumeClaim had no name``)."""
    name = claim.get("claimName") or ""
    if not name:
        raise PredicateError("PersistentVolumeClaim had no name")
    return name
