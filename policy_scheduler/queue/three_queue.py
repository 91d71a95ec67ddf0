"""The three-queue ``PriorityQueue`` of upstream 1.20 (``pkg/scheduler/internal/queue/scheduling_queue.go``).

Three sub-queues hold the pending pods:

- *activeQ*, a heap of the pods to try next: higher ``spec.priority`` first, then the earlier timestamp
  (when the pod entered the queue, or was last put back after an attempt), then arrival;
- *podBackoffQ*, a heap by back-off expiry of pods waiting out their back-off: ``timestamp`` plus
  :func:`~.backoff.backoff_duration` of the pod's attempts (1 s doubling to 10 s);
- *unschedulableQ*, pods that failed for lack of a fitting node, each with the time it entered.

A popped pod counts one more attempt and starts a *scheduling cycle* (a counter of pops). A cluster event that
may help (:meth:`~ThreeQueuePriorityQueue.move_all_to_active_or_backoff_queue`, or an assigned pod that
satisfies a waiting pod's required pod affinity) moves unschedulable pods to activeQ, or to podBackoffQ while
they are still backing off, and records the current cycle as the *move-request cycle*. A failed pod
(:meth:`~ThreeQueuePriorityQueue.add_unschedulable_if_not_present`) goes to unschedulableQ unless a move
request came in or after its own cycle (the event may have helped it: podBackoffQ instead).

Nothing moves by itself: upstream's ``Run`` flushes podBackoffQ every second
(:meth:`~ThreeQueuePriorityQueue.flush_backoff_q_completed`: back-off over, to activeQ) and unschedulableQ every
30 s (:meth:`~ThreeQueuePriorityQueue.flush_unschedulable_q_leftover`: pods waiting longer than 60 s, to activeQ
or podBackoffQ). Here a driver either calls :meth:`~ThreeQueuePriorityQueue.run` (a thread on the real clock)
or, on a virtual clock, calls :meth:`~ThreeQueuePriorityQueue.flush_due` at the times
:meth:`~ThreeQueuePriorityQueue.next_flush_at` names: the flush ticks of ``Run`` at which something would move.

Where the daemon's protocol differs from upstream's interface: ``add_unschedulable_if_not_present(pod,
unschedulable)`` takes the pod and whether it failed for lack of a node; the queue remembers each popped pod's
attempts and cycle until it comes back (as :class:`~.priority.PriorityQueue` remembers its pop), and a pod that
failed for another reason (an error, a stop) goes to podBackoffQ, to be retried after its back-off.
The nominations index is the one 1.9's queue keeps (:mod:`.nominator`).
"""

from __future__ import annotations

import itertools
import logging
import math
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace

from ..model.pod import Pod
from ..model.topology import matches_required_pod_affinity
from .backoff import POD_INITIAL_BACKOFF, POD_MAX_BACKOFF, backoff_duration
from .base import pod_key, spec_changed
from .heap import KeyedHeap
from .nominator import NominatingQueue

log = logging.getLogger(__name__)

#: A pod waiting longer than this in unschedulableQ is moved by the next leftover flush (1.20: 60 s).
UNSCHEDULABLE_Q_TIME_INTERVAL = 60.0
#: ``Run``'s periods: podBackoffQ is flushed every second, unschedulableQ every 30 s.
BACKOFF_FLUSH_PERIOD = 1.0
LEFTOVER_FLUSH_PERIOD = 30.0
#: Slack when placing a time on a flush tick (float sums such as 0.1 + 0.2 must not miss their tick).
_TICK_SLACK = 1e-9

# The sub-queues (the ``pending_pods`` gauge's labels) and the events of scheduler_queue_incoming_pods_total.
ACTIVE, BACKOFF, UNSCHEDULABLE = "active", "backoff", "unschedulable"
POD_ADD = "PodAdd"
POD_UPDATE = "PodUpdate"
SCHEDULE_ATTEMPT_FAILURE = "ScheduleAttemptFailure"
BACKOFF_COMPLETE = "BackoffComplete"
UNSCHEDULABLE_TIMEOUT = "UnschedulableTimeout"
ASSIGNED_POD_ADD = "AssignedPodAdd"
ASSIGNED_POD_UPDATE = "AssignedPodUpdate"
CLUSTER_EVENT = "ClusterEvent"  # move_all_to_active() without a named event


@dataclass(slots=True)
class QueuedPod:
    """Upstream ``QueuedPodInfo``: a pending pod and its queue history."""

    pod: Pod
    timestamp: float  # entered the queue, or was last put back after an attempt
    initial_attempt: float  # first entered the queue
    attempts: int = 0  # pops so far
    seq: int = 0  # arrival order, renewed with the timestamp: ties pop first-in first-out


