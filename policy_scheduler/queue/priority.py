"""1.9's ``PriorityQueue`` (gate ``PodPriority``, upstream ``core/scheduling_queue.go``): an *activeQ* heap
(highest ``spec.priority`` first, then arrival) and an *unschedulableQ* of pods that failed for lack of a
fitting node, moved back to activeQ by cluster events that may make them schedulable. It keeps the
nominations index (:mod:`.nominator`).

Among pods of equal priority 1.9's heap pops in no specified order; here they pop in the order they first
arrived, kept when a pod is re-queued after a failure (as ``simulate`` orders them, deviation #39). A pod
whose preemption made room is then retried before the pods that arrived after it, instead of waiting
behind every one of them.
"""

from __future__ import annotations

import itertools
import logging

from ..model.pod import Pod
from ..model.topology import matches_required_pod_affinity
from .base import pod_key, spec_changed
from .heap import KeyedHeap
from .nominator import NominatingQueue

log = logging.getLogger(__name__)


class PriorityQueue(NominatingQueue):
    """1.9's ``PriorityQueue`` (gate ``PodPriority``): activeQ heap + unschedulableQ, and the index of
    nominated pods the engine reads (``nominated_pods_for_node``, ``node_for``)."""

    def __init__(self) -> None:
        super().__init__()
        self._active: KeyedHeap[tuple[int, Pod]] = KeyedHeap()  # key -> (seq, pod) by (-priority, seq)
        self._unschedulable: dict[str, Pod] = {}
        self._seq = itertools.count()
        self._arrival: dict[str, int] = {}  # key -> first arrival, kept until the pod leaves the queue: ties pop FIFO
        self._received_move_request = False
        self._moves = 0  # move requests so far
        # key -> self._moves when the pod was first popped since it was last re-queued after a failure: a pod
        # popped again meanwhile (an update re-added it while its preemption was in flight; that attempt
        # is dropped) still counts the moves since it first left, so none is lost.
        self._popped_at: dict[str, int] = {}

    def _push(self, pod: Pod) -> None:
        key = pod_key(pod)
        seq = self._arrival.get(key)
        if seq is None:
            seq = self._arrival[key] = next(self._seq)
        self._active.push(key, (seq, pod), (-pod.priority, seq))
        self._cond.notify()

    def add(self, pod: Pod) -> None:
        with self._cond:
            key = pod_key(pod)
            self._nominator.observe(pod)
            self._unschedulable.pop(key, None)
            self._push(pod)

    def update(self, old: Pod, new: Pod) -> None:
        with self._cond:
            key = pod_key(new)
            self._nominator.observe(new)
            if key in self._active:
                self._push(new)
            elif key in self._unschedulable:
                if spec_changed(old, new):
                    del self._unschedulable[key]
                    self._push(new)
                else:
                    self._unschedulable[key] = new
            else:
                self._push(new)

    def delete(self, pod: Pod) -> None:
        with self._cond:
            key = pod_key(pod)
            self._active.remove(key)
            self._unschedulable.pop(key, None)
            self._popped_at.pop(key, None)
            self._arrival.pop(key, None)
            self._nominator.forget(pod)

    def add_unschedulable_if_not_present(self, pod: Pod, unschedulable: bool) -> None:
        """Re-queue after a failure: unschedulableQ if it failed for lack of a node and no move
        request arrived since it was popped, activeQ otherwise."""
        with self._cond:
            key = pod_key(pod)
            if key in self._active or key in self._unschedulable:
                log.debug("pod %s is already present in a scheduling queue", key)
                return
            self._nominator.observe(pod)
            popped_at = self._popped_at.pop(key, None)
            # 1.9 asks "a move request since the last pop"; the loop re-queues asynchronously (after a
            # preemption's API calls, through the requeuer), so this asks it of this pod's own pop.
            moved = self._received_move_request if popped_at is None else popped_at != self._moves
            if unschedulable and not moved:
                self._unschedulable[key] = pod
            else:
                self._push(pod)

    def pop(self, timeout: float | None = None) -> Pod | None:
        with self._cond:
            if not self._wait(lambda: bool(self._active), timeout):
                return None
            _, pod = self._active.pop()
            self._received_move_request = False
            self._popped_at.setdefault(pod_key(pod), self._moves)
            return pod

    def move_all_to_active(self) -> None:
        with self._cond:
            for pod in self._unschedulable.values():
                self._push(pod)
            self._unschedulable.clear()
            self._received_move_request = True
            self._moves += 1

    def assigned_pod_added(self, pod: Pod) -> None:
        """Move the unschedulable pods whose required pod affinity this newly assigned pod satisfies. Like
        upstream's ``movePodsToActiveQueue`` it is a move request even when no pod moves: a pod whose
        attempt was under way re-enters activeQ."""
        with self._cond:
            for key, waiting in list(self._unschedulable.items()):
                if matches_required_pod_affinity(waiting, pod, self.namespace_labels):
                    del self._unschedulable[key]
                    self._push(waiting)
            self._received_move_request = True
            self._moves += 1

    assigned_pod_updated = assigned_pod_added

    def depth(self) -> dict[str, int]:
        return {"active": len(self._active), "unschedulable": len(self._unschedulable)}

    def __len__(self) -> int:
        return len(self._active) + len(self._unschedulable)
