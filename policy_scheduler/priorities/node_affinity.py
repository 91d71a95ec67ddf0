"""NodeAffinityPriority (upstream ``priorities/node_affinity.go``: ``CalculateNodeAffinityPriorityMap``,
``CalculateNodeAffinityPriorityReduce``).

Map: the sum of the weights of the pod's ``preferredDuringSchedulingIgnoredDuringExecution`` node
affinity terms whose ``matchExpressions`` select the node (an empty list selects nothing; weight-0 terms
are skipped before their selector is built). Reduce: ``NormalizeReduce(10, reverse=False)``.

Under the cluster's rules, a pod whose preferred terms carry ``matchFields`` (which 1.9 never read) is
scored as upstream's NodeAffinity plugin scores it (1.26 ``PreScore``/``Score``:
``nodeaffinity.NewPreferredSchedulingTerms`` and ``PreferredSchedulingTerms.Score``): weight-0 and empty
terms are skipped, any other term that cannot be parsed is an error for the whole pod, and a term counts
its weight where its expressions AND its fields (the node's ``metadata.name``) match.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..algorithm import MAX_PRIORITY
from ..errors import PriorityError
from ..features import Rules
from ..model.labels import SelectorError
from .metadata import PriorityMetadata, node_or_error
from .reduce import normalize_reduce

if TYPE_CHECKING:
    from ..cache.node_info import NodeInfo
    from ..model.affinity import Affinity, PreferredSchedulingTerm
    from ..model.pod import Pod


def cluster_preferred_terms(pod: Pod, affinity: Affinity | None) -> tuple[PreferredSchedulingTerm, ...] | None:
    """The preferred terms to score the modern way (the cluster's rules, some term carries ``matchFields``),
    or None for 1.9's scoring (or no preferred terms)."""
    node_affinity = affinity.node_affinity if affinity is not None else None
    if node_affinity is None or not node_affinity.preferred_match_fields or pod.rules is not Rules.CLUSTER:
        return None
    return node_affinity.preferred


def preferred_terms_error(terms: tuple[PreferredSchedulingTerm, ...]) -> str | None:
    """``NewPreferredSchedulingTerms``' error: the parse errors of the terms it parses (weight not 0, not
    empty), as ``utilerrors.NewAggregate(...).Error()`` prints them; None when every such term parses."""
    errors: list[str] = []
    for t in terms:
        term = t.term
        if t.weight == 0 or term is None or term.empty or term.error is None:
            continue
        if term.error not in errors:
            errors.append(term.error)
    if not errors:
        return None
    return errors[0] if len(errors) == 1 else "[" + ", ".join(errors) + "]"


def calculate_node_affinity_priority_map(pod: Pod, meta: object, node_info: NodeInfo | None) -> int:
    """``CalculateNodeAffinityPriorityMap``; a selector that cannot be built raises PriorityError."""
    node = node_or_error(node_info)
    affinity = meta.affinity if isinstance(meta, PriorityMetadata) else pod.affinity
    if affinity is None or affinity.node_affinity is None or affinity.node_affinity.preferred is None:
        return 0
    modern = cluster_preferred_terms(pod, affinity)
    if modern is not None:
        error = preferred_terms_error(modern)
        if error is not None:
            raise PriorityError(error)
        return sum(t.weight for t in modern
                   if t.weight != 0 and t.term is not None and t.term.matches(node.labels, node.name))
    count = 0
    for term in affinity.node_affinity.preferred:
        if term.weight == 0:
            continue
        try:
            selector = term.selector.get()
        except SelectorError as e:
            raise PriorityError(str(e)) from None
        if selector.matches(node.labels):
            count += term.weight
    return count


calculate_node_affinity_priority_reduce = normalize_reduce(MAX_PRIORITY, False)
