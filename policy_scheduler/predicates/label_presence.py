"""CheckNodeLabelPresence, a policy-defined predicate (upstream ``NewNodeLabelPredicate`` /
``NodeLabelChecker.CheckNodeLabelPresence``).

With ``presence`` every listed label key must exist on the node; without it none may (values ignored).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from .metadata import PredicateMetadata, require_node
from .reasons import ERR_NODE_LABEL_PRESENCE_VIOLATED

if TYPE_CHECKING:
    from ..algorithm import FitPredicate
    from ..cache.node_info import NodeInfo
    from ..model.pod import Pod


class NodeLabelChecker:
    def __init__(self, labels: Sequence[str], presence: bool) -> None:
        self.labels = tuple(labels)
        self.presence = presence

    def __call__(self, pod: Pod | None, meta: PredicateMetadata | None, node_info: NodeInfo | None) -> tuple[bool, list[str]]:
        node = require_node(node_info)
        for label in self.labels:
            if (label in node.labels) != self.presence:
                return False, [ERR_NODE_LABEL_PRESENCE_VIOLATED]
        return True, []


def new_node_label_predicate(labels: Sequence[str], presence: bool) -> FitPredicate:
    """A predicate requiring the ``labels`` keys to be present (``presence``) or absent on the node."""
    return NodeLabelChecker(labels, presence)
