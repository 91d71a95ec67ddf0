"""1.9's default scheduling queue (gate ``PodPriority`` off): ``cache.FIFO``.

Any add or update of a pod that is not queued appends it; re-queueing after a failure
(``add_unschedulable_if_not_present``) appends only if absent. Failed pods wait out their back-off
(:class:`~.backoff.PodBackoff`) outside the queue, in the daemon's requeuer.
"""

from __future__ import annotations

from ..model.pod import Pod
from .base import BlockingQueue, pod_key


class FIFO(BlockingQueue):
    """``cache.FIFO``: insertion order; an update of a queued pod keeps its place."""

    def __init__(self) -> None:
        super().__init__()
        self._items: dict[str, Pod] = {}

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
            if not self._wait(lambda: bool(self._items), timeout):
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
