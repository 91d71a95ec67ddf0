"""Scheduling queues (upstream ``core/scheduling_queue.go``) and the per-pod back-off.

Gate ``PodPriority`` off: :class:`FIFO`, 1.9's default. Any add or update of a pod that is not queued
appends it; re-queueing after a failure (``add_unschedulable_if_not_present``) appends only if absent.
Gate on: :class:`PriorityQueue`, an *activeQ* heap (highest ``spec.priority`` first, then arrival)
and an *unschedulableQ* of pods that failed for lack of a fitting node, moved back to activeQ by
cluster events that may make them schedulable.

Both key pods by ``namespace/name`` and block in :meth:`pop` until a pod or :meth:`close`.

Nominations (gate ``PodPriority``): the PriorityQueue is the engine's ``NominatedPodLister``
(:mod:`policy_scheduler.core.nominated`). It indexes, node by node in nomination order, the pending pods
nominated to each node: from the pod objects it is given (1.9's ``NominatedNodeName`` annotation, else
1.10's ``status.nominatedNodeName``), as v1.9.4's index does, and from :meth:`PriorityQueue.nominate`, which
the scheduler calls the moment a preemption chooses a node, before the API server has the annotation (as
1.11's ``UpdateNominatedPodForNode``). A nomination lasts while the pod is pending in this scheduler:
queued, being scheduled, or waiting to be re-queued; it ends when the pod is assumed, bound, deleted, or its
nomination is cleared (:meth:`PriorityQueue.clear_nomination`, or an object whose nomination was removed).
A pod object without any nomination does not undo one made by :meth:`nominate` unless the previous object
had one (the informer may deliver a copy older than the nomination; 1.17's fix to ``nominatedPodMap``).
"""

from __future__ import annotations

import heapq
import itertools
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from ..core.nominated import nominated_node_of
from ..model.pod import Pod
from ..model.topology import matches_required_pod_affinity

log = logging.getLogger(__name__)

INITIAL_BACKOFF = 1.0
MAX_BACKOFF = 60.0


def pod_key(pod: Pod) -> str:
    return f"{pod.namespace}/{pod.name}"


class SchedulingQueue(Protocol):
    def add(self, pod: Pod) -> None: ...

    def update(self, old: Pod, new: Pod) -> None: ...

    def delete(self, pod: Pod) -> None: ...

    def add_unschedulable_if_not_present(self, pod: Pod, unschedulable: bool) -> None: ...

    def pop(self, timeout: float | None = None) -> Pod | None: ...

    def move_all_to_active(self) -> None: ...

    def assigned_pod_added(self, pod: Pod) -> None: ...

    def assigned_pod_updated(self, pod: Pod) -> None: ...

    def depth(self) -> dict[str, int]: ...

    def clear_nomination(self, pod: Pod) -> bool: ...

    def close(self) -> None: ...


class FIFO:
    """``cache.FIFO``: insertion order; an update of a queued pod keeps its place."""

    def __init__(self) -> None:
        self._items: dict[str, Pod] = {}
        self._cond = threading.Condition()
        self._closed = False

    def add(self, pod: Pod) -> None:
        with self._cond:
            self._items[pod_key(pod)] = pod
            self._cond.notify()

    def update(self, old: Pod, new: Pod) -> None:
        self.add(new)

    def delete(self, pod: Pod) -> None:
        with self._cond:
            self._items.pop(pod_key(pod), None)

    def add_unschedulable_if_not_present(self, pod: Pod, unschedulable: bool) -> None:
        with self._cond:
            if pod_key(pod) not in self._items:
                self._items[pod_key(pod)] = pod
                self._cond.notify()

    def pop(self, timeout: float | None = None) -> Pod | None:
        with self._cond:
            if not self._cond.wait_for(lambda: self._items or self._closed, timeout):
                return None
            if self._closed:
                return None
            key = next(iter(self._items))
            return self._items.pop(key)

    def move_all_to_active(self) -> None:
        """Nothing to move: a FIFO has no unschedulable sub-queue."""

    def assigned_pod_added(self, pod: Pod) -> None:
        """Nothing to move: a FIFO has no unschedulable sub-queue."""

    assigned_pod_updated = assigned_pod_added

    def clear_nomination(self, pod: Pod) -> bool:
        """Nothing to forget: a FIFO keeps no nominations."""
        return False

    def depth(self) -> dict[str, int]:
        return {"active": len(self._items)}

    def __len__(self) -> int:
        return len(self._items)

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify_all()


