"""A bind with an unknown outcome, without a cluster: the pod keeps its room (assumed, its expiry not
started) until the server says where it is; only *not bound* forgets and re-queues it."""

from __future__ import annotations

import threading

import pytest

from benchmarks.harness.daemon import pod, wait_until
from policy_scheduler.cache.scheduler_cache import SchedulerCache
from policy_scheduler.kube.client.reachability import read_until_answered
from policy_scheduler.kube.client.rest import ApiError
from policy_scheduler.kube.daemon.binder import BindOutcome
from policy_scheduler.kube.daemon.requeuer import Requeuer
from policy_scheduler.kube.daemon.scheduler import SchedulingLoop
from policy_scheduler.kube.metrics import SchedulerMetrics
from policy_scheduler.model.pod import Pod
from policy_scheduler.queue import FIFO

from .test_daemon_ha import _Engine

KEY = "default/p"
LOST = ApiError(0, "", "POST /api/v1/namespaces/default/pods/p/binding: Connection aborted")


def pod_p(**kw: object) -> Pod:
    raw = pod("p", **kw)  # type: ignore[arg-type]
    raw["metadata"]["namespace"] = "default"
    return Pod(raw)


class _Binder:
    """Every bind's reply is lost; ``bound_node`` answers from ``answers`` (an exception is raised), each
    answer waiting for ``release`` first."""

    def __init__(self, *answers: object) -> None:
        self.answers = list(answers)
        self.reads = 0
        self.release = threading.Event()
        self.release.set()

    def bind(self, p: Pod, host: str) -> tuple[BindOutcome, ApiError]:
        return BindOutcome.UNKNOWN, LOST

    def bound_node(self, p: Pod) -> str | None:
        self.release.wait(10)
        self.reads += 1
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer  # type: ignore[return-value]


class _Recorder:
    def __init__(self) -> None:
        self.events: list[tuple[str, str, str]] = []
        self.conditions: list[tuple[str, str]] = []

    def pod_event(self, p: Pod, kind: str, reason: str, message: str) -> None:
        self.events.append((p.name, reason, message))

    def update(self, p: Pod, status: str, reason: str, message: str | None) -> None:
        self.conditions.append((p.name, reason))


class _Requeuer:
    def __init__(self) -> None:
        self.pods: list[str] = []

    def requeue(self, p: Pod, unschedulable: bool, delay: float | None = None) -> None:
        self.pods.append(p.name)


class _Clock:
    now = 1000.0

    def __call__(self) -> float:
        return self.now


def run_one(binder: _Binder, cache: SchedulerCache) -> tuple[SchedulingLoop, _Recorder, _Requeuer, SchedulerMetrics]:
    recorder, requeuer, metrics = _Recorder(), _Requeuer(), SchedulerMetrics()
    queue = FIFO()
    loop = SchedulingLoop(cache=cache, queue=queue, algorithm=_Engine, binder=binder,  # type: ignore[arg-type]
                          recorder=recorder, conditions=recorder, requeuer=requeuer,  # type: ignore[arg-type]
                          metrics=metrics, bind_workers=1)
    queue.add(pod_p())
    loop.schedule_one(timeout=1)
    return loop, recorder, requeuer, metrics


def outcomes(metrics: SchedulerMetrics) -> dict[str, float]:
    return {label: metrics.bind_outcomes.labels(outcome=label)._value.get()
            for label in ("success", "conflict", "not_found", "unbound", "error")
            if metrics.bind_outcomes.labels(outcome=label)._value.get()}


