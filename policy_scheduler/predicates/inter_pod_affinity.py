"""MatchInterPodAffinity (upstream ``NewPodAffinityPredicate`` / ``PodAffinityChecker``:
``InterPodAffinityMatches``, ``satisfiesExistingPodsAntiAffinity``, ``satisfiesPodsAffinityAntiAffinity``,
``anyPodMatchesPodAffinityTerm`` and the fallback ``getMatchingAntiAffinityTerms``).

Checks, in order, the first failure deciding the result (reasons are always the pair
``[MatchInterPodAffinity, <specific>]``):

(a) no existing pod's required anti-affinity term that matches the pod has the candidate node in its
    topology (from metadata, or recomputed from the cached pods when metadata is missing);
(b) a pod without pod (anti-)affinity fits;
(c) every required affinity term of the pod is satisfied by a matching pod in the candidate node's
    topology; a term that no pod anywhere matches is disregarded when the pod matches it itself (so
    the first pod of a group can schedule);
(d) no required anti-affinity term of the pod is matched by a pod in the candidate node's topology.

"Cached pods" are the assigned and assumed pods, minus pods that belong to the candidate node but are
missing from its NodeInfo (how preemption simulates removals). The pods matching the pod's own terms are
found once per pod and kept in the metadata; only topology is checked per node.

Under the cluster's rules a term's ``namespaceSelector`` counts (``model/topology.py``): the pod's own terms
(c, d) are resolved against the Namespace objects with the candidates, once per pod; the existing pods'
anti-affinity terms (a) are matched with the labels of the pod's namespace, read when the metadata is made.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..cache.cluster import ListerError
from ..errors import PredicateError
from ..model.labels import SelectorError
from ..model.topology import TermNamespaces, nodes_have_same_topology_key, pod_matches_term, term_namespaces
from .metadata import (
    MatchingAntiAffinityTerm,
    PredicateMetadata,
    matching_terms_of_existing_pod,
    require_node,
)
from .reasons import (
    ERR_EXISTING_PODS_ANTI_AFFINITY_RULES_NOT_MATCH,
    ERR_POD_AFFINITY_NOT_MATCH,
    ERR_POD_AFFINITY_RULES_NOT_MATCH,
    ERR_POD_ANTI_AFFINITY_RULES_NOT_MATCH,
)

if TYPE_CHECKING:
    from ..algorithm import FitPredicate, PluginFactoryArgs
    from ..cache.cluster import ClusterState
    from ..cache.node_info import NodeInfo
    from ..model.affinity import PodAffinityTerm
    from ..model.node import Node
    from ..model.pod import Pod

log = logging.getLogger(__name__)

EMPTY_TOPOLOGY_KEY = "empty topologyKey is not allowed except for PreferredDuringScheduling pod anti-affinity"
EMPTY_TOPOLOGY_KEY_EXISTING = "Empty topologyKey is not allowed except for PreferredDuringScheduling pod anti-affinity"

_PRECOMPUTED_KEY = "MatchInterPodAffinity"


class _TermError(Exception):
    """A term could not be evaluated (empty topology key, bad selector, node lookup failure)."""


def predicate_error(specific: str, message: str) -> PredicateError:
    """A :class:`PredicateError` that also carries upstream's reason pair as ``reasons``."""
    return PredicateError(message, [ERR_POD_AFFINITY_NOT_MATCH, specific])


# -- Go %v rendering of a v1.PodAffinityTerm (used in error texts) ----------------------------------

def _go_list(items: Iterable[Any]) -> str:
    return "[" + " ".join(str(i) for i in items) + "]"


def _go_label_selector(raw: Mapping[str, Any] | None) -> str:
    if raw is None:
        return "nil"
    match_labels = raw.get("matchLabels") or {}
    labels = "".join(f"{k}: {match_labels[k]}," for k in sorted(match_labels))
    exprs = " ".join(
        "{" + f"{e.get('key') or ''} {e.get('operator') or ''} {_go_list(e.get('values') or ())}" + "}"
        for e in raw.get("matchExpressions") or ()
    )
    return f"&LabelSelector{{MatchLabels:map[string]string{{{labels}}},MatchExpressions:[{exprs}],}}"


def format_term(term: PodAffinityTerm) -> str:
    """``fmt.Sprintf("%v", term)`` of a v1.PodAffinityTerm value, as upstream's messages print it."""
    raw = term.raw
    selector = _go_label_selector(raw.get("labelSelector"))
    return "{" + f"{selector} {_go_list(raw.get('namespaces') or ())} {raw.get('topologyKey') or ''}" + "}"


