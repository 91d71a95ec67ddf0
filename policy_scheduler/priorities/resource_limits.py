"""ResourceLimitsPriority (upstream ``priorities/resource_limits.go``: ``ResourceLimitsPriorityMap``,
``computeScore``, ``getResourceLimits``; alpha, feature gate ``ResourceLimitsPriorityFunction``).

Score 1 when the node's allocatable CPU or memory is non-zero and at least the pod's (non-zero) limit
for it, else 0: a tie-breaker for LeastRequested / MostRequested. The pod's limits (regular containers
summed, then per resource the max with each init container) are computed once when the pod is parsed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .metadata import checked_node_info

if TYPE_CHECKING:
    from ..cache.node_info import NodeInfo
    from ..model.pod import Pod


def compute_score(limit: int, allocatable: int) -> int:
    """``computeScore``: 1 when ``limit`` is set and fits a non-zero ``allocatable``."""
    if limit != 0 and allocatable != 0 and limit <= allocatable:
        return 1
    return 0


def resource_limits_priority_map(pod: Pod, meta: object, node_info: NodeInfo | None) -> int:
    """``ResourceLimitsPriorityMap``."""
    allocatable = checked_node_info(node_info).allocatable
    limits = pod.limits
    cpu_score = compute_score(limits.milli_cpu, allocatable.milli_cpu)
    memory_score = compute_score(limits.memory, allocatable.memory)
    return 1 if cpu_score == 1 or memory_score == 1 else 0
