"""The DRA informer handlers and upstream's DynamicResources PreEnqueue in the pod handler (no API server; the side
by side tests in ``tests/kube/test_dra.py`` cover the same through a real 1.36 server): objects parsed once into the
cluster state, a bad one logged and skipped, waiting pods moved by the events upstream registers and not by the
others, and a pod whose claims cannot be found held out of the queue until they can."""

from __future__ import annotations

import copy
import logging
from typing import Any

import pytest

from policy_scheduler.cache.scheduler_cache import SchedulerCache
from policy_scheduler.features import Rules
from policy_scheduler.kube.daemon.eventhandlers import (
    DraHandler,
    PodHandler,
    claim_change_moves_pods,
    claims_pre_enqueue,
)
from policy_scheduler.kube.daemon.scheduler import SchedulingLoop
from policy_scheduler.kube.metrics import SchedulerMetrics
from policy_scheduler.queue import PriorityQueue

from .test_daemon_ha import _Engine
from .test_unknown_outcomes import _Recorder, _Requeuer

OURS = "policy-scheduler"
NS = "ns"
DRIVER = "gpu.example.com"


def raw_class(name: str = "gpu", rv: str = "1") -> dict[str, Any]:
    return {"metadata": {"name": name, "resourceVersion": rv}, "spec": {
        "selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]}}


def raw_slice(name: str = "n1-gpu", rv: str = "1", devices: int = 1) -> dict[str, Any]:
    return {"metadata": {"name": name, "resourceVersion": rv}, "spec": {
        "driver": DRIVER, "nodeName": "n1", "pool": {"name": "n1", "generation": 1, "resourceSliceCount": 1},
        "devices": [{"name": f"gpu-{i}"} for i in range(devices)]}}


def raw_claim(name: str = "c", rv: str = "1", owner: str | None = None, **status: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": NS, "uid": f"uid-{name}", "resourceVersion": rv}
    if owner:
        meta["ownerReferences"] = [{"apiVersion": "v1", "kind": "Pod", "name": owner, "uid": f"uid-{owner}",
                                    "controller": True}]
    return {"metadata": meta, "spec": {"devices": {"requests": [
        {"name": "gpu", "exactly": {"deviceClassName": "gpu", "allocationMode": "ExactCount", "count": 1}}]}},
        "status": status}


ALLOCATION = {"devices": {"results": [{"request": "gpu", "driver": DRIVER, "pool": "n1", "device": "gpu-0"}]}}


def raw_pod(name: str = "p", claim: str | None = None, template: str | None = None, generated: str | None = None,
            rv: str = "1") -> dict[str, Any]:
    entry: dict[str, Any] = {"name": "gpu"}
    if claim:
        entry["resourceClaimName"] = claim
    if template:
        entry["resourceClaimTemplateName"] = template
    status: dict[str, Any] = {"phase": "Pending"}
    if generated:
        status["resourceClaimStatuses"] = [{"name": "gpu", "resourceClaimName": generated}]
    return {"metadata": {"name": name, "namespace": NS, "uid": f"uid-{name}", "resourceVersion": rv},
            "spec": {"schedulerName": OURS, "resourceClaims": [entry], "containers": [
                {"name": "c", "resources": {"requests": {"cpu": "1"}, "claims": [{"name": "gpu"}]}}]},
            "status": status}


@pytest.fixture
def cache() -> SchedulerCache:
    return SchedulerCache()


@pytest.fixture
def queue() -> PriorityQueue:
    return PriorityQueue()


def pods_handler(cache: SchedulerCache, queue: PriorityQueue) -> PodHandler:
    return PodHandler(cache, queue, OURS, lambda m: None, Rules.CLUSTER, pre_enqueue=claims_pre_enqueue(cache))


def park(queue: PriorityQueue, handler: PodHandler, raw: dict[str, Any]) -> None:
    """The pod tried and found unschedulable: in the unschedulable queue, not poppable."""
    handler.on_add(raw)
    popped = queue.pop(0)
    assert popped is not None and popped.name == raw["metadata"]["name"]
    queue.add_unschedulable_if_not_present(popped, True)
    assert queue.pop(0) is None


def test_objects_go_to_the_cluster_state_and_a_bad_one_is_skipped(cache, queue, caplog):
    cluster = cache.cluster
    DraHandler(cache, queue, "DeviceClass").on_add(raw_class())
    slices = DraHandler(cache, queue, "ResourceSlice")
    slices.on_add(raw_slice())
    DraHandler(cache, queue, "ResourceClaim").on_add(raw_claim())
    assert set(cluster.device_classes) == {"gpu"} and set(cluster.resource_slices) == {"n1-gpu"}
    assert cluster.api_resource_claim(NS, "c") is not None
    bad = raw_slice("bad")
    del bad["spec"]["driver"]
    with caplog.at_level(logging.WARNING):
        slices.on_add(bad)
    assert "bad" not in cluster.resource_slices
    assert any("ignoring ResourceSlice the API server sent" in r.getMessage() for r in caplog.records)
    slices.on_delete(raw_slice())
    assert cluster.resource_slices == {}


@pytest.mark.parametrize("kind, raw", [("DeviceClass", raw_class()), ("ResourceSlice", raw_slice())])
def test_a_class_or_slice_added_or_updated_moves_waiting_pods(cache, queue, kind, raw):
    handler = pods_handler(cache, queue)
    DraHandler(cache, queue, "ResourceClaim").on_add(raw_claim())
    park(queue, handler, raw_pod(claim="c"))
    DraHandler(cache, queue, kind).on_add(raw)
    assert queue.pop(0) is not None
    park(queue, handler, raw_pod(claim="c", rv="2"))
    updated = copy.deepcopy(raw)
    updated["metadata"]["resourceVersion"] = "2"
    DraHandler(cache, queue, kind).on_update(raw, updated)
    assert queue.pop(0) is not None


def test_claim_events_move_pods_only_when_the_claim_is_new_deallocated_or_its_status_changed():
    old = raw_claim(rv="1")
    finalized = copy.deepcopy(old)
    finalized["metadata"]["finalizers"] = ["resource.kubernetes.io/delete-protection"]
    allocated = raw_claim(rv="3", allocation=ALLOCATION)
    assert claim_change_moves_pods(None, old)
    assert not claim_change_moves_pods(old, finalized)
    assert claim_change_moves_pods(finalized, allocated)
    assert claim_change_moves_pods(allocated, raw_claim(rv="4"))


def test_a_claim_update_of_metadata_alone_leaves_waiting_pods(cache, queue):
    handler = pods_handler(cache, queue)
    claims = DraHandler(cache, queue, "ResourceClaim")
    claims.on_add(raw_claim())
    park(queue, handler, raw_pod(claim="c"))
    finalized = raw_claim(rv="2")
    finalized["metadata"]["finalizers"] = ["resource.kubernetes.io/delete-protection"]
    claims.on_update(raw_claim(), finalized)
    assert queue.pop(0) is None
    deallocated_from = raw_claim(rv="3", allocation=ALLOCATION)
    claims.on_update(finalized, deallocated_from)
    assert queue.pop(0) is not None


def test_an_event_older_than_the_reply_to_our_write_is_ignored(cache, queue):
    claims = DraHandler(cache, queue, "ResourceClaim")
    claims.on_add(raw_claim(rv="10", allocation=ALLOCATION))
    claims.on_update(raw_claim(rv="10", allocation=ALLOCATION), raw_claim(rv="9"))
    claim = cache.cluster.api_resource_claim(NS, "c")
    assert claim is not None and claim.allocated and claim.resource_version == "10"


def test_a_pod_whose_template_claim_is_not_created_is_held_without_an_attempt(cache, queue):
    handler = pods_handler(cache, queue)
    claims = DraHandler(cache, queue, "ResourceClaim", on_claim=handler.claims_changed)
    waiting = raw_pod(template="t")
    handler.on_add(waiting)
    assert queue.pop(0) is None  # PreEnqueue: 'pod "ns/p": ResourceClaim not created yet'
    named = raw_pod(template="t", generated="p-gpu-x", rv="2")
    handler.on_update(waiting, named)
    assert queue.pop(0) is None  # named in the status, not in the cache yet
    claims.on_add(raw_claim("p-gpu-x", owner="someone-else"))
    assert queue.pop(0) is None  # not the pod's claim
    claims.on_update(raw_claim("p-gpu-x", owner="someone-else"), raw_claim("p-gpu-x", rv="2", owner="p"))
    popped = queue.pop(0)
    assert popped is not None and popped.name == "p" and queue.pop(0) is None


def test_a_pod_whose_claim_is_being_deleted_is_held_until_it_is_gone_and_back(cache, queue):
    handler = pods_handler(cache, queue)
    claims = DraHandler(cache, queue, "ResourceClaim", on_claim=handler.claims_changed)
    deleting = raw_claim()
    deleting["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    claims.on_add(deleting)
    handler.on_add(raw_pod(claim="c"))
    assert queue.pop(0) is None
    claims.on_delete(deleting)
    assert queue.pop(0) is None  # 'resourceclaim.resource.k8s.io "c" not found'
    claims.on_add(raw_claim(rv="5"))
    assert queue.pop(0) is not None


def test_a_held_pod_deleted_is_forgotten(cache, queue):
    handler = pods_handler(cache, queue)
    claims = DraHandler(cache, queue, "ResourceClaim", on_claim=handler.claims_changed)
    handler.on_add(raw_pod(claim="c"))
    handler.on_delete(raw_pod(claim="c"))
    claims.on_add(raw_claim())
    assert queue.pop(0) is None


def test_generated_claims_recorded_in_the_status_move_the_pod(cache, queue):
    """UpdatePodGeneratedResourceClaim: a pod tried (and found unschedulable) moves when its status names a claim."""
    handler = pods_handler(cache, queue)
    claims = DraHandler(cache, queue, "ResourceClaim", on_claim=handler.claims_changed)
    claims.on_add(raw_claim("p-gpu-x", owner="p"))
    claims.on_add(raw_claim("p-gpu-y", owner="p"))
    first = raw_pod(template="t", generated="p-gpu-x")
    park(queue, handler, first)
    handler.on_update(first, raw_pod(template="t", generated="p-gpu-y", rv="2"))
    assert queue.pop(0) is not None


def test_under_1_9_rules_nothing_is_held(cache, queue):
    handler = PodHandler(cache, queue, OURS, lambda m: None, Rules.V1_9)
    handler.on_add(raw_pod(template="t"))
    assert queue.pop(0) is not None


def test_a_popped_pod_whose_claim_went_meanwhile_is_held_without_an_attempt(cache, queue):
    """Upstream runs PreEnqueue whenever a pod is about to become active: a pod queued while its claim existed,
    popped after the claim was deleted, is held back (no attempt, no event) until the claim is back."""
    handler = pods_handler(cache, queue)
    claims = DraHandler(cache, queue, "ResourceClaim", on_claim=handler.claims_changed)
    recorder = _Recorder()
    loop = SchedulingLoop(cache=cache, queue=queue, algorithm=_Engine, binder=None,  # type: ignore[arg-type]
                          recorder=recorder, conditions=recorder, requeuer=_Requeuer(),  # type: ignore[arg-type]
                          metrics=SchedulerMetrics(), bind_workers=1)
    loop.hold_back = handler.hold_back
    claims.on_add(raw_claim())
    handler.on_add(raw_pod(claim="c"))
    cache.cluster.remove_resource_claim(NS, "c")  # deleted; the watch event not handled yet
    loop.schedule_one(timeout=0)
    assert recorder.events == [] and recorder.conditions == [] and queue.pop(0) is None
    claims.on_add(raw_claim(rv="7"))
    popped = queue.pop(0)
    assert popped is not None and popped.name == "p"
    loop.shutdown()


def test_an_assumed_pods_update_is_not_queued_and_a_popped_assumed_pod_is_skipped(cache, queue):
    """1.36's updatePodInSchedulingQueue and skipPodSchedule: the nomination written before PreBind (an update of
    the assumed pod) queues nothing, and a pod queued again before it was assumed is not tried twice."""
    handler = pods_handler(cache, queue)
    claims = DraHandler(cache, queue, "ResourceClaim", on_claim=handler.claims_changed)
    claims.on_add(raw_claim())
    raw = raw_pod(claim="c")
    handler.on_add(raw)
    popped = queue.pop(0)
    assert popped is not None
    cache.assume_pod(popped.with_node_name("n1"))
    nominated = copy.deepcopy(raw)
    nominated["metadata"]["resourceVersion"] = "2"
    nominated["status"]["nominatedNodeName"] = "n1"
    handler.on_update(raw, nominated)
    assert queue.pop(0) is None
    recorder = _Recorder()
    loop = SchedulingLoop(cache=cache, queue=queue, algorithm=_Engine, binder=None,  # type: ignore[arg-type]
                          recorder=recorder, conditions=recorder, requeuer=_Requeuer(),  # type: ignore[arg-type]
                          metrics=SchedulerMetrics(), bind_workers=1)
    loop.skip_assumed = True
    queue.add(handler.pod(nominated))  # queued again during its cycle
    loop.schedule_one(timeout=0)
    assert recorder.events == [] and recorder.conditions == [] and queue.pop(0) is None
    loop.shutdown()