# -- per-pod candidates for the pod's own terms -------------------------------------------------------

@dataclass(frozen=True, slots=True)
class TermCandidates:
    """One required term of the incoming pod, the namespaces it applies to (its namespaceSelector resolved once)
    and the cached pods matching it (lister order)."""

    term: PodAffinityTerm
    error: str | None
    pods: tuple[Pod, ...]
    namespaces: TermNamespaces = frozenset()


@dataclass(frozen=True, slots=True)
class PodAffinityCandidates:
    affinity: tuple[TermCandidates, ...]
    anti_affinity: tuple[TermCandidates, ...]


def _term_candidates(
    pod: Pod, term: PodAffinityTerm, all_pods: Sequence[Pod], namespace_objects: Mapping[str, Mapping[str, str]]
) -> TermCandidates:
    if not term.topology_key:
        return TermCandidates(term, EMPTY_TOPOLOGY_KEY, ())
    try:
        selector = term.selector.get()
        namespaces = term_namespaces(pod, term, namespace_objects)
    except SelectorError as e:
        return TermCandidates(term, str(e), ())
    return TermCandidates(term, None, tuple(p for p in all_pods if pod_matches_term(p, namespaces, selector)), namespaces)


def compute_candidates(
    pod: Pod, all_pods: Iterable[Pod], namespace_objects: Mapping[str, Mapping[str, str]]
) -> PodAffinityCandidates:
    """For each required (anti-)affinity term of ``pod``, the cached pods that match it (a term's namespaceSelector
    resolved against ``namespace_objects``, the cluster's Namespace objects: name -> labels)."""
    affinity = pod.affinity
    pods = list(all_pods)
    aff = affinity.pod_affinity if affinity is not None else None
    anti = affinity.pod_anti_affinity if affinity is not None else None
    return PodAffinityCandidates(
        tuple(_term_candidates(pod, t, pods, namespace_objects) for t in (aff.required if aff is not None else ())),
        tuple(_term_candidates(pod, t, pods, namespace_objects) for t in (anti.required if anti is not None else ())),
    )


