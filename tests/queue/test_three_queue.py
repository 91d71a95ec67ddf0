"""1.20's three-queue PriorityQueue, row for row from upstream ``scheduling_queue_test.go`` (v1.20), on a fake
clock and through the queue's public API: where upstream reaches into a sub-queue, the test puts the pod there
the way the scheduler would (a pop, a re-queue, a move request) and reads it back with ``where`` / ``depth``."""

from __future__ import annotations

import copy
import time

import pytest

from policy_scheduler.model.pod import Pod
from policy_scheduler.queue import (
    FIFO,
    QUEUE_KINDS,
    PriorityQueue,
    ThreeQueuePriorityQueue,
    new_scheduling_queue,
)
from policy_scheduler.queue.backoff import backoff_duration
from policy_scheduler.queue.three_queue import UNSCHEDULABLE_Q_TIME_INTERVAL

from .blocking import pop_while

T0 = 1000.0
LOW, MID, HIGH = 0, 100, 1000
MEDIUM = (LOW + HIGH) // 2
UNSCHEDULABLE_CONDITION = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                           "message": "fake scheduling failure"}


class FakeClock:
    """``clock.FakeClock``: time moves only when told."""

    def __init__(self, now: float = T0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def step(self, seconds: float) -> None:
        self.now += seconds


def make_pod(name: str, namespace: str = "ns1", priority: int = 0, *, nominated: str = "",
             annotations: dict | None = None, labels: dict | None = None, unschedulable: bool = False,
             spec: dict | None = None) -> Pod:
    status: dict = {"nominatedNodeName": nominated} if nominated else {}
    if unschedulable:
        status["conditions"] = [dict(UNSCHEDULABLE_CONDITION)]
    return Pod({"metadata": {"name": name, "namespace": namespace, "uid": f"{name}{namespace}",
                             "annotations": annotations or {}, "labels": labels or {}},
                "spec": {"priority": priority, **(spec or {})}, "status": status})


def marked_unschedulable(pod: Pod) -> Pod:
    """``podutil.UpdatePodCondition(... PodScheduled=False ...)``: the same pod, its status says unschedulable."""
    raw = copy.deepcopy(pod.raw)
    raw.setdefault("status", {})["conditions"] = [dict(UNSCHEDULABLE_CONDITION)]
    return Pod(raw)


def upstream_pods() -> tuple[Pod, Pod, Pod, Pod]:
    """``highPriorityPod``, ``highPriNominatedPod``, ``medPriorityPod``, ``unschedulablePod``."""
    return (make_pod("hpp", "ns1", HIGH),
            make_pod("hpp", "ns1", HIGH, nominated="node1"),
            make_pod("mpp", "ns2", MEDIUM, nominated="node1", annotations={"annot2": "val2"}),
            make_pod("up", "ns1", LOW, nominated="node1", annotations={"annot2": "val2"}, unschedulable=True))


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def q(clock: FakeClock) -> ThreeQueuePriorityQueue:
    return ThreeQueuePriorityQueue(clock)


def pop_names(q: ThreeQueuePriorityQueue, n: int) -> list[str]:
    return [q.pop(0).name for _ in range(n)]


def test_add(q):
    """TestPriorityQueue_Add: pops by priority whatever the order of adds; the nominated pods stay indexed
    after their pop."""
    hpp, _, mpp, up = upstream_pods()
    for pod in (mpp, up, hpp):
        q.add(pod)
    assert q.nominations() == {"node1": ["ns2/mpp", "ns1/up"]}
    assert [q.pop(0) for _ in range(3)] == [hpp, mpp, up]
    assert q.nominated_pods_for_node("node1") == [mpp, up]


def test_add_takes_a_pod_out_of_the_other_sub_queues(q):
    """1.20's Add: a pod added while in unschedulableQ or podBackoffQ leaves it for activeQ (logged upstream as
    an error: an add is for a new pod)."""
    waiting, backing_off = make_pod("waiting"), make_pod("backing-off")
    q.add_unschedulable_if_not_present(waiting, True)
    q.add_unschedulable_if_not_present(backing_off, False)
    q.add(waiting)
    q.add(backing_off)
    assert q.depth() == {"active": 2, "backoff": 0, "unschedulable": 0}


def test_add_with_reverse_priority_less_func(q):
    """TestPriorityQueue_AddWithReversePriorityLessFunc: the higher priority, added last, pops first."""
    hpp, _, mpp, _ = upstream_pods()
    q.add(mpp)
    q.add(hpp)
    assert q.pop(0) is hpp
    assert q.pop(0) is mpp


def test_add_unschedulable_if_not_present(q):
    """TestPriorityQueue_AddUnschedulableIfNotPresent: a pod already in activeQ is not added again; another goes
    to unschedulableQ (no move request yet); both are indexed as nominated."""
    _, hpn, _, up = upstream_pods()
    q.add(hpn)
    q.add_unschedulable_if_not_present(hpn, True)  # must not add anything
    q.add_unschedulable_if_not_present(up, True)
    assert q.depth() == {"active": 1, "backoff": 0, "unschedulable": 1}
    assert q.nominations() == {"node1": ["ns1/hpp", "ns1/up"]}
    assert q.pop(0) is hpn
    assert q.pop(0) is None
    assert q.where(up) == "unschedulable"
    assert len(q.nominations()) == 1


def test_add_unschedulable_if_not_present_backoff(q):
    """TestPriorityQueue_AddUnschedulableIfNotPresent_Backoff: pods whose cycle is at or before the last move
    request go to podBackoffQ, not unschedulableQ (here also: a pod popped after the request does not)."""
    pods = [make_pod(f"pod{i}", f"ns{i}", i) for i in range(10)]
    for pod in pods:
        q.add(pod)
    assert [q.pop(0) for _ in range(9)] == pods[:0:-1]  # all but the first, by priority
    q.move_all_to_active_or_backoff_queue("test")  # while they were being scheduled
    assert q.pop(0) is pods[0]
    for pod in pods[1:]:
        q.add_unschedulable_if_not_present(marked_unschedulable(pod), True)
    assert [q.where(pod) for pod in pods[1:]] == ["backoff"] * 9
    q.add_unschedulable_if_not_present(marked_unschedulable(pods[0]), True)  # popped after the move request
    assert q.where(pods[0]) == "unschedulable"


def test_pop(q):
    """TestPriorityQueue_Pop: a blocked pop returns the pod added afterwards, still indexed as nominated."""
    _, _, mpp, _ = upstream_pods()
    assert pop_while(q, lambda: q.add(mpp)) is mpp
    assert q.nominated_pods_for_node("node1") == [mpp]


def test_update(q):
    """TestPriorityQueue_Update (1.20): an update of an unqueued pod adds it to activeQ, of a queued one replaces
    it there (with its nomination); an unschedulable pod whose spec changed moves to activeQ."""
    hpp, hpn, mpp, up = upstream_pods()
    q.update(None, hpp)
    assert q.where(hpp) == "active"
    assert q.nominations() == {}
    q.update(hpp, hpn)
    assert q.depth()["active"] == 1
    assert q.nominations() == {"node1": ["ns1/hpp"]}
    q.update(up, up)  # not in any queue: to activeQ
    assert q.where(up) == "active"
    q.update(up, up)  # already in activeQ: stays there
    assert q.depth() == {"active": 2, "backoff": 0, "unschedulable": 0}
    assert q.pop(0) is hpn
    q.add_unschedulable_if_not_present(mpp, True)
    assert q.depth()["unschedulable"] == 1
    updated = Pod({**copy.deepcopy(mpp.raw), "metadata": {**mpp.raw["metadata"], "clusterName": "test"}})
    q.update(mpp, updated)
    assert q.where(mpp) == "active"
    assert q.pop(0) is updated


def test_update_status_only_keeps_an_unschedulable_pod_waiting(q):
    """1.20's Update, unschedulableQ branch: a status-only change replaces the pod where it waits."""
    pod = make_pod("p")
    q.add(pod)
    q.add_unschedulable_if_not_present(q.pop(0), True)
    newer = marked_unschedulable(pod)
    q.update(pod, newer)
    assert q.where(pod) == "unschedulable"
    assert q.pending_pods() == [newer]


def test_update_moves_a_pod_from_backoff_to_active(q):
    """1.20's Update, podBackoffQ branch: the updated pod leaves podBackoffQ for activeQ (1.21 keeps it there)."""
    pod = make_pod("p")
    q.add(pod)
    q.add_unschedulable_if_not_present(q.pop(0), False)
    assert q.where(pod) == "backoff"
    q.update(pod, marked_unschedulable(pod))
    assert q.where(pod) == "active"


def test_delete(q):
    """TestPriorityQueue_Delete: the deleted pod leaves activeQ and the nominations, the other stays."""
    hpp, hpn, _, up = upstream_pods()
    q.update(hpp, hpn)
    q.add(up)
    q.delete(hpn)
    assert q.where(up) == "active"
    assert q.where(hpn) is None
    assert q.nominations() == {"node1": ["ns1/up"]}
    q.delete(up)
    assert q.nominations() == {}
    assert len(q) == 0


def test_move_all_to_active_or_backoff_queue(q, clock):
    """TestPriorityQueue_MoveAllToActiveOrBackoffQueue: pods still backing off go to podBackoffQ; once their
    back-off is over a move sends them to activeQ."""
    hpp, _, mpp, up = upstream_pods()
    q.add(mpp)
    q.add_unschedulable_if_not_present(up, True)
    q.add_unschedulable_if_not_present(hpp, True)
    q.move_all_to_active_or_backoff_queue("test")
    assert q.depth() == {"active": 1, "backoff": 2, "unschedulable": 0}
    # Upstream pops both from podBackoffQ and bumps the cycle; here: delete them, pop mpp, put it back.
    q.delete(up)
    q.delete(hpp)
    assert q.pop(0) is mpp
    q.add(mpp)
    q.add_unschedulable_if_not_present(up, True)
    q.add_unschedulable_if_not_present(hpp, True)
    assert q.where(up) == q.where(hpp) == "unschedulable"
    clock.step(q.initial_backoff)
    q.move_all_to_active_or_backoff_queue("test")
    assert q.depth() == {"active": 3, "backoff": 0, "unschedulable": 0}


AFFINITY = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{
    "labelSelector": {"matchExpressions": [{"key": "service", "operator": "In", "values": ["securityscan", "value2"]}]},
    "topologyKey": "region"}]}}


