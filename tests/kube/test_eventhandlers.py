"""What informer events do to the cache and the queue (no API server needed)."""

from __future__ import annotations

import copy

from policy_scheduler.cache.scheduler_cache import SchedulerCache
from policy_scheduler.features import Rules
from policy_scheduler.kube.daemon.eventhandlers import ListerHandler, NodeHandler, PodHandler
from policy_scheduler.model.pod import Pod
from policy_scheduler.queue import FIFO, PriorityQueue

OURS = "policy-scheduler"


def raw_pod(name: str, node: str = "", scheduler: str = OURS, uid: str | None = None, rv: str = "1") -> dict:
    return {"metadata": {"name": name, "namespace": "ns", "uid": uid or f"uid-{name}", "resourceVersion": rv,
                         "labels": {"app": "x"}},
            "spec": {"schedulerName": scheduler, "nodeName": node,
                     "containers": [{"name": "c", "resources": {"requests": {"cpu": "500m"}}}]},
            "status": {"phase": "Pending"}}


def setup():
    cache, queue = SchedulerCache(), FIFO()
    corrupted: list[str] = []
    return cache, queue, PodHandler(cache, queue, OURS, corrupted.append), corrupted


def cpu(cache: SchedulerCache, node: str) -> int:
    info = cache.cluster.node_infos.get(node)
    return info.requested.milli_cpu if info else 0


def test_only_our_unassigned_pods_are_queued_but_every_bound_pod_counts():
    cache, queue, handler, _ = setup()
    handler.on_add(raw_pod("mine"))
    handler.on_add(raw_pod("theirs", scheduler="default-scheduler"))
    handler.on_add(raw_pod("theirs-bound", node="n1", scheduler="default-scheduler"))
    assert [queue.pop(0).name] == ["mine"] and queue.pop(0) is None
    assert cpu(cache, "n1") == 500


def test_binding_moves_a_pod_from_the_queue_to_the_cache_and_confirms_the_assumption():
    cache, queue, handler, _ = setup()
    pending = raw_pod("p")
    handler.on_add(pending)
    pod = queue.pop(0)
    cache.assume_pod(pod.with_node_name("n1"))
    handler.on_update(pending, {**pending, "metadata": {**pending["metadata"], "labels": {"app": "y"}}})
    assert len(queue) == 1  # an update while the bind is in flight queues it again...
    handler.on_update(pending, raw_pod("p", node="n1", rv="2"))  # ...and the watch's binding takes it out
    assert queue.pop(0) is None
    assert not cache.is_assumed(pod.key) and cpu(cache, "n1") == 500
    handler.on_delete(raw_pod("p", node="n1", rv="3"))
    assert cpu(cache, "n1") == 0


def test_skip_pod_update_of_an_assumed_pod():
    """``skipPodUpdate``: only resourceVersion, spec.nodeName and annotations changed: ignored."""
    cache, queue, handler, _ = setup()
    raw = raw_pod("p")
    handler.on_add(raw)
    cache.assume_pod(queue.pop(0).with_node_name("n1"))
    annotated = copy.deepcopy(raw)
    annotated["metadata"].update(resourceVersion="2", annotations={"note": "x"})
    handler.on_update(raw, annotated)
    assert queue.pop(0) is None
    relabelled = copy.deepcopy(annotated)
    relabelled["metadata"]["labels"] = {"app": "y"}
    handler.on_update(annotated, relabelled)
    assert queue.pop(0).labels == {"app": "y"}


def test_a_pod_recreated_under_the_same_name_is_a_delete_and_an_add():
    """A re-list after a 410 can merge a delete and a re-create into one update: the UIDs tell."""
    cache, queue, handler, _ = setup()
    old = raw_pod("db-0", node="node-a", scheduler="other", uid="one")
    handler.on_add(old)
    new = raw_pod("db-0", node="node-b", scheduler="other", uid="two", rv="9")
    handler.on_update(old, new)
    assert cpu(cache, "node-a") == 0 and cpu(cache, "node-b") == 500


def test_a_bound_pod_moving_node_reports_a_corrupted_cache():
    cache, queue, handler, corrupted = setup()
    handler.on_add(raw_pod("p", node="n1"))
    handler.on_update(raw_pod("p", node="n1"), raw_pod("p", node="n2", rv="2"))
    assert corrupted and "Schedulercache is corrupted" in corrupted[0]


