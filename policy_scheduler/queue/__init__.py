"""Scheduling queues: one module family for everything that schedules (the daemon and the offline commands).

- :mod:`.base`: :func:`pod_key`, the :class:`SchedulingQueue` protocol the daemon drives, the blocking base;
- :mod:`.fifo`: :class:`FIFO`, 1.9's queue with the gate ``PodPriority`` off;
- :mod:`.priority`: :class:`PriorityQueue`, 1.9's queue with the gate on (activeQ + unschedulableQ);
- :mod:`.nominator`: the nominations index both priority queues keep and serve to the engine;
- :mod:`.backoff`: 1.9's per-pod :class:`PodBackoff`, 1.20's :func:`backoff_duration`;
- :mod:`.heap`: the keyed heap the priority queues are built on.

Every queue keys pods by ``namespace/name`` and blocks in ``pop`` until a pod or ``close``. Nothing here
touches the network or imports :mod:`policy_scheduler.kube`; time, where a queue needs it, comes from an
injectable clock.
"""

from __future__ import annotations

from .backoff import PodBackoff, backoff_duration
from .base import BlockingQueue, SchedulingQueue, pod_key
from .fifo import FIFO
from .nominator import NominatingQueue, Nominator
from .priority import PriorityQueue

__all__ = [
    "FIFO", "BlockingQueue", "NominatingQueue", "Nominator", "PodBackoff", "PriorityQueue", "SchedulingQueue",
    "backoff_duration", "new_scheduling_queue", "pod_key",
]


def new_scheduling_queue(pod_priority: bool) -> SchedulingQueue:
    """1.9's choice: the PriorityQueue with the gate ``PodPriority`` on, the FIFO otherwise."""
    return PriorityQueue() if pod_priority else FIFO()
