"""EqualPriority (upstream ``core/generic_scheduler.go``: ``EqualPriorityMap``): every node scores 1."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .metadata import node_or_error

if TYPE_CHECKING:
    from ..cache.node_info import NodeInfo
    from ..model.pod import Pod


def equal_priority_map(pod: Pod | None, meta: object, node_info: NodeInfo | None) -> int:
    """``EqualPriorityMap``: 1, or ``PriorityError("node not found")`` for a missing node."""
    node_or_error(node_info)
    return 1
