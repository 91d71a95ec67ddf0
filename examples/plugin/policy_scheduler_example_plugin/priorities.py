"""``PreferLabelledRack``: a map scoring each node by its rack label, a reduce normalising to 0..10."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from policy_scheduler.algorithm import MAX_PRIORITY, HostPriority
from policy_scheduler.priorities.metadata import node_or_error

from .predicates import RACK_KEY

if TYPE_CHECKING:
    from policy_scheduler.cache.node_info import NodeInfo
    from policy_scheduler.model.pod import Pod


def prefer_labelled_rack_map(pod: Pod, meta: object, node_info: NodeInfo | None) -> int:
    """Raw score: 2 in the pod's rack (its ``example.com/rack`` annotation), 1 in another labelled rack,
    0 on a node without the label. A node the cache does not know raises ``node not found``."""
    node = node_or_error(node_info)
    rack = node.labels.get(RACK_KEY)
    if rack is None:
        return 0
    return 2 if rack == pod.annotations.get(RACK_KEY) else 1


def prefer_labelled_rack_reduce(
    pod: Pod, meta: object, node_infos: Mapping[str, NodeInfo], results: list[HostPriority]
) -> None:
    """Scale the raw scores in place so the best node gets MAX_PRIORITY (10), with integer maths.

    (``policy_scheduler.priorities.normalize_reduce(MAX_PRIORITY, False)`` does the same; written out
    here to show the reduce contract.)
    """
    best = max((r.score for r in results), default=0)
    if best <= 0:
        return
    for r in results:
        r.score = MAX_PRIORITY * r.score // best
