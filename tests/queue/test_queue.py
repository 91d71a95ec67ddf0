"""Scheduling queues and back-off (upstream ``scheduling_queue_test.go``, ``backoff_utils_test.go``)."""

from __future__ import annotations

import pytest

from policy_scheduler.model.pod import Pod
from policy_scheduler.queue import FIFO, PodBackoff, PriorityQueue

from .blocking import pop_while


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
    late = make_pod("late")
    assert pop_while(q, lambda: q.add(late)) is late
    assert pop_while(q, q.close) is None


def test_priority_queue_pops_highest_priority_then_arrival():
    q = PriorityQueue()
    for name, prio in (("low", 1), ("high", 100), ("mid-1", 50), ("mid-2", 50)):
        q.add(make_pod(name, prio))
    assert names(q, 4) == ["high", "mid-1", "mid-2", "low"]


def test_a_requeued_pod_keeps_its_first_arrival_among_equal_priorities():
    """A pod retried after a failure (here: moved back after its preemption's victims went) pops before the
    equal-priority pods that arrived after it, as in ``simulate`` (deviation #39); once it leaves the
    queue (bound, deleted) and comes back, it is a new arrival."""
    q = PriorityQueue()
    q.add(make_pod("first", 10))
    first = q.pop(0)
    for name in ("second", "third"):
        q.add(make_pod(name, 10))
    q.add_unschedulable_if_not_present(first, unschedulable=True)
    q.move_all_to_active()
    assert names(q, 3) == ["first", "second", "third"]
    q.add(make_pod("second", 10))
    q.delete(make_pod("first", 10))
    q.add(make_pod("first", 10))
    assert names(q, 2) == ["second", "first"]


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


def test_an_assigned_pod_is_a_move_request_even_when_it_moves_nothing():
    """1.9's ``AssignedPodAdded`` calls ``movePodsToActiveQueue`` with whatever matches (here nothing), which
    sets ``receivedMoveRequest``: the pod whose attempt was under way goes back to activeQ."""
    q = PriorityQueue()
    q.add(make_pod("a"))
    popped = q.pop(0)
    q.assigned_pod_added(make_pod("bound-elsewhere", labels={"app": "x"}))
    q.add_unschedulable_if_not_present(popped, unschedulable=True)
    assert q.depth() == {"active": 1, "unschedulable": 0}


def test_a_move_before_a_second_pop_still_counts_when_the_pod_is_requeued():
    """The daemon's lost preemptor: popped (it preempts; its API calls are in flight), its victims' deletions
    move the queue, its nomination's update re-adds it and it is popped again (in flight: that attempt is
    dropped); the preemption worker then re-queues it as unschedulable. The move since it first left the
    queue counts: it goes to activeQ, not to an unschedulableQ no event will ever empty again."""
    q = PriorityQueue()
    q.add(make_pod("p", 10))
    first = q.pop(0)
    q.move_all_to_active()  # the victims' delete events
    q.update(first, make_pod("p", 10, extra_status={"nominatedNodeName": "n1"}))
    assert q.pop(0).name == "p"  # popped again while its preemption is in flight; the attempt is dropped
    q.add_unschedulable_if_not_present(first, unschedulable=True)  # the worker's re-queue
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