class ThreeQueuePriorityQueue(NominatingQueue):
    """1.20's scheduling queue: activeQ, podBackoffQ, unschedulableQ, and the nominations index."""

    def __init__(self, clock: Callable[[], float] = time.monotonic, *,
                 initial_backoff: float = POD_INITIAL_BACKOFF, max_backoff: float = POD_MAX_BACKOFF,
                 unschedulable_timeout: float = UNSCHEDULABLE_Q_TIME_INTERVAL,
                 backoff_flush_period: float = BACKOFF_FLUSH_PERIOD,
                 leftover_flush_period: float = LEFTOVER_FLUSH_PERIOD) -> None:
        super().__init__()
        self.clock = clock
        self.initial_backoff = initial_backoff
        self.max_backoff = max_backoff
        self.unschedulable_timeout = unschedulable_timeout
        self._active: KeyedHeap[QueuedPod] = KeyedHeap()  # by (-priority, timestamp, seq)
        self._backoff: KeyedHeap[QueuedPod] = KeyedHeap()  # by (back-off expiry, seq)
        self._unschedulable: dict[str, QueuedPod] = {}
        self._in_flight: dict[str, tuple[QueuedPod, int]] = {}  # popped: the pod's record and its cycle
        self._scheduling_cycle = 0
        self._move_request_cycle = -1
        self._seq = itertools.count()
        self._incoming: Counter[tuple[str, str]] = Counter()
        # Run's two loops, started with the queue: flush ticks at epoch + k * period.
        self._epoch = clock()
        self._periods = {BACKOFF: backoff_flush_period, UNSCHEDULABLE: leftover_flush_period}
        self._next_tick = {BACKOFF: self._epoch, UNSCHEDULABLE: self._epoch}

    # -- the daemon's protocol -----------------------------------------------------------------------
    def add(self, pod: Pod) -> None:
        """A new pending pod: to activeQ (out of the other two, should it be there)."""
        with self._cond:
            key = pod_key(pod)
            self._unschedulable.pop(key, None)
            self._backoff.remove(key)
            self._to_active(self._new(pod), POD_ADD)
            self._nominator.observe(pod)

    def update(self, old: Pod | None, new: Pod) -> None:
        """Replace the pod where it waits. In activeQ it keeps its place (its new priority counts); 1.20 moves it
        from podBackoffQ to activeQ, and from unschedulableQ to activeQ if more than its status changed. A pod
        not queued (being scheduled, or new to us) enters activeQ."""
        with self._cond:
            key = pod_key(new)
            self._nominator.observe(new)
            if (info := self._active.get(key)) is not None:
                info.pod = new
                self._push_active(info)
            elif (info := self._backoff.remove(key)) is not None:
                info.pod = new
                self._to_active(info, POD_UPDATE)
            elif (info := self._unschedulable.get(key)) is not None:
                info.pod = new
                if old is None or spec_changed(old, new):
                    del self._unschedulable[key]
                    self._to_active(info, POD_UPDATE)
            else:
                self._to_active(self._new(new), POD_UPDATE)

    def delete(self, pod: Pod) -> None:
        with self._cond:
            key = pod_key(pod)
            self._nominator.forget(pod)
            self._active.remove(key)
            self._backoff.remove(key)
            self._unschedulable.pop(key, None)
            self._in_flight.pop(key, None)

    def add_unschedulable_if_not_present(self, pod: Pod, unschedulable: bool = True) -> None:
        """Put a popped pod back after a failed attempt, its timestamp renewed: to unschedulableQ if it failed for
        lack of a node and no move request came in or after its cycle, to podBackoffQ otherwise. Nothing happens
        if the pod is queued already (an update re-added it meanwhile)."""
        with self._cond:
            key = pod_key(pod)
            popped = self._in_flight.pop(key, None)
            if key in self._active or key in self._backoff or key in self._unschedulable:
                log.debug("pod %s is already present in a scheduling queue", key)
                return
            if popped is not None:
                info, cycle = popped
                info.pod = pod
            else:  # not popped, or deleted since (upstream's fresh QueuedPodInfo): as of the current cycle
                info, cycle = self._new(pod), self._scheduling_cycle
            self._stamp(info, self.clock())
            if not unschedulable or self._move_request_cycle >= cycle:
                self._to_backoff(info, SCHEDULE_ATTEMPT_FAILURE)
            else:
                self._unschedulable[key] = info
                self._incoming[UNSCHEDULABLE, SCHEDULE_ATTEMPT_FAILURE] += 1
            self._nominator.observe(pod)

    def pop(self, timeout: float | None = None) -> Pod | None:
        """The head of activeQ, waiting up to ``timeout`` seconds for one (None: until one or :meth:`close`);
        counts an attempt and starts a scheduling cycle."""
        with self._cond:
            if not self._wait(lambda: bool(self._active), timeout):
                return None
            info = self._active.pop()
            info.attempts += 1
            self._scheduling_cycle += 1
            # A pod popped again before it was put back (an update re-added it while its preemption was in
            # flight; that attempt is dropped) keeps the cycle it first left in: no move since then is lost.
            earlier = self._in_flight.get(pod_key(info.pod))
            self._in_flight[pod_key(info.pod)] = (info, earlier[1] if earlier else self._scheduling_cycle)
            return info.pod

    def move_all_to_active_or_backoff_queue(self, event: str = CLUSTER_EVENT) -> None:
        """``MoveAllToActiveOrBackoffQueue``: every unschedulable pod to activeQ, or to podBackoffQ while it is
        backing off; a move request as of the current cycle."""
        with self._cond:
            self._move(list(self._unschedulable.values()), event, self.clock())

    def move_all_to_active(self) -> None:
        """The daemon's name for a cluster event (see :meth:`move_all_to_active_or_backoff_queue`)."""
        self.move_all_to_active_or_backoff_queue(CLUSTER_EVENT)

    def assigned_pod_added(self, pod: Pod) -> None:
        """Move the unschedulable pods whose required pod affinity this newly assigned pod satisfies."""
        self._move_affine(pod, ASSIGNED_POD_ADD)

    def assigned_pod_updated(self, pod: Pod) -> None:
        """Move the unschedulable pods whose required pod affinity this assigned pod now satisfies."""
        self._move_affine(pod, ASSIGNED_POD_UPDATE)

    def depth(self) -> dict[str, int]:
        with self._cond:
            return {ACTIVE: len(self._active), BACKOFF: len(self._backoff), UNSCHEDULABLE: len(self._unschedulable)}

    def __len__(self) -> int:
        return len(self._active) + len(self._backoff) + len(self._unschedulable)

    # -- the flushes ---------------------------------------------------------------------------------
    def flush_backoff_q_completed(self, now: float | None = None) -> None:
        """Move every pod whose back-off is over by ``now`` (default: the clock) from podBackoffQ to activeQ."""
        with self._cond:
            self._flush_backoff(self.clock() if now is None else now)

    def flush_unschedulable_q_leftover(self, now: float | None = None) -> None:
        """Move the pods that have waited in unschedulableQ longer than ``unschedulable_timeout`` by ``now``
        (default: the clock) to activeQ, or to podBackoffQ while backing off."""
        with self._cond:
            self._flush_leftover(self.clock() if now is None else now)

    def flush_due(self, now: float | None = None) -> None:
        """Run the flushes whose tick has come by ``now`` (default: the clock) as ``Run``'s loops would have: each
        as of its last tick passed (what earlier ticks would have moved, that one moves too)."""
        with self._cond:
            now = self.clock() if now is None else now
            for which, flush in ((UNSCHEDULABLE, self._flush_leftover), (BACKOFF, self._flush_backoff)):
                if now >= self._next_tick[which] - _TICK_SLACK:
                    period = self._periods[which]
                    tick = self._epoch + math.floor((now - self._epoch) / period + _TICK_SLACK) * period
                    flush(tick)
                    self._next_tick[which] = tick + period

    def next_flush_at(self) -> float | None:
        """The first flush tick at which a flush would move a pod (a back-off over, or a pod waited out in
        unschedulableQ): until then, and without events, what :meth:`pop` can return stays as it is. None when
        podBackoffQ and unschedulableQ are empty."""
        with self._cond:
            times = []
            head = self._backoff.peek()
            if head is not None:
                times.append(self._tick_at_or_after(BACKOFF, head[0][0]))
            if self._unschedulable:
                due = min(info.timestamp for info in self._unschedulable.values()) + self.unschedulable_timeout
                tick = self._tick_at_or_after(UNSCHEDULABLE, due)
                times.append(tick if tick > due else tick + self._periods[UNSCHEDULABLE])
            return min(times, default=None)

    def run(self) -> threading.Thread:
        """Start ``Run``'s flushes on a thread (for a real clock), until :meth:`close`."""
        thread = threading.Thread(target=self._flush_loop, name="queue-flush", daemon=True)
        thread.start()
        return thread

    # -- reading -------------------------------------------------------------------------------------
    @property
    def scheduling_cycle(self) -> int:
        with self._cond:
            return self._scheduling_cycle

    def where(self, pod: Pod) -> str | None:
        """The sub-queue holding ``pod`` (``active``, ``backoff``, ``unschedulable``), None if not queued."""
        key = pod_key(pod)
        with self._cond:
            for name, holder in ((ACTIVE, self._active), (BACKOFF, self._backoff), (UNSCHEDULABLE, self._unschedulable)):
                if key in holder:
                    return name
            return None

    def queued_pod(self, pod: Pod) -> QueuedPod | None:
        """A copy of ``pod``'s record, queued or being scheduled; None if the queue does not know it."""
        key = pod_key(pod)
        with self._cond:
            info = self._active.get(key) or self._backoff.get(key) or self._unschedulable.get(key)
            if info is None and key in self._in_flight:
                info = self._in_flight[key][0]
            return replace(info) if info is not None else None

    def backoff_expiry(self, pod: Pod) -> float | None:
        """When ``pod``'s back-off ends (``getBackoffTime``); None if the queue does not know it."""
        info = self.queued_pod(pod)
        return self._expiry(info) if info is not None else None

    def pending_pods(self) -> list[Pod]:
        """Every queued pod: activeQ, podBackoffQ, then unschedulableQ (``PendingPods``)."""
        with self._cond:
            infos = itertools.chain(self._active.values(), self._backoff.values(), self._unschedulable.values())
            return [info.pod for info in infos]

    def incoming_pods(self) -> dict[tuple[str, str], int]:
        """(sub-queue, event) -> pods that entered it so (``scheduler_queue_incoming_pods_total``)."""
        with self._cond:
            return dict(self._incoming)

    # -- with the lock held --------------------------------------------------------------------------
    def _new(self, pod: Pod) -> QueuedPod:
        now = self.clock()
        return QueuedPod(pod, now, now, 0, next(self._seq))

    def _stamp(self, info: QueuedPod, now: float) -> None:
        info.timestamp = now
        info.seq = next(self._seq)

    def _expiry(self, info: QueuedPod) -> float:
        return info.timestamp + backoff_duration(info.attempts, self.initial_backoff, self.max_backoff)

    def _push_active(self, info: QueuedPod) -> None:
        self._active.push(pod_key(info.pod), info, (-info.pod.priority, info.timestamp, info.seq))

    def _to_active(self, info: QueuedPod, event: str) -> None:
        self._push_active(info)
        self._incoming[ACTIVE, event] += 1
        self._cond.notify_all()

    def _to_backoff(self, info: QueuedPod, event: str) -> None:
        self._backoff.push(pod_key(info.pod), info, (self._expiry(info), info.seq))
        self._incoming[BACKOFF, event] += 1

    def _move(self, infos: Iterable[QueuedPod], event: str, now: float) -> None:
        """``movePodsToActiveOrBackoffQueue``: out of unschedulableQ; a move request even if none moved."""
        for info in infos:
            del self._unschedulable[pod_key(info.pod)]
            if self._expiry(info) > now:
                self._to_backoff(info, event)
            else:
                self._to_active(info, event)
        self._move_request_cycle = self._scheduling_cycle

    def _move_affine(self, assigned: Pod, event: str) -> None:
        with self._cond:
            waiting = [info for info in self._unschedulable.values()
                       if matches_required_pod_affinity(info.pod, assigned, self.namespace_labels)]
            self._move(waiting, event, self.clock())

    def _flush_backoff(self, now: float) -> None:
        while (head := self._backoff.peek()) is not None and head[0][0] <= now:
            self._to_active(self._backoff.pop(), BACKOFF_COMPLETE)

    def _flush_leftover(self, now: float) -> None:
        leftover = [info for info in self._unschedulable.values() if now - info.timestamp > self.unschedulable_timeout]
        if leftover:
            self._move(leftover, UNSCHEDULABLE_TIMEOUT, now)

    def _tick_at_or_after(self, which: str, moment: float) -> float:
        """The first tick of flush ``which`` at or after ``moment`` and not before its next scheduled tick."""
        period = self._periods[which]
        k = math.ceil((moment - self._epoch) / period - _TICK_SLACK)
        return max(self._epoch + k * period, self._next_tick[which])

    def _flush_loop(self) -> None:
        with self._cond:
            while True:
                wait = max(min(self._next_tick.values()) - self.clock(), 0.0)
                if self._cond.wait_for(lambda: self._closed, wait):
                    return
                self.flush_due()