def test_assigned_pod_added(q, clock):
    """TestPriorityQueue_AssignedPodAdded: an assigned pod matching a waiting pod's required affinity moves that
    pod (only) to activeQ; an assigned pod matching nothing moves nothing."""
    _, _, mpp, up = upstream_pods()
    affinity_pod = make_pod("afp", "ns1", MEDIUM, nominated="node1", unschedulable=True, spec={"affinity": AFFINITY})
    label_pod = make_pod("lbp", "ns1", labels={"service": "securityscan"}, spec={"nodeName": "machine1"})
    q.add(mpp)
    q.add_unschedulable_if_not_present(up, True)
    q.add_unschedulable_if_not_present(affinity_pod, True)
    clock.step(q.initial_backoff + 1)
    q.assigned_pod_added(make_pod("other", "ns1", labels={"service": "web"}, spec={"nodeName": "machine1"}))
    assert q.depth() == {"active": 1, "backoff": 0, "unschedulable": 2}
    q.assigned_pod_added(label_pod)
    assert q.where(affinity_pod) == "active"
    assert q.where(up) == "unschedulable"


def test_assigned_pod_updated_moves_a_backing_off_pod_to_backoff(q):
    """AssignedPodUpdated, as AssignedPodAdded: a matching pod still backing off goes to podBackoffQ."""
    affinity_pod = make_pod("afp", spec={"affinity": AFFINITY})
    q.add_unschedulable_if_not_present(affinity_pod, True)
    q.assigned_pod_updated(make_pod("lbp", labels={"service": "value2"}, spec={"nodeName": "m"}))
    assert q.where(affinity_pod) == "backoff"