@dataclass(slots=True)
class _Nomination:
    node: str
    reserved: bool  # made by nominate() and not yet seen on a pod object


class PriorityQueue:
    """1.9's ``PriorityQueue`` (gate ``PodPriority``): activeQ heap + unschedulableQ, and the index of
    nominated pods the engine reads (``nominated_pods_for_node``, ``node_for``)."""

    def __init__(self) -> None:
        self._active: dict[str, tuple[int, int, Pod]] = {}  # key -> (-priority, seq, pod), seq ties FIFO
        self._heap: list[tuple[int, int, str]] = []
        self._unschedulable: dict[str, Pod] = {}
        self._seq = itertools.count()
        self._received_move_request = False
        self._moves = 0  # move requests so far
        self._popped_at: dict[str, int] = {}  # key -> self._moves when the pod was popped
        self._nominations: dict[str, _Nomination] = {}  # key -> nomination
        self._by_node: dict[str, dict[str, Pod]] = {}  # node -> key -> pod, in nomination order
        self._cond = threading.Condition()
        self._closed = False

    def _push(self, pod: Pod, seq: int | None = None) -> None:
        key = pod_key(pod)
        entry = (-pod.priority, next(self._seq) if seq is None else seq, pod)
        self._active[key] = entry
        heapq.heappush(self._heap, (entry[0], entry[1], key))
        self._cond.notify()

    def add(self, pod: Pod) -> None:
        with self._cond:
            key = pod_key(pod)
            self._observe(key, pod)
            self._unschedulable.pop(key, None)
            current = self._active.get(key)
            self._push(pod, current[1] if current is not None else None)

    def update(self, old: Pod, new: Pod) -> None:
        with self._cond:
            key = pod_key(new)
            self._observe(key, new)
            if key in self._active:
                self._push(new, self._active[key][1])
            elif key in self._unschedulable:
                if _spec_changed(old, new):
                    del self._unschedulable[key]
                    self._push(new)
                else:
                    self._unschedulable[key] = new
            else:
                self._push(new)

    def delete(self, pod: Pod) -> None:
        with self._cond:
            key = pod_key(pod)
            self._active.pop(key, None)
            self._unschedulable.pop(key, None)
            self._popped_at.pop(key, None)
            self._forget(key)

    def add_unschedulable_if_not_present(self, pod: Pod, unschedulable: bool) -> None:
        """Re-queue after a failure: unschedulableQ if it failed for lack of a node and no move
        request arrived since it was popped, activeQ otherwise."""
        with self._cond:
            key = pod_key(pod)
            if key in self._active or key in self._unschedulable:
                log.debug("pod %s is already present in a scheduling queue", key)
                return
            self._observe(key, pod)
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
            if not self._cond.wait_for(lambda: self._active or self._closed, timeout):
                return None
            if self._closed:
                return None
            while True:
                priority, seq, key = heapq.heappop(self._heap)
                entry = self._active.get(key)
                if entry is not None and entry[1] == seq and entry[0] == priority:  # else a stale heap entry
                    del self._active[key]
                    self._received_move_request = False
                    self._popped_at[key] = self._moves
                    return entry[2]

    def move_all_to_active(self) -> None:
        with self._cond:
            for pod in self._unschedulable.values():
                self._push(pod)
            self._unschedulable.clear()
            self._received_move_request = True
            self._moves += 1

    def assigned_pod_added(self, pod: Pod) -> None:
        """Move the unschedulable pods whose required pod affinity this newly assigned pod satisfies."""
        with self._cond:
            for key, waiting in list(self._unschedulable.items()):
                if matches_required_pod_affinity(waiting, pod):
                    del self._unschedulable[key]
                    self._push(waiting)

    assigned_pod_updated = assigned_pod_added

    # -- nominations ---------------------------------------------------------------------------------
    def nominated_pods_for_node(self, node_name: str) -> list[Pod]:
        """The pending pods nominated to ``node_name``, in nomination order (``WaitingPodsForNode``)."""
        with self._cond:
            pods = self._by_node.get(node_name)
            return list(pods.values()) if pods else []

    def node_for(self, pod: Pod) -> str | None:
        with self._cond:
            entry = self._nominations.get(pod_key(pod))
            return entry.node if entry is not None else None

    def nominate(self, pod: Pod, node_name: str) -> None:
        """Record the node a preemption chose for ``pod``, before the API server has it."""
        with self._cond:
            key = pod_key(pod)
            self._set(key, pod, node_name)
            self._nominations[key].reserved = True

    def clear_nomination(self, pod: Pod) -> bool:
        """Forget ``pod``'s nomination (cleared by a preemption, or the pod was assumed); True if it had one."""
        with self._cond:
            return self._forget(pod_key(pod))

    def nominated_nodes(self) -> list[str]:
        with self._cond:
            return list(self._by_node)

    def nominations(self) -> dict[str, list[str]]:
        """node -> ``namespace/name`` of the pods nominated there, in nomination order (for tests and logs)."""
        with self._cond:
            return {node: list(pods) for node, pods in self._by_node.items()}

    def _observe(self, key: str, pod: Pod) -> None:
        """Index ``pod``'s nomination as its object states it (a reservation by ``nominate`` is kept until an
        object confirms it; only :meth:`clear_nomination` or a deletion undoes it)."""
        entry = self._nominations.get(key)
        node = nominated_node_of(pod)
        if entry is not None and entry.reserved:
            self._set(key, pod, entry.node)
            self._nominations[key].reserved = node != entry.node
            return
        self._set(key, pod, node)

    def _set(self, key: str, pod: Pod, node: str) -> None:
        entry = self._nominations.get(key)
        if entry is not None and entry.node == node:
            self._by_node[node][key] = pod  # same place in the node's list, the latest object
            return
        self._forget(key)
        if node:
            self._nominations[key] = _Nomination(node, False)
            self._by_node.setdefault(node, {})[key] = pod

    def _forget(self, key: str) -> bool:
        entry = self._nominations.pop(key, None)
        if entry is None:
            return False
        pods = self._by_node[entry.node]
        del pods[key]
        if not pods:
            del self._by_node[entry.node]
        return True

    def depth(self) -> dict[str, int]:
        return {"active": len(self._active), "unschedulable": len(self._unschedulable)}

    def __len__(self) -> int:
        return len(self._active) + len(self._unschedulable)

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify_all()


