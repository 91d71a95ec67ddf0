"""Gated pods in the informer handler and the loop: never queued, reported once, queued when ungated
(no API server needed; the daemon's envtest tests cover the same through real servers)."""

from __future__ import annotations

import copy

import pytest

from policy_scheduler.cache.scheduler_cache import SchedulerCache
from policy_scheduler.features import Rules
from policy_scheduler.kube.daemon.eventhandlers import PodHandler
from policy_scheduler.queue import FIFO, PriorityQueue

OURS = "policy-scheduler"


def raw_pod(name: str, gates: list[str] | None = None, rv: str = "1", scheduler: str = OURS) -> dict:
    spec: dict = {"schedulerName": scheduler, "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}
    if gates is not None:
        spec["schedulingGates"] = [{"name": g} for g in gates]
    return {"metadata": {"name": name, "namespace": "ns", "uid": f"uid-{name}", "resourceVersion": rv},
            "spec": spec, "status": {"phase": "Pending"}}


def ungate(raw: dict, rv: str, keep: list[str] | None = None) -> dict:
    new = copy.deepcopy(raw)
    new["metadata"]["resourceVersion"] = rv
    if keep:
        new["spec"]["schedulingGates"] = [{"name": g} for g in keep]
    else:
        new["spec"].pop("schedulingGates", None)
    return new


@pytest.fixture(params=[FIFO, PriorityQueue], ids=["fifo", "priority"])
def queue(request):
    return request.param()


def handler(queue, rules: Rules = Rules.CLUSTER):
    reported: list[str] = []
    h = PodHandler(SchedulerCache(), queue, OURS, lambda m: None, rules, on_gated=lambda pod: reported.append(pod.ref))
    return h, reported


def test_a_gated_pod_is_not_queued_and_is_reported_once(queue):
    h, reported = handler(queue)
    gated = raw_pod("g", ["a", "b"])
    h.on_add(gated)
    h.on_add(raw_pod("plain"))
    h.on_update(gated, ungate(gated, "2", keep=["a", "b"]))  # e.g. a label change, or a re-list's resync
    h.on_update(gated, ungate(gated, "3", keep=["b"]))  # one gate removed, one left
    assert [queue.pop(0).name] == ["plain"] and queue.pop(0) is None
    assert reported == ["ns/g"]


def test_removing_the_last_gate_queues_the_pod(queue):
    h, reported = handler(queue)
    gated = raw_pod("g", ["a"])
    h.on_add(gated)
    assert queue.pop(0) is None
    h.on_update(gated, ungate(gated, "2"))
    assert queue.pop(0).name == "g"
    assert reported == ["ns/g"]


def test_a_deleted_gated_pod_is_forgotten_and_a_new_one_reported_again(queue):
    h, reported = handler(queue)
    h.on_add(raw_pod("g", ["a"]))
    h.on_delete(raw_pod("g", ["a"]))
    again = raw_pod("g", ["a"])
    again["metadata"]["uid"] = "uid-g-2"
    h.on_add(again)
    assert reported == ["ns/g", "ns/g"] and queue.pop(0) is None


def test_other_schedulers_gated_pods_are_none_of_our_business(queue):
    h, reported = handler(queue)
    h.on_add(raw_pod("g", ["a"], scheduler="default-scheduler"))
    assert reported == [] and queue.pop(0) is None


def test_rules_1_9_queue_a_gated_pod(queue):
    h, reported = handler(queue, Rules.V1_9)
    h.on_add(raw_pod("g", ["a"]))
    assert queue.pop(0).name == "g" and reported == []