def test_a_move_request_counts_even_when_nothing_moved(q):
    """1.20's movePodsToActiveOrBackoffQueue records the move request whether or not a pod moved: an assigned pod
    added during an attempt sends the failed pod to podBackoffQ."""
    pod = make_pod("p")
    q.add(pod)
    popped = q.pop(0)
    q.assigned_pod_added(make_pod("unrelated", spec={"nodeName": "m"}))
    q.add_unschedulable_if_not_present(popped, True)
    assert q.where(pod) == "backoff"


def test_a_move_before_a_second_pop_still_counts_when_the_pod_is_requeued(q):
    """Popped (its preemption's API calls in flight), a move, re-added by its nomination's update and popped
    again (that attempt is dropped), then re-queued by the preemption worker: the move since it first left
    counts (podBackoffQ, not an unschedulableQ only the 60-s flush would empty)."""
    pod = make_pod("p")
    q.add(pod)
    first = q.pop(0)
    q.move_all_to_active_or_backoff_queue()
    q.update(first, make_pod("p", nominated="n1"))
    assert q.pop(0).name == "p"
    q.add_unschedulable_if_not_present(first, True)
    assert q.where(pod) == "backoff"


def test_nominated_pods_for_node(q):
    """TestPriorityQueue_NominatedPodsForNode: queued pods by node, in nomination order; none for node2."""
    hpp, _, mpp, up = upstream_pods()
    for pod in (mpp, up, hpp):
        q.add(pod)
    assert q.pop(0) is hpp
    assert q.nominated_pods_for_node("node1") == [mpp, up]
    assert q.nominated_pods_for_node("node2") == []
    assert q.node_for(up) == "node1" and q.node_for(hpp) is None


