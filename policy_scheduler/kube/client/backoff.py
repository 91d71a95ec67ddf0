"""The back-off between an informer's failed attempts, as client-go's reflector keeps it.

client-go's ``NewReflector`` uses ``wait.NewExponentialBackoffManager(800ms, 30s, 2min, 2.0, 1.0, clock)``: the
first failure waits 0.8 s, each next one twice as long up to 30 s, and every wait is drawn at random between that
and twice that (jitter 1.0), so a long outage is retried every 30-60 s ("about 0.22 QPS" in its comment); once no
back-off has started for 2 minutes (a good period), the next failure starts again from 0.8 s. The daemon's API
discovery at start-up backs off the same way.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable

INITIAL = 0.8
CAP = 30.0
RESET_AFTER = 120.0
FACTOR = 2.0
JITTER = 1.0


class Backoff:
    """``wait.exponentialBackoffManagerImpl``: :meth:`next` is the wait before the next attempt, one per failure."""

    def __init__(self, initial: float = INITIAL, cap: float = CAP, *, reset_after: float = RESET_AFTER,
                 factor: float = FACTOR, jitter: float = JITTER, clock: Callable[[], float] = time.monotonic,
                 rand: Callable[[], float] = random.random) -> None:
        self.initial = initial
        self.cap = cap
        self.reset_after = reset_after
        self.factor = factor
        self.jitter = jitter
        self.clock = clock
        self.rand = rand
        self._duration = initial
        self._capped = False
        self._last_start: float | None = None

    def next(self) -> float:
        """Seconds to wait now (``getNextBackoff``, then ``Backoff.Step``)."""
        now = self.clock()
        if self._last_start is None or now - self._last_start > self.reset_after:
            self._duration, self._capped = self.initial, False
        self._last_start = now
        duration = self._duration
        if not self._capped:
            self._duration = duration * self.factor
            if self._duration > self.cap:
                self._duration, self._capped = self.cap, True
        if self.jitter > 0:
            duration += self.rand() * self.jitter * duration
        return duration
