"""The leader-election lock two replicas contend for in the HA tests and benchmarks: its flags (short timings:
lease 4 s, renew deadline 3 s, retry 1 s), who holds it now, and a watcher that keeps every change of holder."""

from __future__ import annotations

import threading
import time
from typing import Any

from policy_scheduler.kube.client.rest import ApiError, RestClient
from policy_scheduler.kube.daemon.leaderelection import (
    LEADER_ANNOTATION,
    LeaderElectionRecord,
    decode_annotation,
    decode_lease_spec,
)

LEASE, RENEW, RETRY = 4.0, 3.0, 1.0
LOCK_NAME = "policy-scheduler-ha"
LOCK_NAMESPACE = "kube-system"


def lock_flags(lock: str) -> list[str]:
    return [
        "--leader-elect-resource-lock", lock, "--lock-object-namespace", LOCK_NAMESPACE,
        "--lock-object-name", LOCK_NAME, "--leader-elect-lease-duration", f"{LEASE:g}s",
        "--leader-elect-renew-deadline", f"{RENEW:g}s", "--leader-elect-retry-period", f"{RETRY:g}s",
    ]


def lock_collection(lock: str) -> str:
    if lock == "leases":
        return f"/apis/coordination.k8s.io/v1/namespaces/{LOCK_NAMESPACE}/leases"
    return f"/api/v1/namespaces/{LOCK_NAMESPACE}/{lock}"


def record_of(lock: str, obj: dict[str, Any]) -> LeaderElectionRecord:
    if lock == "leases":
        return decode_lease_spec(obj.get("spec") or {})
    text = (obj["metadata"].get("annotations") or {}).get(LEADER_ANNOTATION)
    return decode_annotation(text) if text is not None else LeaderElectionRecord()


def current_holder(rest: RestClient, lock: str) -> str:
    try:
        return record_of(lock, rest.get(f"{lock_collection(lock)}/{LOCK_NAME}")).holder_identity
    except ApiError as e:
        if e.not_found:
            return ""
        raise


class LockWatcher:
    """Watches the lock object and keeps every holder change as (wall time seen, holder identity)."""

    def __init__(self, rest: RestClient, lock: str) -> None:
        self.rest = rest
        self.lock = lock
        self.changes: list[tuple[float, str]] = []
        self._stream: Any = None
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._run, name="lock-watcher", daemon=True)

    def start(self) -> LockWatcher:
        self._query: dict[str, str] = {"fieldSelector": f"metadata.name={LOCK_NAME}"}
        listed = self.rest.get(lock_collection(self.lock), self._query)
        for item in listed["items"] or ():
            self._seen(item)
        if listed["metadata"].get("resourceVersion"):
            self._query["resourceVersion"] = listed["metadata"]["resourceVersion"]
        self._thread.start()
        return self

    def _seen(self, obj: dict[str, Any]) -> None:
        holder = record_of(self.lock, obj).holder_identity
        if not self.changes or self.changes[-1][1] != holder:
            self.changes.append((time.time(), holder))
        self._query["resourceVersion"] = obj["metadata"]["resourceVersion"]

    def _run(self) -> None:
        while not self._stopped.is_set():
            try:
                self._stream = self.rest.watch(lock_collection(self.lock), self._query, read_timeout=120)
                for event in self._stream:
                    if event["type"] in ("ADDED", "MODIFIED"):
                        self._seen(event["object"])
            except ApiError:
                self._stopped.wait(0.2)

    def holders(self) -> list[str]:
        return [holder for _, holder in self.changes]

    def first_seen(self, holder: str) -> float:
        return next(t for t, h in self.changes if h == holder)

    def stop(self) -> None:
        self._stopped.set()
        if self._stream is not None:
            self._stream.close()
        self._thread.join(timeout=5)