def _spec_changed(old: Pod, new: Pod) -> bool:
    """Something other than status / resourceVersion / generation changed."""
    def strip(pod: Pod) -> dict:
        meta = {k: v for k, v in (pod.raw.get("metadata") or {}).items() if k not in ("resourceVersion", "generation", "managedFields")}
        return {**{k: v for k, v in pod.raw.items() if k != "status"}, "metadata": meta}

    return strip(old) != strip(new)


def new_scheduling_queue(pod_priority: bool) -> SchedulingQueue:
    return PriorityQueue() if pod_priority else FIFO()


class PodBackoff:
    """Per-pod exponential back-off (``util.PodBackoff``): 1 s doubling to 60 s, entries idle for
    longer than the maximum are garbage-collected."""

    def __init__(self, initial: float = INITIAL_BACKOFF, maximum: float = MAX_BACKOFF,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.initial = initial
        self.maximum = maximum
        self.clock = clock
        self._entries: dict[str, tuple[float, float]] = {}  # key -> (next duration, last update)
        self._lock = threading.Lock()

    def next_delay(self, key: str) -> float:
        """The wait before this pod's next attempt; each call doubles the following one."""
        with self._lock:
            now = self.clock()
            self._gc(now)
            duration, _ = self._entries.get(key, (self.initial, now))
            self._entries[key] = (min(duration * 2, self.maximum), now)
            return duration

    def _gc(self, now: float) -> None:
        for key, (_, updated) in list(self._entries.items()):
            if now - updated > self.maximum:
                del self._entries[key]
