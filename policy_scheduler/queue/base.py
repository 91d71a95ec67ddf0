"""What every scheduling queue shares: the pod key, the :class:`SchedulingQueue` protocol the daemon drives,
the blocking :class:`BlockingQueue` base, and the test for an update that may make a waiting pod schedulable.

The protocol is the daemon's view (``kube/scheduler.py``, ``kube/eventhandlers.py``, ``kube/daemon.py``):

- ``add`` / ``update`` / ``delete``: the pod informer's events for pods of ours that are not bound;
- ``pop(timeout)``: the next pod to decide, blocking up to ``timeout`` seconds (None: until a pod or
  :meth:`~BlockingQueue.close`), None when nothing came or the queue is closed;
- ``add_unschedulable_if_not_present(pod, unschedulable)``: re-queue a popped pod after a failed attempt;
  ``unschedulable`` says it failed for lack of a fitting node (a FitError), else it failed for another reason
  (an error, a stop, an expired assumption) and is only to be retried;
- ``move_all_to_active``: a cluster event that may make unschedulable pods schedulable (a node added or
  changed, an assigned pod deleted, a PV or claim added or changed);
- ``assigned_pod_added`` / ``assigned_pod_updated``: a bound pod appeared or changed (pod affinity); a waiting
  pod's term with a namespaceSelector is matched against the labels ``namespace_labels`` gives for the bound
  pod's namespace (upstream's namespace lister; the daemon and ``simulate`` set it to the cache's lookup);
- ``depth``: pending pods by sub-queue (the ``pending_pods`` gauge); ``clear_nomination``: see
  :mod:`.nominator`; ``close``: wake every blocked ``pop``.

Everything here is pure: no network and no import from :mod:`policy_scheduler.kube`.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import Protocol

from ..model.pod import Pod


def pod_key(pod: Pod) -> str:
    """``namespace/name``: how every queue keys its pods (one pending pod per name)."""
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


class BlockingQueue:
    """One condition guards a queue's state; :meth:`close` wakes every blocked ``pop`` for good."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._closed = False
        # A namespace's labels, for the waiting pods' namespaceSelectors (None: no Namespace objects known).
        self.namespace_labels: Callable[[str], Mapping[str, str]] | None = None

    def _wait(self, ready: Callable[[], bool], timeout: float | None) -> bool:
        """With ``_cond`` held: wait up to ``timeout`` for ``ready()``; False on timeout or once closed."""
        return self._cond.wait_for(lambda: ready() or self._closed, timeout) and not self._closed

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify_all()


def spec_changed(old: Pod, new: Pod) -> bool:
    """Something other than status / resourceVersion / generation / managedFields changed (upstream
    ``isPodUpdated``: an update that may have made an unschedulable pod schedulable)."""
    def strip(pod: Pod) -> dict:
        meta = {k: v for k, v in (pod.raw.get("metadata") or {}).items() if k not in ("resourceVersion", "generation", "managedFields")}
        return {**{k: v for k, v in pod.raw.items() if k != "status"}, "metadata": meta}

    return strip(old) != strip(new)