def test_pending_pods(q):
    """TestPriorityQueue_PendingPods: every queued pod, before and after a move to activeQ."""
    hpp, _, mpp, up = upstream_pods()
    q.add(mpp)
    q.add_unschedulable_if_not_present(up, True)
    q.add_unschedulable_if_not_present(hpp, True)
    expected = {id(mpp), id(up), id(hpp)}
    assert {id(p) for p in q.pending_pods()} == expected
    q.move_all_to_active_or_backoff_queue("test")
    assert {id(p) for p in q.pending_pods()} == expected


def test_update_nominated_pod_for_node(q):
    """TestPriorityQueue_UpdateNominatedPodForNode: nominations made by the scheduler override the pod's, survive
    the pop, move, and are deleted."""
    hpp, _, mpp, up = upstream_pods()
    q.add(mpp)
    q.nominate(up, "node5")
    q.nominate(hpp, "node2")
    expected = {"node1": ["ns2/mpp"], "node2": ["ns1/hpp"], "node5": ["ns1/up"]}
    assert q.nominations() == expected
    assert q.pop(0) is mpp
    assert q.nominations() == expected
    q.nominate(hpp, "node4")
    assert q.nominations() == {"node1": ["ns2/mpp"], "node4": ["ns1/hpp"], "node5": ["ns1/up"]}
    assert q.clear_nomination(hpp) is True
    assert q.nominations() == {"node1": ["ns2/mpp"], "node5": ["ns1/up"]}


def test_nominate_survives_an_older_pod_object(q):
    """The shared index (1.17's nominatedPodMap fix): a copy without a nomination does not undo ``nominate``."""
    pod = make_pod("p")
    q.add(pod)
    popped = q.pop(0)
    q.nominate(popped, "n1")
    q.add_unschedulable_if_not_present(pod, True)
    q.update(pod, make_pod("p", annotations={"other": "change"}))
    assert q.node_for(pod) == "n1"


def test_new_with_options(clock):
    """TestPriorityQueue_NewWithOptions: the back-off bounds are the queue's (2 s doubling to 20 s here)."""
    q = ThreeQueuePriorityQueue(clock, initial_backoff=2, max_backoff=20)
    pod = make_pod("p")
    q.add(pod)
    for want in (2, 4, 8, 16, 20, 20):
        q.add_unschedulable_if_not_present(q.pop(0), False)
        assert q.backoff_expiry(pod) - clock.now == want
        clock.step(want)
        q.flush_backoff_q_completed()


_MAP_PODS = [
    make_pod("p0", "ns1", nominated="node1", annotations={"annot1": "val1"}),
    make_pod("p1", "ns1", annotations={"annot": "val"}),
    make_pod("p2", "ns2", nominated="node3", annotations={"annot2": "val2", "annot3": "val3"}),
    make_pod("p3", "ns4", nominated="node1"),
]


