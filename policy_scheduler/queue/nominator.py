"""The nominations index both priority queues keep (gate ``PodPriority``), and the queue base that serves it.

A priority queue is the engine's ``NominatedPodLister`` (:mod:`policy_scheduler.core.nominated`). It indexes,
node by node in nomination order, the pending pods nominated to each node: from the pod objects it is given
(1.9's ``NominatedNodeName`` annotation, else 1.10's ``status.nominatedNodeName``), as v1.9.4's index does,
and from :meth:`NominatingQueue.nominate`, which the scheduler calls the moment a preemption chooses a node,
before the API server has the annotation (as 1.11's ``UpdateNominatedPodForNode``). A nomination lasts while
the pod is pending in this scheduler: queued, being scheduled, or waiting to be re-queued; it ends when the pod
is assumed, bound, deleted, or its nomination is cleared (:meth:`NominatingQueue.clear_nomination`, or an
object whose nomination was removed). A pod object without any nomination does not undo one made by
:meth:`~NominatingQueue.nominate` unless the previous object had one (the informer may deliver a copy older
than the nomination; 1.17's fix to ``nominatedPodMap``).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..core.nominated import nominated_node_of
from ..model.pod import Pod
from .base import BlockingQueue, pod_key


@dataclass(slots=True)
class _Nomination:
    node: str
    reserved: bool  # made by nominate() and not yet seen on a pod object


class Nominator:
    """Pod key -> nominated node, and node -> the pods nominated there in nomination order. Not locked:
    its queue calls it under the queue's lock."""

    def __init__(self) -> None:
        self._nominations: dict[str, _Nomination] = {}  # key -> nomination
        self._by_node: dict[str, dict[str, Pod]] = {}  # node -> key -> pod, in nomination order

    def observe(self, pod: Pod) -> None:
        """Index ``pod``'s nomination as its object states it (a reservation by :meth:`reserve` is kept until an
        object confirms it; only :meth:`forget` undoes it)."""
        key = pod_key(pod)
        entry = self._nominations.get(key)
        node = nominated_node_of(pod)
        if entry is not None and entry.reserved:
            self._set(key, pod, entry.node)
            self._nominations[key].reserved = node != entry.node
            return
        self._set(key, pod, node)

    def reserve(self, pod: Pod, node_name: str) -> None:
        """Nominate ``pod`` to ``node_name`` ahead of any object saying so."""
        key = pod_key(pod)
        self._set(key, pod, node_name)
        self._nominations[key].reserved = True

    def forget(self, pod: Pod) -> bool:
        """Drop ``pod``'s nomination; True if it had one."""
        entry = self._nominations.pop(pod_key(pod), None)
        if entry is None:
            return False
        pods = self._by_node[entry.node]
        del pods[pod_key(pod)]
        if not pods:
            del self._by_node[entry.node]
        return True

    def pods_for_node(self, node_name: str) -> list[Pod]:
        pods = self._by_node.get(node_name)
        return list(pods.values()) if pods else []

    def node_for(self, pod: Pod) -> str | None:
        entry = self._nominations.get(pod_key(pod))
        return entry.node if entry is not None else None

    def nodes(self) -> list[str]:
        return list(self._by_node)

    def by_node(self) -> dict[str, list[str]]:
        return {node: list(pods) for node, pods in self._by_node.items()}

    def _set(self, key: str, pod: Pod, node: str) -> None:
        entry = self._nominations.get(key)
        if entry is not None and entry.node == node:
            self._by_node[node][key] = pod  # same place in the node's list, the latest object
            return
        self.forget(pod)
        if node:
            self._nominations[key] = _Nomination(node, False)
            self._by_node.setdefault(node, {})[key] = pod


class NominatingQueue(BlockingQueue):
    """A queue that keeps a :class:`Nominator` under its lock and serves it to the engine
    (``nominated_pods_for_node``, ``node_for``, ``nominated_nodes``) and to the preemption worker
    (``nominate``, ``clear_nomination``)."""

    def __init__(self) -> None:
        super().__init__()
        self._nominator = Nominator()

    def nominated_pods_for_node(self, node_name: str) -> list[Pod]:
        """The pending pods nominated to ``node_name``, in nomination order (``WaitingPodsForNode``)."""
        with self._cond:
            return self._nominator.pods_for_node(node_name)

    def node_for(self, pod: Pod) -> str | None:
        with self._cond:
            return self._nominator.node_for(pod)

    def nominate(self, pod: Pod, node_name: str) -> None:
        """Record the node a preemption chose for ``pod``, before the API server has it."""
        with self._cond:
            self._nominator.reserve(pod, node_name)

    def clear_nomination(self, pod: Pod) -> bool:
        """Forget ``pod``'s nomination (cleared by a preemption, or the pod was assumed); True if it had one."""
        with self._cond:
            return self._nominator.forget(pod)

    def nominated_nodes(self) -> list[str]:
        with self._cond:
            return self._nominator.nodes()

    def nominations(self) -> dict[str, list[str]]:
        """node -> ``namespace/name`` of the pods nominated there, in nomination order (for tests and logs)."""
        with self._cond:
            return self._nominator.by_node()
