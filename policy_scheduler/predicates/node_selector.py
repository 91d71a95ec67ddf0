"""PodMatchNodeSelector, registered as ``MatchNodeSelector`` (upstream ``predicates.PodMatchNodeSelector``,
``podMatchesNodeLabels`` and ``nodeMatchesNodeSelectorTerms``).

The pod must satisfy both its ``nodeSelector`` (a set selector) and its required node affinity: the
``nodeSelectorTerms`` are ORed, the expressions inside a term ANDed; an empty term list, or a term with
no expressions, matches nothing; terms are tried in order and the first one that cannot be parsed ends
the evaluation with "no match", even if a later term would match.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING

from ..model.labels import CompiledSelector, set_selector_matches
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
    return node_matches_node_selector_terms(node.labels, required)


def pod_match_node_selector(pod: Pod, meta: PredicateMetadata | None, node_info: NodeInfo | None) -> tuple[bool, list[str]]:
    """Fits iff the node's labels satisfy the pod's nodeSelector and required node affinity."""
    node = require_node(node_info)
    if pod_matches_node_labels(pod, node):
        return True, []
    return False, [ERR_NODE_SELECTOR_NOT_MATCH]
