"""Back-off: 1.9's per-pod :class:`PodBackoff` (``util.PodBackoff``, used beside the FIFO and by the
preemption worker) and 1.20's :func:`backoff_duration`, computed from a pod's attempts by the three-queue
form (``calculateBackoffDuration``)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

INITIAL_BACKOFF = 1.0
MAX_BACKOFF = 60.0

#: 1.20's ``DefaultPodInitialBackoffDuration`` and ``DefaultPodMaxBackoffDuration``.
POD_INITIAL_BACKOFF = 1.0
POD_MAX_BACKOFF = 10.0


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


def backoff_duration(attempts: int, initial: float = POD_INITIAL_BACKOFF, maximum: float = POD_MAX_BACKOFF) -> float:
    """The back-off after ``attempts`` scheduling attempts: ``initial`` for 0 or 1, doubling with each
    further attempt, never more than ``maximum``."""
    duration = initial
    for _ in range(1, attempts):
        duration *= 2
        if duration > maximum:
            return maximum
    return duration
