"""``PodAnnotationMatchesNodeLabel``: the pod's ``example.com/rack`` annotation names the node's rack."""

from __future__ import annotations

from typing import TYPE_CHECKING

from policy_scheduler.predicates.metadata import require_node

if TYPE_CHECKING:
    from policy_scheduler.cache.node_info import NodeInfo
    from policy_scheduler.model.pod import Pod

RACK_KEY = "example.com/rack"

#: The failure reason's text: what ``0/N nodes are available: ...`` counts and ``explain`` shows.
ERR_RACK_MISMATCH = "node(s) didn't match the pod's rack annotation"


class RackMismatch(str):
    """The failure reason: its text is :data:`ERR_RACK_MISMATCH` (reasons are compared and counted as
    text); the rack the pod asked for and the node's (``None``: unlabelled) ride along for callers."""

    wanted: str
    found: str | None

    def __new__(cls, wanted: str, found: str | None) -> RackMismatch:
        self = super().__new__(cls, ERR_RACK_MISMATCH)
        self.wanted = wanted
        self.found = found
        return self


class AnnotationMatchesLabel:
    """A pod annotated ``<key>: <value>`` fits only nodes labelled ``<key>: <value>``; a pod without the
    annotation fits every node. A node the cache does not know fails with ``node not found``."""

    def __init__(self, key: str) -> None:
        self.key = key

    def __call__(self, pod: Pod, meta: object, node_info: NodeInfo | None) -> tuple[bool, list[str]]:
        node = require_node(node_info)  # PredicateError("node not found") without a node, as built-ins do
        wanted = pod.annotations.get(self.key)
        if wanted is None:
            return True, []
        found = node.labels.get(self.key)
        if found == wanted:
            return True, []
        return False, [RackMismatch(wanted, found)]