@pytest.mark.parametrize(("adds", "updates", "deletes", "after_update", "after_delete"), [
    pytest.param([0, 1, 2, 3], [0], [0, 1], ["u0", 1, 2, 3], [2, 3], id="create, update, delete subset of pods"),
    pytest.param([0, 3], [3], [0, 3], [0, "u3"], [], id="create, update, delete all"),
    pytest.param([1, 2], [1], [2, 3], ["u1", 2], ["u1"], id="delete non-existing and existing pods"),
])
def test_unschedulable_pods_map(q, adds, updates, deletes, after_update, after_delete):
    """TestUnschedulablePodsMap: unschedulableQ keeps the latest object of each pod (an update that changes
    nothing but the object leaves it there) and forgets deleted ones; deleting an absent pod does nothing."""
    updated = {i: Pod(copy.deepcopy(_MAP_PODS[i].raw)) for i in (0, 1, 3)}

    def pods(refs):
        return [updated[int(r[1:])] if isinstance(r, str) else _MAP_PODS[r] for r in refs]

    for i in adds:
        q.add_unschedulable_if_not_present(_MAP_PODS[i], True)
    assert [id(p) for p in q.pending_pods()] == [id(_MAP_PODS[i]) for i in adds]
    for i in updates:
        q.update(_MAP_PODS[i], updated[i])
    assert [id(p) for p in q.pending_pods()] == [id(p) for p in pods(after_update)]
    for i in deletes:
        q.delete(_MAP_PODS[i])
    assert [id(p) for p in q.pending_pods()] == [id(p) for p in pods(after_delete)]
    assert q.depth()["unschedulable"] == len(after_delete)


def test_close(q):
    """TestSchedulingQueue_Close: a pop blocked on an empty queue returns None once the queue is closed."""
    assert pop_while(q, q.close) is None


def test_recently_tried_pods_go_back(q, clock):
    """TestRecentlyTriedPodsGoBack: a pod tried and put back goes behind the pods of its priority."""
    pods = [make_pod(f"test-pod-{i}", "ns1", HIGH, nominated="node1") for i in range(5)]
    for pod in pods:
        q.add(pod)
    clock.step(1e-6)
    p1 = q.pop(0)
    q.add_unschedulable_if_not_present(marked_unschedulable(p1), True)
    clock.step(q.initial_backoff)
    q.move_all_to_active_or_backoff_queue("test")
    assert pop_names(q, 5) == ["test-pod-1", "test-pod-2", "test-pod-3", "test-pod-4", "test-pod-0"]


def test_pod_failed_scheduling_multiple_times_does_not_block_newer_pod(q, clock):
    """TestPodFailedSchedulingMultipleTimesDoesNotBlockNewerPod: a pod added while an unschedulable pod was being
    tried pops before it once both are back in activeQ."""
    unschedulable = make_pod("test-pod-unscheduled", "ns1", HIGH, nominated="node1", unschedulable=True)
    q.add_unschedulable_if_not_present(unschedulable, True)
    clock.step(q.initial_backoff + 1)
    q.move_all_to_active_or_backoff_queue("test")
    assert q.pop(0) is unschedulable
    newer = make_pod("test-newer-pod", "ns1", HIGH, nominated="node1")
    q.add(newer)
    q.add_unschedulable_if_not_present(unschedulable, True)
    clock.step(q.initial_backoff + 1)
    q.move_all_to_active_or_backoff_queue("test")
    assert q.pop(0) is newer


def test_high_priority_backoff(q):
    """TestHighPriorityBackoff: an unschedulable high-priority pod still backing off does not block the others."""
    mid = make_pod("test-midpod", "ns1", MID, nominated="node1")
    high = make_pod("test-highpod", "ns1", HIGH, nominated="node1")
    q.add(mid)
    q.add(high)
    assert q.pop(0) is high
    q.add_unschedulable_if_not_present(marked_unschedulable(high), True)
    q.move_all_to_active_or_backoff_queue("test")
    assert q.pop(0) is mid
    assert q.where(high) == "backoff"


def test_high_priority_flush_unschedulable_q_leftover(q, clock):
    """TestHighPriorityFlushUnschedulableQLeftover: pods left in unschedulableQ longer than 60 s move to activeQ
    and pop by priority (not at 60 s exactly: longer than)."""
    mid = make_pod("test-midpod", "ns1", MID, nominated="node1", unschedulable=True)
    high = make_pod("test-highpod", "ns1", HIGH, nominated="node1", unschedulable=True)
    q.add_unschedulable_if_not_present(high, True)
    q.add_unschedulable_if_not_present(mid, True)
    clock.step(UNSCHEDULABLE_Q_TIME_INTERVAL)
    q.flush_unschedulable_q_leftover()
    assert q.depth()["unschedulable"] == 2
    clock.step(1)
    q.flush_unschedulable_q_leftover()
    assert q.pop(0) is high
    assert q.pop(0) is mid


def _pod1_pod2() -> tuple[Pod, Pod]:
    return make_pod("test-pod-1", "ns1", nominated="node1"), make_pod("test-pod-2", "ns2", nominated="node2")


