"""Scheduling queues and back-off (upstream ``scheduling_queue_test.go``, ``backoff_utils_test.go``)."""

from __future__ import annotations

import threading

from policy_scheduler.kube.queue import FIFO, PodBackoff, PriorityQueue
from policy_scheduler.model.pod import Pod


def make_pod(name: str, priority: int = 0, labels: dict | None = None, affinity: dict | None = None,
             extra_status: dict | None = None) -> Pod:
    spec = {"containers": [{"name": "c"}], "priority": priority}
    if affinity:
        spec["affinity"] = affinity
    return Pod({"metadata": {"name": name, "namespace": "ns", "labels": labels or {}, "resourceVersion": "1"},
                "spec": spec, "status": extra_status or {}})


def names(queue, n: int) -> list[str]:
    return [queue.pop(0).name for _ in range(n)]


def test_fifo_keeps_position_on_update_and_requeues_only_if_absent():
    q = FIFO()
    a, b, c = make_pod("a"), make_pod("b"), make_pod("c")
    for p in (a, b, c):
        q.add(p)
    q.update(a, make_pod("a", labels={"v": "2"}))
    q.add_unschedulable_if_not_present(b, True)
    assert len(q) == 3
    first = q.pop(0)
    assert first.name == "a" and first.labels == {"v": "2"}
    q.delete(b)
    assert names(q, 1) == ["c"]
    assert q.pop(0) is None
    q.add_unschedulable_if_not_present(b, True)
    assert names(q, 1) == ["b"]


def test_pop_blocks_until_add_or_close():
    q = FIFO()
    got = []
    t = threading.Thread(target=lambda: got.append(q.pop(5)))
    t.start()
    q.add(make_pod("late"))
    t.join(5)
    assert got[0].name == "late"
    t = threading.Thread(target=lambda: got.append(q.pop(5)))
    t.start()
    q.close()
    t.join(5)
    assert got[1] is None


def test_priority_queue_pops_highest_priority_then_arrival():
    q = PriorityQueue()
    for name, prio in (("low", 1), ("high", 100), ("mid-1", 50), ("mid-2", 50)):
        q.add(make_pod(name, prio))
    assert names(q, 4) == ["high", "mid-1", "mid-2", "low"]


def test_priority_change_reorders_a_queued_pod():
    q = PriorityQueue()
    q.add(make_pod("a", 1))
    q.add(make_pod("b", 5))
    q.update(make_pod("a", 1), make_pod("a", 10))
    assert names(q, 2) == ["a", "b"]
    assert q.pop(0) is None


def test_unschedulable_pods_wait_for_a_move_request():
    q = PriorityQueue()
    q.add(make_pod("a"))
    popped = q.pop(0)
    q.add_unschedulable_if_not_present(popped, unschedulable=True)
    assert q.depth() == {"active": 0, "unschedulable": 1}
    assert q.pop(0) is None
    q.move_all_to_active()
    assert names(q, 1) == ["a"]


def test_a_move_request_during_the_attempt_sends_the_pod_back_to_active():
    q = PriorityQueue()
    q.add(make_pod("a"))
    popped = q.pop(0)
    q.move_all_to_active()  # e.g. a node was added while "a" was being scheduled
    q.add_unschedulable_if_not_present(popped, unschedulable=True)
    assert q.depth() == {"active": 1, "unschedulable": 0}


def test_status_only_update_leaves_an_unschedulable_pod_waiting():
    q = PriorityQueue()
    q.add(make_pod("a"))
    a = q.pop(0)
    q.add_unschedulable_if_not_present(a, unschedulable=True)
    q.update(a, make_pod("a", extra_status={"conditions": [{"type": "PodScheduled", "status": "False"}]}))
    assert q.depth()["unschedulable"] == 1
    q.update(a, make_pod("a", labels={"changed": "yes"}))
    assert names(q, 1) == ["a"]


def test_assigned_pod_matching_required_affinity_moves_the_waiting_pod():
    affinity = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": "zone"}]}}
    q = PriorityQueue()
    for p in (make_pod("needs-db", affinity=affinity), make_pod("plain")):
        q.add(p)
        q.add_unschedulable_if_not_present(q.pop(0), unschedulable=True)
    q.assigned_pod_added(make_pod("web", labels={"app": "web"}))
    assert q.depth()["unschedulable"] == 2
    q.assigned_pod_added(make_pod("db-0", labels={"app": "db"}))
    assert q.depth() == {"active": 1, "unschedulable": 1}
    assert names(q, 1) == ["needs-db"]


def test_backoff_doubles_to_the_cap_and_forgets_idle_pods():
    now = [0.0]
    backoff = PodBackoff(clock=lambda: now[0])
    assert [backoff.next_delay("p") for _ in range(8)] == [1, 2, 4, 8, 16, 32, 60, 60]
    assert backoff.next_delay("other") == 1
    now[0] += 61
    assert backoff.next_delay("p") == 1
