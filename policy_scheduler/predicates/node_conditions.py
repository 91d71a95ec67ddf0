"""Node condition predicates (upstream ``CheckNodeMemoryPressurePredicate``,
``CheckNodeDiskPressurePredicate`` and ``CheckNodeConditionPredicate``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

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
    from ..model.pod import Pod

CONDITION_TRUE = "True"
CONDITION_FALSE = "False"
CONDITION_UNKNOWN = "Unknown"


def check_node_memory_pressure(pod: Pod, meta: PredicateMetadata | None, node_info: NodeInfo | None) -> tuple[bool, list[str]]:
    """A BestEffort pod does not fit a node whose cached MemoryPressure condition is ``True``."""
    best_effort = meta.pod_best_effort if meta is not None else pod.best_effort
    if not best_effort:
        return True, []
    status = node_info.memory_pressure if node_info is not None else CONDITION_UNKNOWN
    if status == CONDITION_TRUE:
        return False, [ERR_NODE_UNDER_MEMORY_PRESSURE]
    return True, []


def check_node_disk_pressure(pod: Pod | None, meta: PredicateMetadata | None, node_info: NodeInfo | None) -> tuple[bool, list[str]]:
    """No pod fits a node whose cached DiskPressure condition is ``True``."""
    status = node_info.disk_pressure if node_info is not None else CONDITION_UNKNOWN
    if status == CONDITION_TRUE:
        return False, [ERR_NODE_UNDER_DISK_PRESSURE]
    return True, []


def check_node_condition(pod: Pod | None, meta: PredicateMetadata | None, node_info: NodeInfo | None) -> tuple[bool, list[str]]:
    """Ready must be True, OutOfDisk and NetworkUnavailable False (when present), and the node schedulable."""
    node = node_info.node if node_info is not None else None
    if node is None:
        return False, [ERR_NODE_UNKNOWN_CONDITION]
    reasons: list[str] = []
    for cond in node.conditions:
        if cond.type == "Ready" and cond.status != CONDITION_TRUE:
            reasons.append(ERR_NODE_NOT_READY)
        elif cond.type == "OutOfDisk" and cond.status != CONDITION_FALSE:
            reasons.append(ERR_NODE_OUT_OF_DISK)
        elif cond.type == "NetworkUnavailable" and cond.status != CONDITION_FALSE:
            reasons.append(ERR_NODE_NETWORK_UNAVAILABLE)
    if node.unschedulable:
        reasons.append(ERR_NODE_UNSCHEDULABLE)
    return not reasons, reasons