def _timestamp_add(q, clock, pod, at):
    clock.now = at
    q.add(pod)


def _timestamp_update(q, clock, pod, at):
    clock.now = at
    q.update(None, pod)


def _timestamp_unschedulable(q, clock, pod, at):
    clock.now = at
    q.add_unschedulable_if_not_present(pod, True)


def _timestamp_backoff(q, clock, pod, at):
    clock.now = at
    q.add_unschedulable_if_not_present(pod, False)


@pytest.mark.parametrize(("put", "then"), [
    pytest.param((_timestamp_add, _timestamp_add), (), id="add two pod to activeQ and sort them by the timestamp"),
    pytest.param((_timestamp_update, _timestamp_update), (), id="update two pod to activeQ and sort them by the timestamp"),
    pytest.param((_timestamp_unschedulable, _timestamp_unschedulable), ("step", "move"),
                 id="add two pod to unschedulableQ then move them to activeQ and sort them by the timestamp"),
    pytest.param((_timestamp_add, _timestamp_backoff), ("step", "flush", "move"),
                 id="add one pod to BackoffQ and move it to activeQ"),
])
def test_pod_timestamp(q, clock, put, then):
    """TestPodTimestamp: pods of equal priority pop by their timestamp (pod1 at T0, pod2 a second later), whichever
    was queued first and whichever way they reached activeQ."""
    pod1, pod2 = _pod1_pod2()
    put[0](q, clock, pod2, T0 + 1)
    put[1](q, clock, pod1, T0)
    for op in then:
        if op == "step":
            clock.step(2)
        elif op == "flush":
            clock.step(2)
            q.flush_backoff_q_completed()
        else:
            q.move_all_to_active_or_backoff_queue("test")
    assert [q.pop(0), q.pop(0)] == [pod1, pod2]


def _pods(n: int, prefix: str = "test-pod") -> list[Pod]:
    return [make_pod(f"{prefix}-{i}", f"ns{i}") for i in range(1, n + 1)]


def test_pending_pods_metric(clock):
    """TestPendingPodsMetric: the pending pods by sub-queue (``depth``) after each row's operations."""
    def fresh():
        clock.now = T0
        return ThreeQueuePriorityQueue(clock)

    pods = _pods(50)
    q = fresh()
    for p in pods[:30]:
        q.add(p)
    for p in pods[30:]:
        q.add_unschedulable_if_not_present(p, True)
    assert q.depth() == {"active": 30, "backoff": 0, "unschedulable": 20}  # activeQ and unschedulableQ

    q = fresh()
    for p in pods[:15]:
        q.add(p)
    for p in pods[15:40]:
        q.add_unschedulable_if_not_present(p, False)
    for p in pods[40:]:
        q.add_unschedulable_if_not_present(p, True)
    assert q.depth() == {"active": 15, "backoff": 25, "unschedulable": 10}  # all kinds of queues

    q = fresh()
    for p in pods:
        q.add_unschedulable_if_not_present(p, True)
    clock.step(2)
    q.move_all_to_active_or_backoff_queue("test")
    assert q.depth() == {"active": 50, "backoff": 0, "unschedulable": 0}  # unschedulableQ, then all to activeQ

    q = fresh()
    for p in pods[20:]:
        q.add_unschedulable_if_not_present(p, True)
    clock.step(2)
    for p in _pods(20, "delayed"):
        q.add_unschedulable_if_not_present(p, True)
    q.move_all_to_active_or_backoff_queue("test")
    assert q.depth() == {"active": 30, "backoff": 20, "unschedulable": 0}  # some subject to back-off

    q = fresh()
    for p in pods[:40]:
        q.add_unschedulable_if_not_present(p, True)
    for p in pods[40:]:
        q.add(p)
    q.move_all_to_active_or_backoff_queue("test")
    assert q.depth() == {"active": 10, "backoff": 40, "unschedulable": 0}
    clock.step(2)
    q.flush_backoff_q_completed()
    assert q.depth() == {"active": 50, "backoff": 0, "unschedulable": 0}  # ... and finally flush backoffQ


