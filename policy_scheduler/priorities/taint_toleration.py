"""TaintTolerationPriority (upstream ``priorities/taint_toleration.go``:
``ComputeTaintTolerationPriorityMap``, ``ComputeTaintTolerationPriorityReduce``).

Map: the number of the node's ``PreferNoSchedule`` taints that none of the pod's tolerations with an
empty or ``PreferNoSchedule`` effect tolerates. Reduce: ``NormalizeReduce(10, reverse=True)``, so nodes
with fewer intolerable taints score higher.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from ..algorithm import MAX_PRIORITY
from ..model.taints import PREFER_NO_SCHEDULE, Taint, Toleration, taint_tolerated
from .metadata import PriorityMetadata, node_or_error, prefer_no_schedule_tolerations
from .reduce import normalize_reduce

if TYPE_CHECKING:
    from ..cache.node_info import NodeInfo
    from ..model.pod import Pod


def count_intolerable_taints_prefer_no_schedule(taints: Iterable[Taint], tolerations: Iterable[Toleration]) -> int:
    """``countIntolerableTaintsPreferNoSchedule``."""
    tolerations = tuple(tolerations)
    return sum(1 for t in taints if t.effect == PREFER_NO_SCHEDULE and not taint_tolerated(t, tolerations))


def compute_taint_toleration_priority_map(pod: Pod, meta: object, node_info: NodeInfo | None) -> int:
    """``ComputeTaintTolerationPriorityMap``."""
    node = node_or_error(node_info)
    if isinstance(meta, PriorityMetadata):
        tolerations = meta.pod_tolerations
    else:
        tolerations = prefer_no_schedule_tolerations(pod)
    return count_intolerable_taints_prefer_no_schedule(node.taints, tolerations)


compute_taint_toleration_priority_reduce = normalize_reduce(MAX_PRIORITY, True)
