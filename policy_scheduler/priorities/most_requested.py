"""MostRequestedPriority (upstream ``priorities/most_requested.go``: ``MostRequestedPriorityMap``).

Favours the nodes with the most requested CPU and memory (bin packing):
``(requested * 10) // capacity`` per resource, averaged; an over-committed resource scores 0.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..algorithm import MAX_PRIORITY
from .metadata import resource_inputs
from .reduce import go_div

if TYPE_CHECKING:
    from ..cache.node_info import NodeInfo
    from ..model.pod import Pod


def used_score(requested: int, capacity: int) -> int:
    """``calculateUsedScore``: 0 when the node has no capacity or is over-committed."""
    if capacity == 0 or requested > capacity:
        return 0
    return go_div(requested * MAX_PRIORITY, capacity)


def most_requested_priority_map(pod: Pod, meta: object, node_info: NodeInfo | None) -> int:
    """``MostRequestedPriorityMap``."""
    r = resource_inputs(pod, meta, node_info)
    cpu = used_score(r.requested_milli_cpu, r.allocatable_milli_cpu)
    memory = used_score(r.requested_memory, r.allocatable_memory)
    return go_div(cpu + memory, 2)