class PodAffinityChecker:
    """``PodAffinityChecker``: pods from the cluster cache, nodes from the node lister."""

    def __init__(self, cluster: ClusterState) -> None:
        self.cluster = cluster

    def __call__(self, pod: Pod, meta: PredicateMetadata | None, node_info: NodeInfo | None) -> tuple[bool, list[str]]:
        node = require_node(node_info)
        failed = self.satisfies_existing_pods_anti_affinity(pod, meta, node_info, node)
        if failed is not None:
            return False, [ERR_POD_AFFINITY_NOT_MATCH, failed]
        if not pod.has_pod_affinity_constraints:
            return True, []
        failed = self.satisfies_pods_affinity_anti_affinity(pod, meta, node_info, node)
        if failed is not None:
            return False, [ERR_POD_AFFINITY_NOT_MATCH, failed]
        return True, []

    # -- helpers --------------------------------------------------------------------------------
    def _visible_pods(self, node_info: NodeInfo, node: Node) -> list[Pod]:
        """Cached pods minus those on ``node`` that its NodeInfo no longer holds (``nodeInfo.Filter``)."""
        keys = {p.key for p in node_info.pods}
        return [p for p in self.cluster.list_pods() if p.node_name != node.name or p.key in keys]

    # -- (a) ------------------------------------------------------------------------------------
    def satisfies_existing_pods_anti_affinity(
        self, pod: Pod, meta: PredicateMetadata | None, node_info: NodeInfo, node: Node
    ) -> str | None:
        """``ExistingPodsAntiAffinityRulesNotMatch`` if an existing pod's anti-affinity rejects the node."""
        if meta is not None:
            terms = meta.matching_anti_affinity_term_list
        else:
            terms = self._fallback_matching_terms(pod, self._visible_pods(node_info, node))
        for entry in terms:
            key = entry.term.topology_key
            if not key:
                log.error(EMPTY_TOPOLOGY_KEY_EXISTING)
                raise predicate_error(ERR_EXISTING_PODS_ANTI_AFFINITY_RULES_NOT_MATCH, EMPTY_TOPOLOGY_KEY_EXISTING)
            if nodes_have_same_topology_key(node, entry.node, key):
                return ERR_EXISTING_PODS_ANTI_AFFINITY_RULES_NOT_MATCH
        return None

    def _fallback_matching_terms(self, pod: Pod, pods: Iterable[Pod]) -> list[MatchingAntiAffinityTerm]:
        """``PodAffinityChecker.getMatchingAntiAffinityTerms`` (used when metadata is missing)."""
        result: dict[str, list[MatchingAntiAffinityTerm]] = {}
        namespace_labels = self.cluster.namespace_labels(pod.namespace)
        for existing in pods:
            affinity = existing.affinity
            if affinity is None or affinity.pod_anti_affinity is None:
                continue
            try:
                existing_node = self.cluster.get_node(existing.node_name)
            except ListerError:
                log.error("Node not found, %s", existing.node_name)
                continue
            try:
                terms = matching_terms_of_existing_pod(pod, existing, existing_node, namespace_labels)
            except SelectorError as e:
                message = f"Failed to get all terms that pod {pod.ref} matches, err: {e}"
                log.error(message)
                raise predicate_error(ERR_EXISTING_PODS_ANTI_AFFINITY_RULES_NOT_MATCH, message) from None
            if terms:
                # Upstream assigns (not appends) per full name here.
                result[existing.full_name] = terms
        return [t for terms in result.values() for t in terms]

    # -- (c) and (d) -----------------------------------------------------------------------------
    def candidates(self, pod: Pod, meta: PredicateMetadata | None) -> PodAffinityCandidates:
        """The pod's term candidates, computed once per pod when metadata is available."""
        if meta is None:
            return compute_candidates(pod, self.cluster.list_pods(), self.cluster.namespaces)
        cached = meta.precomputed.get(_PRECOMPUTED_KEY)
        if cached is None or cached[0] is not self.cluster or cached[1] is not pod:
            cached = (self.cluster, pod, compute_candidates(pod, self.cluster.list_pods(), self.cluster.namespaces))
            meta.precomputed[_PRECOMPUTED_KEY] = cached
        return cached[2]

    def _any_pod_matches(self, cand: TermCandidates, node_info: NodeInfo, node: Node) -> tuple[bool, bool]:
        """``anyPodMatchesPodAffinityTerm``: (a matching pod shares the node's topology, one exists)."""
        if cand.error is not None:
            raise _TermError(cand.error)
        keys: set[str] | None = None
        matching_exists = False
        for existing in cand.pods:
            if existing.node_name == node.name:
                if keys is None:
                    keys = {p.key for p in node_info.pods}
                if existing.key not in keys:
                    continue
            matching_exists = True
            try:
                existing_node = self.cluster.get_node(existing.node_name)
            except ListerError as e:
                raise _TermError(str(e)) from None
            if nodes_have_same_topology_key(node, existing_node, cand.term.topology_key):
                return True, True
        return False, matching_exists

    def satisfies_pods_affinity_anti_affinity(
        self, pod: Pod, meta: PredicateMetadata | None, node_info: NodeInfo, node: Node
    ) -> str | None:
        """The specific reason if the pod's own required (anti-)affinity rejects the node."""
        cands = self.candidates(pod, meta)
        for cand in cands.affinity:
            try:
                term_matches, matching_exists = self._any_pod_matches(cand, node_info, node)
            except _TermError as e:
                message = (
                    f"Cannot schedule pod {pod.ref} onto node {node.name}, because of PodAffinityTerm "
                    f"{format_term(cand.term)}, err: {e}"
                )
                log.error(message)
                raise predicate_error(ERR_POD_AFFINITY_RULES_NOT_MATCH, message) from None
            if term_matches:
                continue
            if matching_exists or not _pod_matches_own_term(pod, cand.term, cand.namespaces):
                return ERR_POD_AFFINITY_RULES_NOT_MATCH
        for cand in cands.anti_affinity:
            try:
                term_matches, _ = self._any_pod_matches(cand, node_info, node)
            except _TermError:
                return ERR_POD_ANTI_AFFINITY_RULES_NOT_MATCH
            if term_matches:
                return ERR_POD_ANTI_AFFINITY_RULES_NOT_MATCH
        return None


def _pod_matches_own_term(pod: Pod, term: PodAffinityTerm, namespaces: TermNamespaces) -> bool:
    """Whether the incoming pod matches its own term, whose namespaces resolve to ``namespaces`` (the "first pod
    of a group" rule)."""
    return pod_matches_term(pod, namespaces, term.selector.get())


def new_pod_affinity_predicate(args: PluginFactoryArgs) -> FitPredicate:
    """MatchInterPodAffinity over the cluster's cached pods and node lister."""
    return PodAffinityChecker(args.cluster)
