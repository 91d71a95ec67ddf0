"""PodToleratesNodeTaints (upstream ``predicates.PodToleratesNodeTaints`` and
``v1helper.TolerationsTolerateTaintsWithFilter``).

Only ``NoSchedule`` and ``NoExecute`` taints matter here; ``PreferNoSchedule`` is for the priority.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from ..model.taints import NO_EXECUTE, NO_SCHEDULE, Taint, Toleration, taint_tolerated
from .metadata import PredicateMetadata
from .reasons import ERR_TAINTS_TOLERATIONS_NOT_MATCH

if TYPE_CHECKING:
    from ..cache.node_info import NodeInfo
    from ..model.pod import Pod


def tolerations_tolerate_taints(
    tolerations: Iterable[Toleration], taints: Iterable[Taint], taint_filter: Callable[[Taint], bool]
) -> bool:
    """Every taint that passes the filter is tolerated by at least one toleration."""
    tolerations = tuple(tolerations)
    return all(taint_tolerated(t, tolerations) for t in taints if taint_filter(t))


def _schedule_relevant(taint: Taint) -> bool:
    return taint.effect in (NO_SCHEDULE, NO_EXECUTE)


def pod_tolerates_node_taints(pod: Pod, meta: PredicateMetadata | None, node_info: NodeInfo | None) -> tuple[bool, list[str]]:
    """Fits iff the pod tolerates every NoSchedule and NoExecute taint of the node."""
    taints = node_info.taints if node_info is not None else ()
    if tolerations_tolerate_taints(pod.tolerations, taints, _schedule_relevant):
        return True, []
    return False, [ERR_TAINTS_TOLERATIONS_NOT_MATCH]
