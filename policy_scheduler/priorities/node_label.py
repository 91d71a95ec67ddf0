"""NodeLabel, the Policy's ``labelPreference: {label, presence}`` priority (upstream
``priorities/node_label.go``: ``NewNodeLabelPriority``, ``CalculateNodeLabelPriorityMap``).

Score 10 when the node's having the label (any value) equals ``presence``, else 0.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..algorithm import MAX_PRIORITY, PriorityMapFunction
from .metadata import node_or_error

if TYPE_CHECKING:
    from ..cache.node_info import NodeInfo
    from ..model.pod import Pod


def new_node_label_priority(label: str, presence: bool) -> PriorityMapFunction:
    """``NewNodeLabelPriority(label, presence)``: the map function (there is no reduce)."""

    def calculate_node_label_priority_map(pod: Pod | None, meta: object, node_info: NodeInfo | None) -> int:
        node = node_or_error(node_info)
        exists = label in node.labels
        return MAX_PRIORITY if exists == presence else 0

    return calculate_node_label_priority_map
