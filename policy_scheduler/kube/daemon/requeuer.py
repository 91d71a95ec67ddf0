"""Re-queueing failed pods after their back-off (upstream ``factory.go`` ``MakeDefaultErrorFunc``).

Its own module: the scheduling loop re-queues through it, and so does the preemption worker, which the
loop holds.
"""

from __future__ import annotations

import heapq
import logging
import threading
import time
from collections.abc import Callable

from ...model.pod import Pod
from ...queue import PodBackoff, SchedulingQueue, pod_key

# The scheduling loop's logger, as when this class lived in scheduler.py: its lines keep their name, and
# ``--v`` (cli ``_setup_daemon_logging``) sets their level with the loop's.
log = logging.getLogger("policy_scheduler.kube.daemon.scheduler")


class Requeuer:
    """Puts failed pods back in the queue after their back-off (one wait per pod at a time).

    The pod is re-read from the pod informer's store (upstream GETs it from the API server): a pod
    that was deleted, or bound meanwhile, or is assumed, is not re-queued.
    """

    def __init__(self, queue: SchedulingQueue, lookup: Callable[[str], Pod | None], backoff: PodBackoff | None) -> None:
        self.queue = queue
        self.lookup = lookup
        self.backoff = backoff
        self._heap: list[tuple[float, str, bool]] = []
        self._waiting: set[str] = set()
        self._cond = threading.Condition()
        self._stopped = False
        self._thread = threading.Thread(target=self._run, name="requeue", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def requeue(self, pod: Pod, unschedulable: bool, delay: float | None = None) -> None:
        """Re-queue ``pod`` after its back-off (or after ``delay`` seconds when given)."""
        key = pod_key(pod)
        if delay is None:
            delay = self.backoff.next_delay(key) if self.backoff is not None else 0.0
        with self._cond:
            if key in self._waiting:
                log.debug("Request for pod %s already in flight, abandoning", key)
                return
            self._waiting.add(key)
            heapq.heappush(self._heap, (time.monotonic() + delay, key, unschedulable))
            self._cond.notify()

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._stopped and (not self._heap or self._heap[0][0] > time.monotonic()):
                    self._cond.wait(self._heap[0][0] - time.monotonic() if self._heap else None)
                if self._stopped:
                    return
                _, key, unschedulable = heapq.heappop(self._heap)
                self._waiting.discard(key)
            try:
                pod = self.lookup(key)
                if pod is None:
                    log.debug("A pod %s no longer needs scheduling", key)
                    continue
                self.queue.add_unschedulable_if_not_present(pod, unschedulable)
            except Exception:  # one pod's bad copy must not end every later re-queue
                log.exception("re-queueing pod %s failed", key)

    def stop(self, timeout: float = 2.0) -> None:
        with self._cond:
            self._stopped = True
            self._cond.notify_all()
        if self._thread.is_alive():
            self._thread.join(timeout=timeout)