def test_malformed_pods_are_logged_and_ignored(caplog):
    cache, queue, handler, _ = setup()
    bad = raw_pod("bad")
    bad["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "lots"
    handler.on_add(bad)
    assert queue.pop(0) is None
    assert "ignoring pod the API server sent" in caplog.text


def test_node_heartbeats_do_not_move_unschedulable_pods():
    cache, queue = SchedulerCache(), FIFO()
    handler = NodeHandler(cache, queue)
    raw = {"metadata": {"name": "n1", "resourceVersion": "1"},
           "status": {"allocatable": {"cpu": "1"}, "conditions": [{"type": "Ready", "status": "True",
                                                                  "lastHeartbeatTime": "t0"}]}}
    handler.on_add(raw)
    beat = copy.deepcopy(raw)
    beat["status"]["conditions"][0]["lastHeartbeatTime"] = "t1"
    generation = cache.cluster.node_infos["n1"].generation
    handler.on_update(raw, beat)
    assert handler.heartbeats_skipped == 1 and cache.cluster.node_infos["n1"].generation == generation


def raw_csi_node(name: str, count: int, rv: str = "1") -> dict:
    return {"metadata": {"name": name, "resourceVersion": rv},
            "spec": {"drivers": [{"name": "ebs.csi.aws.com", "nodeID": f"i-{name}", "allocatable": {"count": count}}]}}


def test_csinodes_reach_the_cluster_state_and_move_unschedulable_pods():
    """A new CSINode or a raised attach limit may make room: the queue moves on add and update (upstream's
    CSINode Add|Update cluster events); a deleted one leaves the cluster state."""
    cache, queue = SchedulerCache(), PriorityQueue()
    handler = ListerHandler(cache, queue, "CSINode")

    def fails() -> None:  # popped, no node fits: it waits in unschedulableQ for an event that moves it
        queue.add_unschedulable_if_not_present(queue.pop(0), True)
        assert queue.depth() == {"active": 0, "unschedulable": 1}

    queue.add(Pod(raw_pod("waiting")))
    fails()
    handler.on_add(raw_csi_node("n1", 25))
    assert cache.cluster.get_csi_node("n1").drivers[0].allocatable_count == 25
    assert queue.depth() == {"active": 1, "unschedulable": 0}
    fails()
    handler.on_update(raw_csi_node("n1", 25), raw_csi_node("n1", 39, rv="2"))
    assert cache.cluster.get_csi_node("n1").drivers[0].allocatable_count == 39
    assert queue.depth() == {"active": 1, "unschedulable": 0}
    handler.on_delete(raw_csi_node("n1", 39, rv="2"))
    assert cache.cluster.get_csi_node("n1") is None and cache.cluster.csi_nodes == {}


def test_malformed_csinodes_are_logged_and_ignored(caplog):
    cache, queue = SchedulerCache(), FIFO()
    handler = ListerHandler(cache, queue, "CSINode")
    bad = raw_csi_node("n1", 25)
    bad["spec"]["drivers"][0]["allocatable"]["count"] = "many"
    handler.on_add(bad)
    assert cache.cluster.csi_nodes == {}
    assert "ignoring CSINode the API server sent" in caplog.text


def raw_namespace(name: str, labels: dict[str, str] | None = None, rv: str = "1", **meta: object) -> dict:
    return {"metadata": {"name": name, "resourceVersion": rv, "labels": labels or {}, **meta},
            "status": {"phase": "Active"}}


def test_namespaces_reach_the_cluster_state_and_a_relabelled_one_moves_unschedulable_pods():
    """What pod (anti-)affinity namespaceSelectors select: a namespace added, relabelled or deleted re-evaluates
    the pods waiting on it; an update that keeps its labels (status, annotations, a resync) moves nothing."""
    cache, queue = SchedulerCache(), PriorityQueue()
    handler = ListerHandler(cache, queue, "Namespace")

    def fails() -> None:
        queue.add_unschedulable_if_not_present(queue.pop(0), True)
        assert queue.depth() == {"active": 0, "unschedulable": 1}

    queue.add(Pod(raw_pod("waiting")))
    fails()
    handler.on_add(raw_namespace("team-b", {"team": "b"}))
    assert cache.cluster.namespace_labels("team-b") == {"team": "b"}
    assert queue.depth() == {"active": 1, "unschedulable": 0}
    fails()
    handler.on_update(raw_namespace("team-b", {"team": "b"}),
                      raw_namespace("team-b", {"team": "b"}, rv="2", annotations={"note": "x"}))
    assert queue.depth() == {"active": 0, "unschedulable": 1}, "same labels: nothing to re-evaluate"
    handler.on_update(raw_namespace("team-b", {"team": "b"}, rv="2"), raw_namespace("team-b", {"team": "c"}, rv="3"))
    assert cache.cluster.namespace_labels("team-b") == {"team": "c"}
    assert queue.depth() == {"active": 1, "unschedulable": 0}
    fails()
    handler.on_delete(raw_namespace("team-b", {"team": "c"}, rv="3"))
    assert cache.cluster.namespaces == {} and cache.cluster.namespace_labels("team-b") == {}
    assert queue.depth() == {"active": 1, "unschedulable": 0}


def test_malformed_namespaces_are_logged_and_ignored(caplog):
    cache, queue = SchedulerCache(), FIFO()
    handler = ListerHandler(cache, queue, "Namespace")
    handler.on_add({"metadata": {"name": "n", "labels": {"team": 7}}})
    assert cache.cluster.namespaces == {}
    assert "ignoring Namespace the API server sent" in caplog.text


def test_an_assigned_pod_moves_the_pods_whose_namespace_selector_selects_its_namespace():
    """The queue asks the namespace lister for the assigned pod's namespace labels (upstream's
    ``getUnschedulablePodsWithMatchingAffinityTerm``)."""
    cache = SchedulerCache()
    queue = PriorityQueue()
    queue.namespace_labels = cache.cluster.namespace_labels
    handler = PodHandler(cache, queue, OURS, [].append)
    namespaces = ListerHandler(cache, queue, "Namespace")
    namespaces.on_add(raw_namespace("db-b", {"team": "b"}))
    namespaces.on_add(raw_namespace("db-c", {"team": "c"}))
    waiting = raw_pod("web")
    waiting["spec"]["affinity"] = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{
        "labelSelector": {"matchLabels": {"app": "db"}}, "namespaceSelector": {"matchLabels": {"team": "b"}},
        "topologyKey": "kubernetes.io/hostname"}]}}
    queue.add(Pod(waiting))
    queue.add_unschedulable_if_not_present(queue.pop(0), True)

    def db(name: str, namespace: str) -> dict:
        raw = raw_pod(name, node="n1")
        raw["metadata"].update(namespace=namespace, labels={"app": "db"})
        return raw

    handler.on_add(db("db-0", "db-c"))
    assert queue.depth() == {"active": 0, "unschedulable": 1}, "team c is not selected"
    handler.on_add(db("db-1", "db-b"))
    assert queue.depth() == {"active": 1, "unschedulable": 0}