# -- upstream 1.9 scheduling_queue_test.go, row for row -------------------------------------------------
def _upstream_pod(name: str, namespace: str, priority: int, nominated: str | None = None, unschedulable: bool = False,
                  spec: dict | None = None, labels: dict | None = None) -> Pod:
    meta = {"name": name, "namespace": namespace, "labels": labels or {}}
    if nominated:
        meta["annotations"] = {"NominatedNodeName": nominated, "annot2": "val2"}
    status = {"conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}]} if unschedulable else {}
    return Pod({"metadata": meta, "spec": {"priority": priority, **(spec or {})}, "status": status})


LOW, HIGH = 0, 1000
MEDIUM = (LOW + HIGH) // 2


def _upstream_pods() -> tuple[Pod, Pod, Pod]:
    """``highPriorityPod``, ``medPriorityPod``, ``unschedulablePod``."""
    return (_upstream_pod("hpp", "ns1", HIGH), _upstream_pod("mpp", "ns2", MEDIUM, nominated="node1"),
            _upstream_pod("up", "ns1", LOW, nominated="node1", unschedulable=True))


def _into_unschedulable(q: PriorityQueue, pod: Pod) -> None:
    """``q.unschedulableQ.Add(pod)``: through the public API (pop, then re-queue as unschedulable)."""
    q.add(pod)
    assert q.pop(0) is pod
    q.add_unschedulable_if_not_present(pod, unschedulable=True)


def test_priority_queue_add():
    """TestPriorityQueue_Add: pops by priority whatever the order of adds."""
    hpp, mpp, up = _upstream_pods()
    q = PriorityQueue()
    for p in (mpp, up, hpp):
        q.add(p)
    assert [q.pop(0) for _ in range(3)] == [hpp, mpp, up]


def test_priority_queue_pop():
    """TestPriorityQueue_Pop: a blocked Pop returns the pod added afterwards."""
    hpp, _, _ = _upstream_pods()
    q = PriorityQueue()
    assert pop_while(q, lambda: q.add(hpp)) is hpp


def test_priority_queue_update():
    """TestPriorityQueue_Update: an update of an unqueued pod adds it once; the highest pops first."""
    hpp, _, up = _upstream_pods()
    q = PriorityQueue()
    q.update(hpp, hpp)
    assert q.depth() == {"active": 1, "unschedulable": 0}
    q.update(hpp, hpp)
    assert q.depth()["active"] == 1
    q.update(up, up)
    assert q.depth() == {"active": 2, "unschedulable": 0}
    q.update(up, up)
    assert q.depth() == {"active": 2, "unschedulable": 0}
    assert q.pop(0) is hpp


def test_priority_queue_delete():
    """TestPriorityQueue_Delete: the deleted pod leaves activeQ, the other stays."""
    hpp, _, up = _upstream_pods()
    q = PriorityQueue()
    q.update(hpp, hpp)
    q.add(up)
    q.delete(hpp)
    assert q.depth()["active"] == 1
    assert q.pop(0) is up
    assert q.pop(0) is None


def test_priority_queue_move_all_to_active_queue():
    """TestPriorityQueue_MoveAllToActiveQueue: every unschedulable pod joins activeQ."""
    hpp, mpp, up = _upstream_pods()
    q = PriorityQueue()
    _into_unschedulable(q, up)
    _into_unschedulable(q, hpp)
    q.add(mpp)
    assert q.depth() == {"active": 1, "unschedulable": 2}
    q.move_all_to_active()
    assert q.depth() == {"active": 3, "unschedulable": 0}


def test_priority_queue_assigned_pod_added():
    """TestPriorityQueue_AssignedPodAdded: an assigned pod matching a waiting pod's required affinity
    moves that pod (only) to activeQ."""
    _, mpp, up = _upstream_pods()
    affinity = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{
        "labelSelector": {"matchExpressions": [{"key": "service", "operator": "In", "values": ["securityscan", "value2"]}]},
        "topologyKey": "region"}]}}
    affinity_pod = _upstream_pod("afp", "ns1", MEDIUM, nominated="node1", unschedulable=True, spec={"affinity": affinity})
    label_pod = _upstream_pod("lbp", "ns1", 0, spec={"nodeName": "machine1"}, labels={"service": "securityscan"})
    q = PriorityQueue()
    q.add(mpp)
    assert q.pop(0) is mpp
    _into_unschedulable(q, up)
    _into_unschedulable(q, affinity_pod)
    q.add(mpp)
    q.assigned_pod_added(label_pod)
    assert q.depth() == {"active": 2, "unschedulable": 1}
    assert {q.pop(0).name, q.pop(0).name} == {"afp", "mpp"}


def _annotated(name: str, namespace: str, annotations: dict[str, str]) -> Pod:
    return Pod({"metadata": {"name": name, "namespace": namespace, "annotations": dict(annotations)}, "spec": {}})


