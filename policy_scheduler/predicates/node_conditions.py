"""Node condition predicates (upstream ``CheckNodeMemoryPressurePredicate``,
``CheckNodeDiskPressurePredicate`` and ``CheckNodeConditionPredicate``).

Under the cluster's rules a pod that tolerates the taint a condition stands for is not refused for that
condition. Since 1.12 (TaintNodesByCondition, GA 1.17) the node lifecycle controller taints a node by its
conditions (``nodeConditionToTaintKeyStatusMap``: Ready False -> ``node.kubernetes.io/not-ready``, Ready
Unknown -> ``node.kubernetes.io/unreachable``, MemoryPressure / DiskPressure / NetworkUnavailable True ->
``node.kubernetes.io/memory-pressure`` / ``disk-pressure`` / ``network-unavailable``), ``spec.unschedulable``
is the taint ``node.kubernetes.io/unschedulable`` (upstream's NodeUnschedulable plugin), and the scheduler
reads the taints, not the conditions; the DaemonSet controller gives its pods tolerations for them. A pod
that tolerates none of them (``NoSchedule``) keeps 1.9's decision exactly: it never lands on a cordoned,
NotReady or pressured node. The OutOfDisk condition has no taint and stays 1.9's.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..features import Rules
from ..model.taints import NO_SCHEDULE, Taint, taint_tolerated
from .metadata import PredicateMetadata
from .reasons import (
    ERR_NODE_NETWORK_UNAVAILABLE,
    ERR_NODE_NOT_READY,
    ERR_NODE_OUT_OF_DISK,
    ERR_NODE_UNDER_DISK_PRESSURE,
    ERR_NODE_UNDER_MEMORY_PRESSURE,
    ERR_NODE_UNKNOWN_CONDITION,
    ERR_NODE_UNSCHEDULABLE,
)

if TYPE_CHECKING:
    from ..cache.node_info import NodeInfo
    from ..model.node import Node
    from ..model.pod import Pod

CONDITION_TRUE = "True"
CONDITION_FALSE = "False"
CONDITION_UNKNOWN = "Unknown"

TAINT_NOT_READY = "node.kubernetes.io/not-ready"
TAINT_UNREACHABLE = "node.kubernetes.io/unreachable"
TAINT_UNSCHEDULABLE = "node.kubernetes.io/unschedulable"
TAINT_MEMORY_PRESSURE = "node.kubernetes.io/memory-pressure"
TAINT_DISK_PRESSURE = "node.kubernetes.io/disk-pressure"
TAINT_NETWORK_UNAVAILABLE = "node.kubernetes.io/network-unavailable"
CONDITION_TAINTS = (TAINT_NOT_READY, TAINT_UNREACHABLE, TAINT_UNSCHEDULABLE, TAINT_MEMORY_PRESSURE,
                    TAINT_DISK_PRESSURE, TAINT_NETWORK_UNAVAILABLE)


def tolerated_condition_taints(pod: Pod | None) -> frozenset[str]:
    """The condition taints (``NoSchedule``) the pod tolerates; none under 1.9's rules."""
    if pod is None or pod.rules is not Rules.CLUSTER or not pod.tolerations:
        return frozenset()
    return frozenset(key for key in CONDITION_TAINTS if taint_tolerated(Taint(key, "", NO_SCHEDULE), pod.tolerations))


def check_node_memory_pressure(pod: Pod, meta: PredicateMetadata | None, node_info: NodeInfo | None) -> tuple[bool, list[str]]:
    """A BestEffort pod does not fit a node whose cached MemoryPressure condition is ``True``."""
    best_effort = meta.pod_best_effort if meta is not None else pod.best_effort
    if not best_effort:
        return True, []
    status = node_info.memory_pressure if node_info is not None else CONDITION_UNKNOWN
    if status == CONDITION_TRUE and TAINT_MEMORY_PRESSURE not in tolerated_condition_taints(pod):
        return False, [ERR_NODE_UNDER_MEMORY_PRESSURE]
    return True, []


def check_node_disk_pressure(pod: Pod | None, meta: PredicateMetadata | None, node_info: NodeInfo | None) -> tuple[bool, list[str]]:
    """No pod fits a node whose cached DiskPressure condition is ``True``."""
    status = node_info.disk_pressure if node_info is not None else CONDITION_UNKNOWN
    if status == CONDITION_TRUE and TAINT_DISK_PRESSURE not in tolerated_condition_taints(pod):
        return False, [ERR_NODE_UNDER_DISK_PRESSURE]
    return True, []


def check_node_condition(pod: Pod | None, meta: PredicateMetadata | None, node_info: NodeInfo | None) -> tuple[bool, list[str]]:
    """Ready must be True, OutOfDisk and NetworkUnavailable False (when present), and the node schedulable;
    under the cluster's rules each unless the pod tolerates the taint it stands for."""
    node = node_info.node if node_info is not None else None
    if node is None:
        return False, [ERR_NODE_UNKNOWN_CONDITION]
    return condition_reasons(node, tolerated_condition_taints(pod))


def condition_reasons(node: Node, tolerated: frozenset[str]) -> tuple[bool, list[str]]:
    """CheckNodeCondition on ``node`` for a pod tolerating the condition taints ``tolerated``."""
    reasons: list[str] = []
    for cond in node.conditions:
        if cond.type == "Ready" and cond.status != CONDITION_TRUE:
            taint = TAINT_NOT_READY if cond.status == CONDITION_FALSE else TAINT_UNREACHABLE
            if taint not in tolerated:
                reasons.append(ERR_NODE_NOT_READY)
        elif cond.type == "OutOfDisk" and cond.status != CONDITION_FALSE:
            reasons.append(ERR_NODE_OUT_OF_DISK)
        elif cond.type == "NetworkUnavailable" and cond.status != CONDITION_FALSE:
            if not (cond.status == CONDITION_TRUE and TAINT_NETWORK_UNAVAILABLE in tolerated):
                reasons.append(ERR_NODE_NETWORK_UNAVAILABLE)
    if node.unschedulable and TAINT_UNSCHEDULABLE not in tolerated:
        reasons.append(ERR_NODE_UNSCHEDULABLE)
    return not reasons, reasons