def resized_raw(name: str, spec_cpu: str, actuated: str, allocated: str, rv: str,
                conditions: tuple[dict, ...] = ()) -> dict:
    """A bound pod as the kubelet reports it during an in-place resize (container ``c``)."""
    raw = raw_pod(name, node="n1", scheduler="other", rv=rv)
    raw["spec"]["containers"][0]["resources"]["requests"]["cpu"] = spec_cpu
    raw["status"] = {"phase": "Running", "conditions": list(conditions), "containerStatuses": [
        {"name": "c", "resources": {"requests": {"cpu": actuated}}, "allocatedResources": {"cpu": allocated}}]}
    return raw


def unschedulable_queue(rules: Rules = Rules.CLUSTER) -> tuple[SchedulerCache, PriorityQueue, PodHandler]:
    cache, queue = SchedulerCache(), PriorityQueue()
    handler = PodHandler(cache, queue, OURS, [].append, rules=rules)
    queue.add(Pod(raw_pod("waiting"), rules))
    queue.add_unschedulable_if_not_present(queue.pop(0), True)
    return cache, queue, handler


def test_a_bound_pod_scaled_down_by_its_status_moves_the_unschedulable_pods(caplog):
    """Upstream's ``UpdatePodScaleDown`` (NodeResourcesFit requeues on it): the kubelet reports the shrink done; a
    status heartbeat that changes nothing moves nothing (1.9's ``AssignedPodUpdated``: affinity matches only)."""
    cache, queue, handler = unschedulable_queue()
    running = resized_raw("big", "500m", "1500m", "500m", "1")
    handler.on_add(running)
    assert cpu(cache, "n1") == 1500
    beat = resized_raw("big", "500m", "1500m", "500m", "2")
    beat["status"]["podIP"] = "10.0.0.9"
    handler.on_update(running, beat)
    assert queue.depth() == {"active": 0, "unschedulable": 1}
    done = resized_raw("big", "500m", "500m", "500m", "3")
    with caplog.at_level("INFO", logger="policy_scheduler.kube.daemon.eventhandlers"):
        handler.on_update(beat, done)
    assert cpu(cache, "n1") == 500
    assert queue.depth() == {"active": 1, "unschedulable": 0}
    assert "requests scaled down pod=ns/big node=n1 cpu=1500m->500m memory=0->0" in caplog.text


def test_an_infeasible_resize_moves_the_unschedulable_pods():
    cache, queue, handler = unschedulable_queue()
    undecided = resized_raw("big", "2500m", "1", "1", "1")
    handler.on_add(undecided)
    assert cpu(cache, "n1") == 2500
    infeasible = resized_raw("big", "2500m", "1", "1", "2",
                             ({"type": "PodResizePending", "status": "True", "reason": "Infeasible"},))
    handler.on_update(undecided, infeasible)
    assert cpu(cache, "n1") == 1000
    assert queue.depth() == {"active": 1, "unschedulable": 0}


def test_a_bound_pod_growing_moves_nothing():
    cache, queue, handler = unschedulable_queue()
    small = resized_raw("big", "500m", "500m", "500m", "1")
    handler.on_add(small)
    handler.on_update(small, resized_raw("big", "1", "500m", "500m", "2"))
    assert cpu(cache, "n1") == 1000
    assert queue.depth() == {"active": 0, "unschedulable": 1}


def test_under_1_9_rules_a_status_change_moves_nothing():
    cache, queue, handler = unschedulable_queue(Rules.V1_9)
    running = resized_raw("big", "500m", "1500m", "500m", "1")
    handler.on_add(running)
    assert cpu(cache, "n1") == 500
    handler.on_update(running, resized_raw("big", "500m", "500m", "500m", "2"))
    assert queue.depth() == {"active": 0, "unschedulable": 1}