def _unschedulable_pods_map_rows():
    """``TestUnschedulablePodsMap``'s pods and rows: (adds, nominated after adds, updates, nominated after
    updates, deletes, queued and nominated after deletes)."""
    pods = [
        _annotated("p0", "ns1", {"NominatedNodeName": "node1", "annot2": "val2"}),
        _annotated("p1", "ns1", {"annot": "val"}),
        _annotated("p2", "ns2", {"NominatedNodeName": "node3", "annot2": "val2", "annot3": "val3"}),
        _annotated("p3", "ns4", {"NominatedNodeName": "node1"}),
    ]
    updated = {
        0: _annotated("p0", "ns1", {"NominatedNodeName": "node3", "annot2": "val2"}),
        1: _annotated("p1", "ns1", {"annot": "val", "NominatedNodeName": "node3"}),
        3: _annotated("p3", "ns4", {}),
    }
    return pods, updated, [
        ([0, 1, 2, 3], {"node1": ["ns1/p0", "ns4/p3"], "node3": ["ns2/p2"]},
         [0], {"node1": ["ns4/p3"], "node3": ["ns2/p2", "ns1/p0"]},
         [0, 1], {"ns2/p2", "ns4/p3"}, {"node1": ["ns4/p3"], "node3": ["ns2/p2"]}),
        ([0, 3], {"node1": ["ns1/p0", "ns4/p3"]},
         [3], {"node1": ["ns1/p0"]},
         [0, 3], set(), {}),
        ([1, 2], {"node3": ["ns2/p2"]},
         [1], {"node3": ["ns2/p2", "ns1/p1"]},
         [2, 3], {"ns1/p1"}, {"node3": ["ns1/p1"]}),
    ]


@pytest.mark.parametrize("row", range(3))
def test_unschedulable_pods_map(row):
    """TestUnschedulablePodsMap, row for row, through the queue's public API: the nomination index keeps each
    node's pods in nomination order, follows a nomination that moves or disappears on update, and forgets
    deleted pods (deleting a pod that is not queued is a no-op). Upstream's rows address the unschedulableQ;
    here the index covers the whole queue, so an update that moves a pod to activeQ keeps it indexed."""
    pods, updated, rows = _unschedulable_pods_map_rows()
    adds, after_add, updates, after_update, deletes, queued, after_delete = rows[row]
    q = PriorityQueue()
    for i in adds:
        _into_unschedulable(q, pods[i])
    assert q.nominations() == after_add
    for i in updates:
        q.update(pods[i], updated[i])
    assert q.nominations() == after_update
    for i in deletes:
        q.delete(pods[i])
    assert q.nominations() == after_delete
    assert {f"{p.namespace}/{p.name}" for p in _drain(q)} == queued


def _drain(q: PriorityQueue) -> list[Pod]:
    q.move_all_to_active()
    out = []
    while (p := q.pop(0)) is not None:
        out.append(p)
    return out


def test_nominated_pods_for_node_serves_the_engine():
    """WaitingPodsForNode: queued pods, active or unschedulable, by node; ``node_for`` reads the index."""
    q = PriorityQueue()
    a, b, c = (_annotated(n, "ns", {"NominatedNodeName": "n1"}) for n in ("a", "b", "c"))
    _into_unschedulable(q, a)
    q.add(b)
    q.add(_annotated("d", "ns", {}))
    assert [p.name for p in q.nominated_pods_for_node("n1")] == ["a", "b"]
    assert q.nominated_pods_for_node("n2") == []
    assert q.node_for(a) == "n1" and q.node_for(_annotated("d", "ns", {})) is None
    # 1.10's status field counts too (the annotation first).
    q.add(Pod({"metadata": {"name": "e", "namespace": "ns"}, "spec": {}, "status": {"nominatedNodeName": "n2"}}))
    assert [p.name for p in q.nominated_pods_for_node("n2")] == ["e"]
    q.update(c, c)
    assert [p.name for p in q.nominated_pods_for_node("n1")] == ["a", "b", "c"]


