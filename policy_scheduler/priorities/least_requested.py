"""LeastRequestedPriority (upstream ``priorities/least_requested.go``: ``LeastRequestedPriorityMap``).

Favours nodes with the most unused CPU and memory, after adding the incoming pod's non-zero request to
the node's non-zero requests: ``((capacity - requested) * 10) // capacity`` per resource, averaged.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..algorithm import MAX_PRIORITY
from .metadata import resource_inputs
from .reduce import go_div

if TYPE_CHECKING:
    from ..cache.node_info import NodeInfo
    from ..model.pod import Pod


def unused_score(requested: int, capacity: int) -> int:
    """``calculateUnusedScore``: 0 when the node has no capacity or is over-committed."""
    if capacity == 0 or requested > capacity:
        return 0
    return go_div((capacity - requested) * MAX_PRIORITY, capacity)


def least_requested_priority_map(pod: Pod, meta: object, node_info: NodeInfo | None) -> int:
    """``LeastRequestedPriorityMap``."""
    r = resource_inputs(pod, meta, node_info)
    cpu = unused_score(r.requested_milli_cpu, r.allocatable_milli_cpu)
    memory = unused_score(r.requested_memory, r.allocatable_memory)
    return go_div(cpu + memory, 2)