@pytest.mark.parametrize(("ops", "want"), [
    pytest.param(["add"], {("active", "PodAdd"): 3}, id="add pods to activeQ"),
    pytest.param(["unschedulable"], {("unschedulable", "ScheduleAttemptFailure"): 3}, id="add pods to unschedulableQ"),
    pytest.param(["unschedulable", "move"], {("unschedulable", "ScheduleAttemptFailure"): 3, ("backoff", "test"): 3},
                 id="add pods to unschedulableQ and then move all to backoffQ"),
    pytest.param(["unschedulable", "step", "move"],
                 {("unschedulable", "ScheduleAttemptFailure"): 3, ("active", "test"): 3},
                 id="add pods to unschedulableQ and then move all to activeQ"),
    pytest.param(["to-backoff", "step", "flush"],
                 {("backoff", "ScheduleAttemptFailure"): 3, ("active", "BackoffComplete"): 3},
                 id="make some pods subject to backoff and add them to backoffQ, then flush backoffQ"),
])
def test_incoming_pods_metrics(q, clock, ops, want):
    """TestIncomingPodsMetrics: pods entering each sub-queue, by event (``scheduler_queue_incoming_pods_total``)."""
    pods = _pods(3)
    for op in ops:
        if op == "add":
            for p in pods:
                q.add(p)
        elif op == "unschedulable":
            for p in pods:
                q.add_unschedulable_if_not_present(p, True)
        elif op == "to-backoff":  # upstream passes cycle -1: a move request as of the current cycle does the same
            q.move_all_to_active_or_backoff_queue("nothing-waits")
            for p in pods:
                q.add_unschedulable_if_not_present(p, True)
        elif op == "move":
            q.move_all_to_active_or_backoff_queue("test")
        elif op == "step":
            clock.step(2)
        elif op == "flush":
            clock.step(2)
            q.flush_backoff_q_completed()
    assert q.incoming_pods() == want


def test_per_pod_scheduling_metrics(q, clock):
    """TestPerPodSchedulingMetrics: attempts count the pops; the initial attempt's time stays through a re-queue,
    a leftover flush and an update."""
    pod = make_pod("test-pod", "test-ns")
    q.add(pod)
    q.pop(0)
    info = q.queued_pod(pod)
    assert (info.attempts, info.initial_attempt) == (1, T0)  # attempt once

    for update in (False, True):
        clock.now = T0
        q = ThreeQueuePriorityQueue(clock)
        q.add(pod)
        q.add_unschedulable_if_not_present(q.pop(0), True)
        clock.now = T0 + UNSCHEDULABLE_Q_TIME_INTERVAL + 0.001
        q.flush_unschedulable_q_leftover()
        if update:
            q.update(pod, Pod({**pod.raw, "metadata": {**pod.raw["metadata"], "generation": 1}}))
        q.pop(0)
        info = q.queued_pod(pod)
        assert (info.attempts, info.initial_attempt) == (2, T0)  # attempt twice (with update)


@pytest.mark.parametrize("attempt", range(7))
def test_backoff_flow(clock, attempt):
    """TestBackOffFlow: each failed attempt backs off 1, 2, 4, 8 then 10 s; an early flush keeps the pod in
    podBackoffQ, the flush after its back-off moves it out."""
    want = [1, 2, 4, 8, 10, 10, 10]
    q = ThreeQueuePriorityQueue(clock)
    pod = make_pod("test-pod", "test-ns")
    q.add(pod)
    for i in range(attempt + 1):
        timestamp = clock.now
        q.pop(0)
        assert q.queued_pod(pod).attempts == i + 1
        q.add_unschedulable_if_not_present(pod, True)
        q.move_all_to_active_or_backoff_queue("deleted pod")
        assert q.where(pod) == "backoff"
        backoff = q.backoff_expiry(pod) - timestamp
        assert backoff == want[i]
        clock.step(0.001)
        q.flush_backoff_q_completed()
        assert q.where(pod) == "backoff"
        clock.step(backoff)
        q.flush_backoff_q_completed()
        assert q.where(pod) == "active"


@pytest.mark.parametrize(("attempts", "initial", "maximum", "want"), [
    (0, 1, 10, 1), (1, 1, 10, 1), (2, 1, 10, 2), (3, 1, 10, 4), (4, 1, 10, 8), (5, 1, 10, 10), (50, 1, 10, 10),
    (3, 2, 20, 8), (5, 2, 20, 20),
])
def test_backoff_duration(attempts, initial, maximum, want):
    """calculateBackoffDuration: the initial back-off for up to one attempt, doubling after, capped."""
    assert backoff_duration(attempts, initial, maximum) == want