def test_a_nomination_lasts_while_the_pod_is_pending_here():
    """Popped (being scheduled, or waiting to be re-queued) a pod keeps its nomination; assumed
    (``clear_nomination``) or deleted it loses it."""
    q = PriorityQueue()
    a = _annotated("a", "ns", {"NominatedNodeName": "n1"})
    q.add(a)
    assert q.pop(0) is a
    assert [p.name for p in q.nominated_pods_for_node("n1")] == ["a"]
    assert q.clear_nomination(a) is True and q.nominated_pods_for_node("n1") == []
    assert q.clear_nomination(a) is False
    q.add_unschedulable_if_not_present(a, unschedulable=True)
    assert q.node_for(a) == "n1"
    q.delete(a)
    assert q.node_for(a) is None and q.nominations() == {}


def test_a_nomination_made_by_preemption_survives_older_pod_objects():
    """``nominate`` (the decision, before the API server has it): an object without a nomination (a copy older
    than the PATCH) keeps it, the object carrying it confirms it, and only then does an object without one
    (the annotation cleared) remove it."""
    q = PriorityQueue()
    plain = _annotated("p", "ns", {})
    q.add(plain)
    popped = q.pop(0)
    q.nominate(popped, "n1")
    assert q.node_for(plain) == "n1"
    q.add_unschedulable_if_not_present(plain, unschedulable=True)  # the informer's copy, from before the PATCH
    assert q.node_for(plain) == "n1"
    q.update(plain, _annotated("p", "ns", {"other": "change"}))
    assert q.node_for(plain) == "n1"
    confirmed = _annotated("p", "ns", {"NominatedNodeName": "n1"})
    q.update(plain, confirmed)
    assert [p is confirmed for p in q.nominated_pods_for_node("n1")] == [True]
    q.update(confirmed, _annotated("p", "ns", {"NominatedNodeName": ""}))  # cleared by a preemption
    assert q.node_for(plain) is None
    # A stale object naming an older node does not move a fresh reservation either.
    q.nominate(plain, "n2")
    q.update(plain, _annotated("p", "ns", {"NominatedNodeName": "n1"}))
    assert q.nominations() == {"n2": ["ns/p"]}


def test_a_move_request_after_the_pop_counts_even_if_another_pod_was_popped_since():
    """The loop re-queues asynchronously (after a preemption's API calls): what counts is a move request
    since *this* pod was popped, not since the last pop of any pod."""
    q = PriorityQueue()
    q.add(make_pod("a", 10))
    q.add(make_pod("b", 1))
    a = q.pop(0)
    q.move_all_to_active()  # a victim of a's preemption is deleted while a is out of the queue
    b = q.pop(0)
    q.add_unschedulable_if_not_present(b, unschedulable=True)
    q.add_unschedulable_if_not_present(a, unschedulable=True)
    assert q.depth() == {"active": 1, "unschedulable": 1}
    assert q.pop(0) is a


@pytest.mark.parametrize("kind", ["priority", "three-queue"])
def test_an_assigned_pod_in_a_namespace_the_selector_picks_moves_the_waiting_pod(kind):
    """Upstream's queue matches a waiting pod's required terms with the labels of the assigned pod's namespace
    (``getUnschedulablePodsWithMatchingAffinityTerm``): the queue asks ``namespace_labels``."""
    from policy_scheduler.queue import new_scheduling_queue

    affinity = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": "db"}}, "namespaceSelector": {"matchLabels": {"team": "b"}},
         "topologyKey": "zone"}]}}
    labels = {"team-b": {"team": "b"}, "team-c": {"team": "c"}}
    q = new_scheduling_queue(kind, lambda: 1000.0)
    q.namespace_labels = lambda name: labels.get(name, {})
    q.add(make_pod("needs-db", affinity=affinity))
    q.add_unschedulable_if_not_present(q.pop(0), unschedulable=True)

    def db(namespace: str) -> Pod:
        return Pod({"metadata": {"name": f"db-{namespace}", "namespace": namespace, "labels": {"app": "db"}},
                    "spec": {"containers": [{"name": "c"}], "nodeName": "n1"}})

    q.assigned_pod_added(db("team-c"))
    q.assigned_pod_added(db("no-such-namespace"))
    assert q.depth()["unschedulable"] == 1
    q.assigned_pod_added(db("team-b"))
    assert q.depth()["unschedulable"] == 0
