"""BalancedResourceAllocation (upstream ``priorities/balanced_resource_allocation.go``:
``BalancedResourceAllocationMap``).

Favours nodes whose CPU and memory utilisation fractions (incoming pod included) are close:
``int((1 - |cpuFraction - memFraction|) * 10)``, 0 when either fraction reaches 1.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..algorithm import MAX_PRIORITY
from .metadata import resource_inputs

if TYPE_CHECKING:
    from ..cache.node_info import NodeInfo
    from ..model.pod import Pod


def fraction_of_capacity(requested: int, capacity: int) -> float:
    """``fractionOfCapacity``: 1.0 for a zero capacity."""
    if capacity == 0:
        return 1.0
    return float(requested) / float(capacity)


def balanced_resource_allocation_map(pod: Pod, meta: object, node_info: NodeInfo | None) -> int:
    """``BalancedResourceAllocationMap``."""
    r = resource_inputs(pod, meta, node_info)
    cpu_fraction = fraction_of_capacity(r.requested_milli_cpu, r.allocatable_milli_cpu)
    memory_fraction = fraction_of_capacity(r.requested_memory, r.allocatable_memory)
    if cpu_fraction >= 1 or memory_fraction >= 1:
        return 0
    diff = abs(cpu_fraction - memory_fraction)
    return int((1 - diff) * float(MAX_PRIORITY))
