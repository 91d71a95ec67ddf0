"""NodeAffinityPriority (upstream ``priorities/node_affinity.go``: ``CalculateNodeAffinityPriorityMap``,
``CalculateNodeAffinityPriorityReduce``).

Map: the sum of the weights of the pod's ``preferredDuringSchedulingIgnoredDuringExecution`` node
affinity terms whose ``matchExpressions`` select the node (an empty list selects nothing; weight-0 terms
are skipped before their selector is built). Reduce: ``NormalizeReduce(10, reverse=False)``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..algorithm import MAX_PRIORITY
from ..errors import PriorityError
from ..model.labels import SelectorError
from .metadata import PriorityMetadata, node_or_error
from .reduce import normalize_reduce

if TYPE_CHECKING:
    from ..cache.node_info import NodeInfo
    from ..model.pod import Pod


def calculate_node_affinity_priority_map(pod: Pod, meta: object, node_info: NodeInfo | None) -> int:
    """``CalculateNodeAffinityPriorityMap``; a selector that cannot be built raises PriorityError."""
    node = node_or_error(node_info)
    affinity = meta.affinity if isinstance(meta, PriorityMetadata) else pod.affinity
    if affinity is None or affinity.node_affinity is None or affinity.node_affinity.preferred is None:
        return 0
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
