"""Whether the API server answers, from the daemon's point of view, and a clock that stops while it does not.

Every request goes through :class:`~.rest.RestClient`, which reports failures that say nothing about the
request itself (:attr:`~.rest.ApiError.unavailable`: no reply, a connection refused, reset or aborted;
502, 503, 504) to :meth:`suspect`. A
suspicion starts the prober: a cheap ``GET /readyz`` (``/healthz`` on servers before 1.16) every
``probe_interval`` seconds. The first failed probe marks the server unreachable (one warning, the gauge
``scheduler_api_server_reachable`` at 0, :attr:`Reachability.detail` saying why for ``/readyz``); the first
good probe marks it reachable again (one info line with the outage's length, the gauge at 1) and wakes
everyone waiting for it at once: the informers reconnect, the scheduling loop resumes and the binds whose
outcome was unknown are settled, within a probe interval of the server's readiness rather than at the next
step of a back-off chosen while it was down. Meanwhile the informers keep retrying at their own back-off,
each failure logged (:meth:`Reachability.wait_retry` never waits for the server's return alone: a server that
never answers would leave the log silent).

:meth:`clock` is monotonic time minus the time the server was known to be unreachable: the scheduler
cache's assumed-pod expiry runs on it, so an assumption does not expire because the watch that would
confirm it could not run.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import TypeVar

from ..metrics import SchedulerMetrics
from .rest import ApiError, RestClient

log = logging.getLogger(__name__)

PROBE_INTERVAL = 0.25
PROBE_TIMEOUT = 1.0
READ_RETRY_INITIAL = 0.2
READ_RETRY_MAX = 5.0
READ_FAILURES = 8

T = TypeVar("T")


class Reachability:
    """The API server's reachability: suspected by failed requests, decided by the prober."""

    def __init__(self, rest: RestClient, metrics: SchedulerMetrics | None = None, *,
                 probe_interval: float = PROBE_INTERVAL, probe_timeout: float = PROBE_TIMEOUT,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.rest = rest
        self.metrics = metrics
        self.probe_interval = probe_interval
        self.probe_timeout = probe_timeout
        self._monotonic = clock
        self._cond = threading.Condition()
        self._suspected = False
        self._down_since: float | None = None  # None while the server is reachable
        self._downtime = 0.0
        self._recoveries = 0
        self._stopped = False
        self._readiness_path: str | None = None
        self._detail = ""  # why the last probe failed
        self._thread: threading.Thread | None = None

    # -- what the clients report ------------------------------------------------------------------
    def suspect(self, error: ApiError) -> None:
        """A request failed in a way that may mean the server is gone: let the prober find out."""
        with self._cond:
            if self._stopped or self._suspected or not self.reachable:
                return
            self._suspected = True
            log.debug("API server suspected unreachable: %s", error)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="api-server-probe", daemon=True)
                self._thread.start()
            self._cond.notify_all()

    # -- what the daemon asks -----------------------------------------------------------------------
    @property
    def reachable(self) -> bool:
        return self._down_since is None

    @property
    def detail(self) -> str:
        """Why the server is unreachable (the last failed probe), "" while it is reachable."""
        return self._detail if not self.reachable else ""

    @property
    def recoveries(self) -> int:
        """How many times the server came back after being found unreachable."""
        return self._recoveries

    def clock(self) -> float:
        """Monotonic seconds, not counting the time the server has been known to be unreachable."""
        with self._cond:
            down = self._downtime
            if self._down_since is not None:
                down += self._monotonic() - self._down_since
            return self._monotonic() - down

    def wait_reachable(self, stop: threading.Event) -> bool:
        """Block while the server is known to be unreachable (until ``stop``); True once it is reachable (or
        once this tracker is stopped: nobody would say otherwise)."""
        with self._cond:
            while not self.reachable and not self._stopped and not stop.is_set():
                self._cond.wait(0.2)  # 0.2: notice ``stop``
            return self.reachable or self._stopped

    def wait_retry(self, delay: float, stop: threading.Event) -> None:
        """Wait ``delay`` seconds before retrying a failed request, cut short if the server comes back from an
        outage meanwhile (or ``stop`` is set, or this tracker is stopped)."""
        deadline = self._monotonic() + delay
        with self._cond:
            start = self._recoveries
            while not stop.is_set() and not self._stopped and self._recoveries == start:
                left = deadline - self._monotonic()
                if left <= 0:
                    return
                self._cond.wait(min(left, 0.2))  # 0.2: notice ``stop``

    def stop(self, timeout: float = 2.0) -> None:
        """Stop probing; wait up to ``timeout`` seconds for a probe in flight."""
        with self._cond:
            self._stopped = True
            self._cond.notify_all()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=timeout)

    # -- the prober ---------------------------------------------------------------------------------
    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._stopped and self.reachable and not self._suspected:
                    self._cond.wait()
                if self._stopped:
                    return
            ok, detail = self._probe()
            with self._cond:
                if not ok:
                    self._detail = detail
                if ok:
                    self._suspected = False
                    if not self.reachable:
                        self._mark_reachable()
                    continue
                if self.reachable:
                    self._mark_unreachable(detail)
                self._cond.wait(self.probe_interval)

    def _probe(self) -> tuple[bool, str]:
        """One readiness request: ``/readyz``, or ``/healthz`` where the server has no ``/readyz``."""
        path = self._readiness_path or "/readyz"
        try:
            status = self.rest.probe(path, self.probe_timeout)
        except ApiError as e:
            return False, str(e)
        if status == 404 and self._readiness_path is None:
            self._readiness_path = "/healthz"
            return self._probe()
        if status in (401, 403):  # the server answers; it only will not tell us how it is
            return True, ""
        if status == 200:
            self._readiness_path = path
            return True, ""
        return False, f"GET {path}: {status}"

    def _mark_unreachable(self, detail: str) -> None:
        # The gauge first: whoever sees ``reachable`` False (a test, the scheduling loop) finds it already at 0.
        if self.metrics is not None:
            self.metrics.api_server_reachable.set(0)
            self.metrics.api_server_outages.inc()
        self._down_since = self._monotonic()
        self._detail = detail
        log.warning("API server %s unreachable (%s): scheduling paused, binds with unknown outcome kept assumed",
                    self.rest.host, detail)

    def _mark_reachable(self) -> None:
        assert self._down_since is not None
        outage = self._monotonic() - self._down_since
        self._downtime += outage
        self._down_since = None
        self._recoveries += 1
        log.info("API server %s reachable again after %.1fs: scheduling resumed", self.rest.host, outage)
        if self.metrics is not None:
            self.metrics.api_server_reachable.set(1)
        self._cond.notify_all()


def read_until_answered(read: Callable[[], T], reachability: Reachability | None, stop: threading.Event,
                        what: str, *, failures: int = READ_FAILURES) -> T | None:
    """``read()`` (a request that settles an unknown outcome) until the server answers it: while the server
    is unreachable, wait for it; after each reply that is no answer (no reply, 5xx), back off (0.2 s
    doubling to 5 s, cut short when the server comes back). Errors that are answers (404, 403, ...)
    propagate, and so does the ``failures``-th 500 from a server that is up (it will not say); None once
    ``stop`` is set."""
    delay = READ_RETRY_INITIAL
    errors = 0
    while not stop.is_set():
        if reachability is not None and not reachability.wait_reachable(stop):
            continue
        try:
            return read()
        except ApiError as e:
            if not e.indefinite:
                raise
            if not e.unavailable:  # a server that is up and failing, not one that is gone
                errors += 1
                if errors >= failures:
                    raise
            log.debug("%s: no answer yet (%s); retrying in %.1fs", what, e, delay)
        if reachability is not None:
            reachability.wait_retry(delay, stop)
        else:
            stop.wait(delay)
        delay = min(delay * 2, READ_RETRY_MAX)
    return None
