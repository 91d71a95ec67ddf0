"""Nominated pods (gate ``PodPriority``): pods a preemption made room for, and the two-pass fit check.

A preemptor is *nominated* to the node whose victims it evicted (1.9: the ``NominatedNodeName``
annotation; 1.10: ``status.nominatedNodeName``) and waits in the scheduling queue until it is tried
again. While it waits, ``podFitsOnNode`` (``generic_scheduler.md`` §3.1) evaluates every other pod
twice on that node: first with the nominated pods of equal or higher priority added to a copy of the
NodeInfo and of the predicate metadata, then, only if that pass found no failure, on the node as it
is. A pod therefore neither takes room freed for a more important pod nor depends on a nominated pod
that may never arrive.

:class:`NominatedPods` is the queue's index of nominations (upstream ``SchedulingQueue.WaitingPodsForNode``).
The engine reads it through :class:`NominatedPodLister`, so the daemon's queue can serve it directly.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from ..predicates.metadata import MetadataError

if TYPE_CHECKING:
    from ..cache.node_info import NodeInfo
    from ..model.pod import Pod

#: 1.9's annotation key (``core.NominatedNodeAnnotationKey``).
NOMINATED_NODE_ANNOTATION = "NominatedNodeName"


def nominated_node_of(pod: Pod) -> str:
    """The node a pod object says it is nominated to: 1.9's annotation, else 1.10's status field."""
    node = pod.annotations.get(NOMINATED_NODE_ANNOTATION, "")
    if node:
        return node
    status = pod.raw.get("status")
    value = status.get("nominatedNodeName") if isinstance(status, dict) else None
    return value if isinstance(value, str) else ""


class NominatedPodLister(Protocol):
    """What the engine needs from the scheduling queue."""

    def nominated_pods_for_node(self, node_name: str) -> Sequence[Pod]:
        """Pods waiting in the queue (active or unschedulable) nominated to ``node_name``."""
        ...

    def node_for(self, pod: Pod) -> str | None:
        """The node ``pod`` is nominated to, None when it has no nomination."""
        ...

    def nominated_nodes(self) -> list[str]:
        """The nodes some pod is nominated to (usually few: the vectorised path visits only these)."""
        ...


class NominatedPods:
    """An index of nominated pods: node name -> pods in nomination order, and pod key -> node."""

    def __init__(self) -> None:
        self._by_node: dict[str, dict[str, Pod]] = {}
        self._node_of: dict[str, str] = {}

    def nominate(self, pod: Pod, node_name: str) -> bool:
        """Record (or move) ``pod``'s nomination; True if it changed. An empty name removes it."""
        if not node_name:
            return self.remove(pod)
        if self._node_of.get(pod.key) == node_name:
            self._by_node[node_name][pod.key] = pod
            return False
        self.remove(pod)
        self._node_of[pod.key] = node_name
        self._by_node.setdefault(node_name, {})[pod.key] = pod
        return True

    def remove(self, pod: Pod) -> bool:
        """Forget ``pod``'s nomination (it was bound, deleted or cleared); True if it had one."""
        node = self._node_of.pop(pod.key, None)
        if node is None:
            return False
        pods = self._by_node[node]
        del pods[pod.key]
        if not pods:
            del self._by_node[node]
        return True

    def nominated_pods_for_node(self, node_name: str) -> list[Pod]:
        pods = self._by_node.get(node_name)
        return list(pods.values()) if pods else []

    def node_for(self, pod: Pod) -> str | None:
        return self._node_of.get(pod.key)

    def nominated_nodes(self) -> list[str]:
        return list(self._by_node)

    def __len__(self) -> int:
        return len(self._node_of)

    def __iter__(self) -> Iterator[tuple[Pod, str]]:
        for node, pods in self._by_node.items():
            for pod in pods.values():
                yield pod, node


def nominated_elsewhere(lister: NominatedPodLister | None, pod: Pod, node_name: str) -> list[Pod]:
    """The pods nominated to ``node_name`` other than ``pod`` (which was popped from the queue)."""
    if lister is None:
        return []
    return [p for p in lister.nominated_pods_for_node(node_name) if p.key != pod.key]


def add_nominated_pods(
    pod: Pod, meta: Any, node_info: NodeInfo | None, lister: NominatedPodLister | None
) -> tuple[Any, NodeInfo, list[Pod]] | None:
    """``addNominatedPods``: None when the node has no nominated pods (one pass suffices); else the
    metadata and NodeInfo copies with the nominated pods of priority >= ``pod``'s added, and those pods.

    Like upstream, a node with nominated pods gets the first pass even when none of them qualifies.
    """
    if lister is None or node_info is None or node_info.node is None:
        return None
    added = first_pass_pods(lister, pod, node_info.node.name)
    if added is None:
        return None
    shallow_copy = getattr(meta, "shallow_copy", None)
    meta_out = shallow_copy() if shallow_copy is not None else meta
    info_out = node_info.clone()
    for p in added:
        info_out.add_pod(p)
        if shallow_copy is not None:
            try:
                meta_out.add_pod(p, info_out)
            except MetadataError:
                pass  # upstream ignores AddPod's error here
    return meta_out, info_out, added


def first_pass_pods(lister: NominatedPodLister | None, pod: Pod, node_name: str) -> list[Pod] | None:
    """The nominated pods the first pass on ``node_name`` adds (priority >= ``pod``'s, possibly none), or None when
    no other pod is nominated there (one pass suffices)."""
    nominated = nominated_elsewhere(lister, pod, node_name)
    if not nominated:
        return None
    return [p for p in nominated if p.priority >= pod.priority]
