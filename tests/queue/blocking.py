"""A pop blocked on another thread while the test acts (adds a pod, closes the queue)."""

from __future__ import annotations

import threading
from collections.abc import Callable

from policy_scheduler.model.pod import Pod


def pop_while(queue, action: Callable[[], object], timeout: float = 5) -> Pod | None:
    """Start a blocking ``queue.pop`` on a thread, then run ``action``; what the pop returned. The pop waits far
    longer than ``timeout``: a None comes from a closed queue, not from the pop giving up."""
    got: list[Pod | None] = []
    waiter = threading.Thread(target=lambda: got.append(queue.pop(timeout * 10)), daemon=True)
    waiter.start()
    action()
    waiter.join(timeout)
    assert got, f"pop still blocked after {timeout} s"
    return got[0]
