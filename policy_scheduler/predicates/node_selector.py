"""PodMatchNodeSelector, registered as ``MatchNodeSelector`` (upstream ``predicates.PodMatchNodeSelector``,
``podMatchesNodeLabels`` and ``nodeMatchesNodeSelectorTerms``).

The pod must satisfy both its ``nodeSelector`` (a set selector) and its required node affinity: the
``nodeSelectorTerms`` are ORed, the expressions inside a term ANDed; an empty term list, or a term with
no expressions, matches nothing; terms are tried in order and the first one that cannot be parsed ends
the evaluation with "no match", even if a later term would match.

``matchFields`` (1.11+; every DaemonSet pod since 1.12 carries ``metadata.name In [<its node>]``) is
something 1.9 never read. Under the cluster's rules a pod whose required terms carry it gets the modern
evaluation of those terms (upstream's NodeAffinity filter, ``nodeaffinity.GetRequiredNodeAffinity(pod)
.Match``, parse errors ignored): a term is its expressions AND its fields, a term that cannot be parsed
matches nothing and the next one is tried (:mod:`..model.node_selector`). Every other pod, and every pod
under ``Rules.V1_9`` (where a term with only ``matchFields`` has no expressions and matches nothing, as
in 1.9), keeps 1.9's evaluation above.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING

from ..features import Rules
from ..model.labels import CompiledSelector, set_selector_matches
from ..model.node_selector import NodeSelectorTerm, match_node_selector_terms
from .metadata import PredicateMetadata, require_node
from .reasons import ERR_NODE_SELECTOR_NOT_MATCH

if TYPE_CHECKING:
    from ..cache.node_info import NodeInfo
    from ..model.node import Node
    from ..model.pod import Pod

log = logging.getLogger(__name__)


def node_matches_node_selector_terms(labels: Mapping[str, str], terms: tuple[CompiledSelector, ...]) -> bool:
    """ORed terms; the first term that failed to parse stops the evaluation with False."""
    for term in terms:
        if term.selector is None:
            log.debug("Failed to parse MatchExpressions (%s), regarding as not match.", term.error)
            return False
        if term.selector.matches(labels):
            return True
    return False


def cluster_required_terms(pod: Pod) -> tuple[NodeSelectorTerm, ...] | None:
    """The required terms to evaluate the modern way (the cluster's rules, some term carries
    ``matchFields``), or None for 1.9's evaluation (or no required node affinity)."""
    affinity = pod.affinity
    node_affinity = affinity.node_affinity if affinity is not None else None
    if node_affinity is None or not node_affinity.required_match_fields or pod.rules is not Rules.CLUSTER:
        return None
    return node_affinity.required_node_selector


def pod_matches_node_labels(pod: Pod, node: Node) -> bool:
    """``podMatchesNodeLabels``: nodeSelector and required node affinity must both hold."""
    if pod.node_selector and not set_selector_matches(pod.node_selector, node.labels):
        return False
    affinity = pod.affinity
    if affinity is None or affinity.node_affinity is None:
        return True
    required = affinity.node_affinity.required_terms
    if required is None:
        return True
    modern = cluster_required_terms(pod)
    if modern is not None:
        return match_node_selector_terms(modern, node.labels, node.name)
    return node_matches_node_selector_terms(node.labels, required)


def pod_match_node_selector(pod: Pod, meta: PredicateMetadata | None, node_info: NodeInfo | None) -> tuple[bool, list[str]]:
    """Fits iff the node's labels satisfy the pod's nodeSelector and required node affinity."""
    node = require_node(node_info)
    if pod_matches_node_labels(pod, node):
        return True, []
    return False, [ERR_NODE_SELECTOR_NOT_MATCH]
