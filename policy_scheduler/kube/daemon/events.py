"""Events and the ``PodScheduled`` condition, written in the background so the loop never waits.

Events are core/v1 Events with source component = the scheduler name, named ``<object>.<hex ns>`` as
client-go's recorder names them; a repeat of the same event for the same object (an unschedulable pod
retrying) increments ``count`` on the existing Event instead of creating another, as client-go's
correlator does; events about different objects are never merged. Events go out through a client of
their own (upstream's eventClient: its own rate limiter), so they never wait behind binds, nor binds behind
them. The queue is bounded (1,000, as client-go's broadcaster): when the API server or the limiter cannot
keep up, events are dropped, never the scheduling; every event's fate is counted
(``scheduler_events_total{result}``: created, counted, dropped, failed) and a run of drops is logged once
when it starts and once when it ends, with how many were dropped.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from datetime import datetime, timezone
from typing import Any

from ...features import NEWEST_LINE, KubernetesLine
from ...model.pod import Pod, pod_condition
from ..client.rest import ApiError, RestClient

log = logging.getLogger(__name__)

NORMAL = "Normal"
WARNING = "Warning"
MAX_QUEUE = 1000
CORRELATION_CACHE = 4096
PATCH_RETRIES = 3


def now_rfc3339() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def object_reference(obj: Mapping[str, Any], kind: str, api_version: str = "v1") -> dict[str, Any]:
    meta = obj.get("metadata") or {}
    ref = {"kind": kind, "namespace": meta.get("namespace"), "name": meta.get("name"), "uid": meta.get("uid"),
           "apiVersion": api_version, "resourceVersion": meta.get("resourceVersion")}
    return {k: v for k, v in ref.items() if v}


class BackgroundWriter:
    """A bounded queue of API writes done by a few worker threads."""

    def __init__(self, name: str, workers: int = 2, max_queue: int = MAX_QUEUE) -> None:
        self.name = name
        self._queue: queue.Queue[Callable[[], None] | None] = queue.Queue(max_queue)
        self._threads = [threading.Thread(target=self._work, name=f"{name}-{i}", daemon=True) for i in range(workers)]
        self.dropped = 0
        self._dropped_before = 0  # ``dropped`` when the current run of drops began
        self._dropping = False
        self._lock = threading.Lock()

    def start(self) -> None:
        for t in self._threads:
            t.start()

    def submit(self, write: Callable[[], None]) -> bool:
        """Queue ``write``; False when the queue is full and it was dropped."""
        try:
            self._queue.put_nowait(write)
        except queue.Full:
            with self._lock:
                self.dropped += 1
                if not self._dropping:
                    self._dropping, self._dropped_before = True, self.dropped - 1
                    log.warning("%s: %d writes wait for the API server; dropping new ones until there is room",
                                self.name, self._queue.maxsize)
            return False
        if self._dropping:
            with self._lock:
                if self._dropping:
                    self._dropping = False
                    log.warning("%s: room again; %d writes were dropped", self.name,
                                self.dropped - self._dropped_before)
        return True

    def _work(self) -> None:
        while True:
            write = self._queue.get()
            try:
                if write is None:
                    return
                write()
            except ApiError as e:
                log.warning("%s: %s", self.name, e)
            except Exception:  # a write failing must not stop the writer
                log.exception("%s: write failed", self.name)
            finally:
                self._queue.task_done()

    def stop(self, timeout: float = 5.0) -> None:
        """Write what is queued (bounded by ``timeout``), then end the workers."""
        deadline = time.monotonic() + timeout
        while self._queue.unfinished_tasks and time.monotonic() < deadline:
            time.sleep(0.02)
        for _ in self._threads:
            try:
                self._queue.put_nowait(None)
            except queue.Full:
                break
        for t in self._threads:
            t.join(timeout=max(0.0, deadline - time.monotonic()) + 0.1)


class EventRecorder:
    """``observe(result)`` is told each event's fate (``metrics.EVENT_RESULTS``)."""

    def __init__(self, rest: RestClient, component: str, writer: BackgroundWriter,
                 observe: Callable[[str], None] = lambda result: None) -> None:
        self.rest = rest
        self.component = component
        self.writer = writer
        self.observe = observe
        self._seen: OrderedDict[tuple, tuple[str, int]] = OrderedDict()
        self._lock = threading.Lock()

    def event(self, involved: Mapping[str, Any], type_: str, reason: str, message: str) -> None:
        """Record an event about ``involved`` (an ObjectReference dict) in the background."""
        if not self.writer.submit(lambda: self._write(dict(involved), type_, reason, message)):
            self.observe("dropped")

    def pod_event(self, pod: Pod, type_: str, reason: str, message: str) -> None:
        self.event(object_reference(pod.raw, "Pod"), type_, reason, message)

    def _write(self, involved: dict[str, Any], type_: str, reason: str, message: str) -> None:
        try:
            self.observe(self._post_or_count(involved, type_, reason, message))
        except ApiError:
            self.observe("failed")
            raise

    def _post_or_count(self, involved: dict[str, Any], type_: str, reason: str, message: str) -> str:
        """Write the event: "counted" when an earlier Event of it got its count incremented, else "created"."""
        namespace = involved.get("namespace") or "default"
        key = (involved.get("kind"), namespace, involved.get("name"), involved.get("uid"), type_, reason, message)
        timestamp = now_rfc3339()
        with self._lock:
            seen = self._seen.get(key)
        if seen is not None:
            name, count = seen
            try:
                self.rest.patch(f"/api/v1/namespaces/{namespace}/events/{name}",
                                {"count": count + 1, "lastTimestamp": timestamp})
                self._remember(key, name, count + 1)
                return "counted"
            except ApiError as e:
                if not e.not_found:
                    raise
        name = f"{involved.get('name')}.{time.time_ns():x}"
        self.rest.post(f"/api/v1/namespaces/{namespace}/events", {
            "apiVersion": "v1", "kind": "Event",
            "metadata": {"name": name, "namespace": namespace},
            "involvedObject": involved, "reason": reason, "message": message, "type": type_,
            "source": {"component": self.component},
            "firstTimestamp": timestamp, "lastTimestamp": timestamp, "count": 1,
        })
        self._remember(key, name, 1)
        return "created"

    def _remember(self, key: tuple, name: str, count: int) -> None:
        with self._lock:
            self._seen[key] = (name, count)
            self._seen.move_to_end(key)
            while len(self._seen) > CORRELATION_CACHE:
                self._seen.popitem(last=False)


