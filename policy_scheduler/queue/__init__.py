"""Scheduling queues: one module family for everything that schedules (the daemon and the offline commands).

- :mod:`.base`: :func:`pod_key`, the :class:`SchedulingQueue` protocol the daemon drives, the blocking base;
- :mod:`.fifo`: :class:`FIFO`, 1.9's queue with the gate ``PodPriority`` off;
- :mod:`.priority`: :class:`PriorityQueue`, 1.9's queue with the gate on (activeQ + unschedulableQ);
- :mod:`.three_queue`: :class:`ThreeQueuePriorityQueue`, 1.20's activeQ + podBackoffQ + unschedulableQ;
- :mod:`.nominator`: the nominations index both priority queues keep and serve to the engine;
- :mod:`.backoff`: 1.9's per-pod :class:`PodBackoff`, 1.20's :func:`backoff_duration`;
- :mod:`.heap`: the keyed heap the priority queues are built on.

Every queue keys pods by ``namespace/name`` and blocks in ``pop`` until a pod or ``close``. Nothing here
touches the network or imports :mod:`policy_scheduler.kube`; time, where a queue needs it, comes from an
injectable clock.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from .backoff import PodBackoff, backoff_duration
from .base import BlockingQueue, SchedulingQueue, pod_key
from .fifo import FIFO
from .nominator import NominatingQueue, Nominator
from .priority import PriorityQueue
from .three_queue import QueuedPod, ThreeQueuePriorityQueue

__all__ = [
    "FIFO", "QUEUE_KINDS", "BlockingQueue", "NominatingQueue", "Nominator", "PodBackoff", "PriorityQueue",
    "QueuedPod", "SchedulingQueue", "ThreeQueuePriorityQueue", "backoff_duration", "new_scheduling_queue",
    "pod_key",
]

#: The forms :func:`new_scheduling_queue` makes: 1.9's FIFO, 1.9's PriorityQueue, 1.20's three-queue form.
QUEUE_KINDS = ("fifo", "priority", "three-queue")


def new_scheduling_queue(kind: str | bool, clock: Callable[[], float] = time.monotonic) -> SchedulingQueue:
    """The queue of form ``kind`` (one of :data:`QUEUE_KINDS`); ``clock`` serves the three-queue form.

    A bool is 1.9's choice by the gate ``PodPriority``: True for the PriorityQueue, False for the FIFO.
    """
    if isinstance(kind, bool):
        kind = "priority" if kind else "fifo"
    if kind == "fifo":
        return FIFO()
    if kind == "priority":
        return PriorityQueue()
    if kind == "three-queue":
        return ThreeQueuePriorityQueue(clock)
    raise ValueError(f"unknown scheduling queue {kind!r}: one of {', '.join(QUEUE_KINDS)}")