# -- the virtual-clock driver: flush ticks ------------------------------------------------------------------
def test_next_flush_at_names_the_backoff_tick(q, clock):
    """flushBackoffQCompleted runs every second from the queue's start: a back-off ending at +1.5 s is seen at
    the +2 s tick, not before."""
    pod = make_pod("p")
    assert q.next_flush_at() is None
    clock.step(0.5)
    q.add_unschedulable_if_not_present(pod, False)  # 1 s back-off from +0.5 s
    assert q.next_flush_at() == T0 + 2
    q.flush_due(T0 + 1.9)
    assert q.where(pod) == "backoff"
    q.flush_due(T0 + 2)
    assert q.where(pod) == "active"
    assert q.next_flush_at() is None


def test_next_flush_at_names_the_leftover_tick(q, clock):
    """flushUnschedulableQLeftover runs every 30 s: a pod that entered unschedulableQ at +5 s (or at 0 s, where
    the 60 s tick finds it not *longer* than 60 s) is moved at the 90 s tick."""
    early, late = make_pod("early"), make_pod("late")
    q.add_unschedulable_if_not_present(early, True)
    clock.step(5)
    q.add_unschedulable_if_not_present(late, True)
    assert q.next_flush_at() == T0 + 90
    q.flush_due(T0 + 60)
    assert q.depth()["unschedulable"] == 2
    q.flush_due(T0 + 89.9)
    assert q.depth()["unschedulable"] == 2
    q.flush_due(T0 + 90)
    assert q.depth() == {"active": 2, "backoff": 0, "unschedulable": 0}


def test_next_flush_at_is_never_a_tick_already_flushed(q):
    """A back-off over before the last flush ran (a pod re-queued after ``flush_due`` was called for a later
    time) is moved at the next tick, not at one already past."""
    q.flush_due(T0 + 3)
    q.add_unschedulable_if_not_present(make_pod("p"), False)  # the clock still says T0: back-off until T0 + 1
    assert q.next_flush_at() == T0 + 4


def test_a_driver_on_a_virtual_clock(clock):
    """A driver with no threads: flush what is due, pop, and when nothing pops jump to ``next_flush_at``. A pod
    failing while a cluster event arrives during each attempt is retried after 1, 2, 4, 8, 10, 10 s."""
    q = ThreeQueuePriorityQueue(clock)
    pod = make_pod("p")
    q.add(pod)
    attempts = []
    while len(attempts) < 7:
        q.flush_due(clock.now)
        popped = q.pop(0)
        if popped is None:
            clock.now = q.next_flush_at()
            continue
        attempts.append(clock.now - T0)
        q.move_all_to_active()  # e.g. a node changed while the pod was being decided
        q.add_unschedulable_if_not_present(popped, True)
    assert attempts == [0, 1, 3, 7, 15, 25, 35]


def test_run_flushes_on_the_real_clock():
    """``run`` (upstream ``Run``): a thread flushes podBackoffQ, so a blocked pop gets the pod once its back-off
    is over; ``close`` ends the thread."""
    q = ThreeQueuePriorityQueue(time.monotonic, initial_backoff=0.05, backoff_flush_period=0.01)
    thread = q.run()
    pod = make_pod("p")
    q.add_unschedulable_if_not_present(pod, False)
    assert q.pop(0) is None
    assert q.pop(5) is pod
    q.close()
    thread.join(5)
    assert not thread.is_alive()


def test_a_failure_that_is_not_unschedulable_backs_off(q):
    """The daemon's ``unschedulable=False`` (an error, not a FitError): to podBackoffQ even without a move request."""
    pod = make_pod("p")
    q.add(pod)
    q.add_unschedulable_if_not_present(q.pop(0), False)
    assert q.where(pod) == "backoff"
    assert q.scheduling_cycle == 1


def test_factory_makes_every_kind(clock):
    """new_scheduling_queue: the three forms by name, 1.9's choice by the PodPriority gate."""
    assert [type(new_scheduling_queue(kind, clock)) for kind in QUEUE_KINDS] == [FIFO, PriorityQueue,
                                                                                 ThreeQueuePriorityQueue]
    assert type(new_scheduling_queue(True)) is PriorityQueue
    assert type(new_scheduling_queue(False)) is FIFO
    assert new_scheduling_queue("three-queue", clock).clock is clock
    with pytest.raises(ValueError, match="three-queue"):
        new_scheduling_queue("heap")
