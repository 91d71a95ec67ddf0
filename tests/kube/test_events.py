"""The event recorder against real API servers: a pod's repeats are one Event with a count, different pods'
events are kept apart, and every event's fate is told (created, counted, dropped, failed); a full queue
drops with one log line when the drops start and one when they end."""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter

from benchmarks.harness.daemon import wait_until
from policy_scheduler.kube.daemon.events import (
    NORMAL,
    WARNING,
    BackgroundWriter,
    EventRecorder,
    object_reference,
)


def pod_ref(name: str) -> dict:
    return object_reference({"metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"}}, "Pod")


def events_about(rest, name: str) -> list[dict]:
    items = rest.get("/api/v1/namespaces/default/events")["items"]
    return [e for e in items if e["involvedObject"]["name"] == name]


def recorder(rest, writer: BackgroundWriter) -> tuple[EventRecorder, Counter]:
    fates: Counter = Counter()
    lock = threading.Lock()

    def observe(result: str) -> None:
        with lock:
            fates[result] += 1

    return EventRecorder(rest, "policy-scheduler", writer, observe=observe), fates


def test_repeats_of_one_pods_event_are_counted_and_other_pods_events_kept(apiserver):
    rest = apiserver.rest()
    writer = BackgroundWriter("events", workers=1)
    events, fates = recorder(rest, writer)
    writer.start()
    try:
        for _ in range(3):
            events.event(pod_ref("a"), WARNING, "FailedScheduling", "0/1 nodes are available: 1 Insufficient cpu.")
        events.event(pod_ref("b"), WARNING, "FailedScheduling", "0/1 nodes are available: 1 Insufficient cpu.")
        events.event(pod_ref("a"), NORMAL, "Scheduled", "Successfully assigned default/a to node-0")
        wait_until(lambda: sum(fates.values()) == 5, 20, what="five events written")
    finally:
        writer.stop()
    assert fates == {"created": 3, "counted": 2}
    a = sorted((e["reason"], e["count"], e["source"]["component"]) for e in events_about(rest, "a"))
    assert a == [("FailedScheduling", 3, "policy-scheduler"), ("Scheduled", 1, "policy-scheduler")]
    assert [(e["reason"], e["count"]) for e in events_about(rest, "b")] == [("FailedScheduling", 1)]


def test_an_event_the_server_refuses_is_counted_as_failed(apiserver):
    writer = BackgroundWriter("events", workers=1)
    events, fates = recorder(apiserver.rest(), writer)
    writer.start()
    try:
        gone = object_reference({"metadata": {"name": "p", "namespace": "no-such-namespace", "uid": "u"}}, "Pod")
        events.event(gone, NORMAL, "Scheduled", "Successfully assigned no-such-namespace/p to node-0")
        wait_until(lambda: fates["failed"] == 1, 20, what="the refused event counted")
    finally:
        writer.stop()
    assert fates == {"failed": 1}


def test_a_full_queue_drops_with_one_line_when_it_starts_and_one_when_it_ends(caplog):
    writer = BackgroundWriter("events", workers=1, max_queue=2)  # not started yet: nothing drains the queue
    done: list[int] = []
    with caplog.at_level(logging.WARNING, logger="policy_scheduler.kube.daemon.events"):
        accepted = [writer.submit(lambda i=i: done.append(i)) for i in range(5)]
        assert accepted == [True, True, False, False, False]
        assert writer.dropped == 3
        writer.start()
        deadline = time.monotonic() + 5
        while len(done) < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert writer.submit(lambda: done.append(5))
        writer.stop()
    assert done == [0, 1, 5]
    assert [r.getMessage() for r in caplog.records] == [
        "events: 2 writes wait for the API server; dropping new ones until there is room",
        "events: room again; 3 writes were dropped",
    ]