#: The first line whose scheduler writes ``observedGeneration`` on the conditions it sets (gate
#: ``PodObservedGenerationTracking``: beta and on in 1.34, GA in 1.35).
OBSERVED_GENERATION_FROM: KubernetesLine = (1, 34)


def observed_generation(pod: Pod, line: KubernetesLine) -> int | None:
    """What upstream's ``CalculatePodConditionObservedGeneration`` gives the scheduler's condition on the cluster's
    ``line``: the pod's ``metadata.generation`` from 1.34 on, nothing before (the field does not exist there)."""
    if line < OBSERVED_GENERATION_FROM:
        return None
    generation = (pod.raw.get("metadata") or {}).get("generation")
    return generation if isinstance(generation, int) and not isinstance(generation, bool) and generation > 0 else None


class PodConditionUpdater:
    """Sets ``PodScheduled`` on a pod's status (from 1.34 with the pod's generation as ``observedGeneration``), only
    when status, reason or message change, and only while the pod still waits for a node when the write goes out
    (``still_pending``). ``line`` gives the cluster's Kubernetes line (read once by the daemon at start)."""

    def __init__(self, rest: RestClient, writer: BackgroundWriter,
                 still_pending: Callable[[Pod], bool] = lambda pod: True,
                 line: Callable[[], KubernetesLine] = lambda: NEWEST_LINE) -> None:
        self.rest = rest
        self.writer = writer
        self.still_pending = still_pending
        self.line = line

    def update(self, pod: Pod, status: str, reason: str, message: str | None, *, observed: bool = True) -> None:
        """``observed``: the condition is the scheduler's (upstream's ``handleSchedulingFailure``), which carries the
        observed generation; False for the one the API server writes on a gated pod, which carries none."""
        current = pod_condition(pod.raw, "PodScheduled")
        generation = observed_generation(pod, self.line()) if observed else None
        # Upstream's UpdatePodCondition: the generation alone moving writes nothing.
        if current is not None and (current.get("status"), current.get("reason"), current.get("message")) == (
            status, reason, message
        ):
            return
        transition = current.get("lastTransitionTime") if current and current.get("status") == status else now_rfc3339()
        condition: dict[str, Any] = {"type": "PodScheduled", "status": status, "reason": reason, "lastProbeTime": None,
                                     "lastTransitionTime": transition}
        if generation is not None:
            condition["observedGeneration"] = generation
        if message:
            condition["message"] = message
        log.debug("Updating pod condition for %s to (PodScheduled==%s)", pod.ref, status)
        self.writer.submit(lambda: self._patch(pod, condition))

    def _patch(self, pod: Pod, condition: dict[str, Any]) -> None:
        if not self.still_pending(pod):
            return  # retried and assumed or bound meanwhile: a late False must not overwrite the binding's True
        path = f"/api/v1/namespaces/{pod.namespace}/pods/{pod.name}/status"
        for attempt in range(PATCH_RETRIES):
            try:
                self.rest.patch(path, {"status": {"conditions": [condition]}})
                return
            except ApiError as e:
                # 1.10 answers back-to-back patches with spurious 409s now and then; a gone pod needs nothing.
                if e.not_found or not e.conflict or attempt == PATCH_RETRIES - 1:
                    if not e.not_found:
                        log.debug("updating the PodScheduled condition of %s failed: %s", pod.ref, e)
                    return