def test_a_lost_reply_keeps_the_pod_assumed_until_the_server_says_it_is_bound():
    clock = _Clock()
    cache = SchedulerCache(ttl=0.0, clock=clock)  # an assumption whose binding finished expires at once
    binder = _Binder(ApiError(0, "", "connection refused"), ApiError(503, "ServiceUnavailable", "stopping"), "node-0")
    binder.release.clear()
    loop, recorder, requeuer, metrics = run_one(binder, cache)
    try:
        # While the server has not answered, the pod holds its room, and its expiry has not started.
        for _ in range(3):
            clock.now += 60
            assert cache.cleanup_expired() == []
            assert cache.is_assumed(KEY) and cache.cluster.pods[KEY].node_name == "node-0"
        binder.release.set()
        assert loop.wait_for_binds(10)
        assert binder.reads == 3
        assert outcomes(metrics) == {"success": 1.0}
        assert metrics.bind_unknown_outcomes._value.get() == 1.0
        assert requeuer.pods == [] and [r for _, r, _ in recorder.events] == ["Scheduled"]
        clock.now += 1  # bound, not yet confirmed by the watch: now the usual expiry applies
        assert [p.name for p in cache.cleanup_expired()] == ["p"]
    finally:
        loop.shutdown()


@pytest.mark.parametrize(("answer", "outcome", "requeued"), [
    ("", "unbound", ["p"]),        # the server says it is not bound: forgotten, re-queued, event
    (None, "not_found", []),       # the pod is gone: forgotten, nothing to re-queue
    ("node-9", "conflict", []),    # bound elsewhere (someone else's binding won): the watch says where
])
def test_the_servers_answer_settles_the_bind(answer, outcome, requeued):
    cache = SchedulerCache()
    binder = _Binder(ApiError(0, "", "connection reset"), answer)
    loop, recorder, requeuer, metrics = run_one(binder, cache)
    try:
        assert loop.wait_for_binds(10)
        assert outcomes(metrics) == {outcome: 1.0}
        assert requeuer.pods == requeued
        assert cache.is_assumed(KEY) is (outcome == "conflict")
        if outcome == "unbound":
            assert recorder.events == [("p", "FailedScheduling", f"Binding rejected: {LOST}")]
            assert recorder.conditions == [("p", "BindingRejected")]
    finally:
        loop.shutdown()


def test_the_watch_can_settle_it_first():
    """The watch shows the pod bound before the server answers a read: no more reads."""
    cache = SchedulerCache()
    binder = _Binder(ApiError(0, "", "connection refused"))
    loop, _, requeuer, metrics = run_one(binder, cache)
    try:
        wait_until(lambda: binder.reads == 1, 5, interval=0.005, what="the first read failing")
        cache.add_pod(pod_p(node_name="node-0"))  # what the pod informer does on MODIFIED
        assert loop.wait_for_binds(10)
        assert binder.reads == 1 and outcomes(metrics) == {"success": 1.0} and requeuer.pods == []
    finally:
        loop.shutdown()


def test_read_until_answered():
    stop = threading.Event()
    answers: list[object] = [ApiError(0, "", "refused"), ApiError(500, "InternalError", "etcd timeout"), "ok"]

    def read() -> object:
        answer = answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer

    assert read_until_answered(read, None, stop, "test") == "ok"
    answers[:] = [ApiError(404, "NotFound", "gone")]
    with pytest.raises(ApiError) as e:  # an answer propagates
        read_until_answered(read, None, stop, "test")
    assert e.value.not_found
    failing = ApiError(500, "InternalError", "always")
    answers[:] = [failing] * 3
    with pytest.raises(ApiError) as e:  # a server that is up and keeps failing: it will not say
        read_until_answered(read, None, stop, "test", failures=3)
    assert e.value is failing
    stop.set()
    assert read_until_answered(read, None, stop, "test") is None


def test_the_requeuer_survives_a_failing_lookup(caplog):
    """A lookup that raises loses that one re-queue (logged), not every later one."""
    queue = FIFO()
    calls: list[str] = []

    def lookup(key: str) -> Pod | None:
        calls.append(key)
        if len(calls) == 1:
            raise RuntimeError("a corrupt informer copy")
        return pod_p()

    requeuer = Requeuer(queue, lookup, None)
    requeuer.start()
    try:
        requeuer.requeue(pod_p(), unschedulable=False)
        wait_until(lambda: calls, 5, interval=0.005, what="the first lookup")
        requeuer.requeue(pod_p(), unschedulable=False)
        assert queue.pop(5).name == "p"
        assert "re-queueing pod default/p failed" in caplog.text
    finally:
        requeuer.stop()
        queue.close()
