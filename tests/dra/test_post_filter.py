"""DynamicResources' PostFilter (upstream 1.36 ``dynamicresources.go`` ``PostFilter``): after no node fit, an
allocated claim whose allocation's node selector rejected a node Filter ran on, reserved for nobody (or for this
pod alone), is deallocated (``Decision.deallocate``); the PostFilter message says ``deallocation of ResourceClaim
completed``; offline the deallocation is applied at once and the pod is bound elsewhere on its next attempt."""

from __future__ import annotations

from typing import Any

import pytest

from policy_scheduler.cache.cluster import ClusterState
from policy_scheduler.core.fit_error import FitError
from policy_scheduler.dra.reserve import deallocated_claim_raw
from policy_scheduler.factory import create
from policy_scheduler.features import Rules
from policy_scheduler.model.dra import CLAIM_FINALIZER, ResourceClaim
from policy_scheduler.model.pod import Pod
from policy_scheduler.offline.driver import OfflineDriver
from policy_scheduler.predicates.dynamic_resources import (
    DEALLOCATED,
    STILL_NOT_SCHEDULABLE,
    dynamic_resources_of,
)

from .test_dynamic_resources import DRIVER, decide, dra_pod, gpu_class, gpus, node


def on_node(name: str, device: str = "gpu-0") -> dict[str, Any]:
    """An allocation of ``device`` on node ``name``, as the scheduler writes it (``matchFields`` on the name)."""
    return {"devices": {"results": [{"request": "gpu", "driver": DRIVER, "pool": name, "device": device}]},
            "nodeSelector": {"nodeSelectorTerms": [
                {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [name]}]}]}}


def claim(name: str, allocation: dict[str, Any] | None = None, reserved: tuple[str, ...] = ()) -> ResourceClaim:
    status: dict[str, Any] = {}
    if allocation is not None:
        status["allocation"] = allocation
    if reserved:
        status["reservedFor"] = [{"resource": "pods", "name": uid, "uid": uid} for uid in reserved]
    return ResourceClaim.from_dict({
        "metadata": {"name": name, "namespace": "ns", "uid": f"uid-{name}", "resourceVersion": "7",
                     "finalizers": [CLAIM_FINALIZER] if allocation is not None else []},
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu", "count": 1}}]}},
        "status": status})


@pytest.fixture
def cluster() -> ClusterState:
    """n1 cordoned with gpu-0, n2 with gpu-0 and gpu-1."""
    c = ClusterState()
    cordoned = node("n1")
    c.add_node(type(cordoned)({**cordoned.raw, "spec": {"unschedulable": True}}))
    c.add_node(node("n2"))
    c.add_device_class(gpu_class())
    c.add_resource_slice(gpus("n1", "gpu-0"))
    c.add_resource_slice(gpus("n2", "gpu-0", "gpu-1"))
    return c


def two_claim_pod(name: str = "p", **spec: Any) -> dict[str, Any]:
    raw = dra_pod(name, claim="a", **spec)
    raw["spec"]["resourceClaims"] = [{"name": "a", "resourceClaimName": "a"}, {"name": "b", "resourceClaimName": "b"}]
    raw["spec"]["containers"][0]["resources"]["claims"] = [{"name": "a"}, {"name": "b"}]
    return raw


@pytest.mark.parametrize("reserved", [(), ("uid-p",)], ids=["reserved-for-nobody", "reserved-for-the-pod"])
def test_a_claim_allocated_on_a_node_the_pod_cannot_use_is_deallocated(cluster, reserved):
    cluster.add_resource_claim(claim("c", on_node("n1"), reserved))
    decision = decide(cluster, dra_pod())
    assert decision.host is None and decision.fit_error is not None
    assert decision.fit_error.failed_predicates == {"n1": ["NodeUnschedulable"],
                                                    "n2": ["resourceclaim not available on the node"]}
    assert decision.deallocate is not None and decision.deallocate.key == ("ns", "c")


@pytest.mark.parametrize("reserved", [("uid-other",), ("uid-p", "uid-other")], ids=["another-pod", "two-pods"])
def test_a_claim_reserved_for_another_pod_stays_allocated(cluster, reserved):
    cluster.add_resource_claim(claim("c", on_node("n1"), reserved))
    decision = decide(cluster, dra_pod())
    assert decision.fit_error is not None and decision.deallocate is None


def test_only_nodes_where_every_other_predicate_passed_count(cluster):
    """Upstream runs DynamicResources' Filter on a node only once every earlier filter passed: n2 lacking cpu
    rejects the pod in NodeResourcesFit first, so no claim is unavailable anywhere and nothing is deallocated,
    although 1.9's FitError lists ``resourceclaim not available on the node`` on n2 too."""
    cluster.add_resource_claim(claim("c", on_node("n1")))
    decision = decide(cluster, dra_pod(cpu="5"))
    assert "resourceclaim not available on the node" in decision.fit_error.failed_predicates["n2"]
    assert decision.deallocate is None


def test_the_first_unavailable_claim_in_the_pods_order_that_is_free_is_picked(cluster):
    """Upstream picks one at random among them (a Go map): the first in the pod's order here (docs/deviations.md).
    ``a`` is reserved for another pod: ``b`` is picked."""
    cluster.add_resource_claim(claim("a", on_node("n1"), ("uid-other",)))
    cluster.add_resource_claim(claim("b", on_node("n1", "gpu-0")))
    assert decide(cluster, two_claim_pod()).deallocate.key == ("ns", "b")
    cluster.add_resource_claim(claim("a", on_node("n1")))
    assert decide(cluster, two_claim_pod()).deallocate.key == ("ns", "a")


def test_an_unallocated_claim_is_never_deallocated(cluster):
    cluster.add_resource_claim(claim("c"))
    cluster.add_node(type(cluster.node_infos["n2"].node)({**node("n2").raw, "spec": {"unschedulable": True}}))
    decision = decide(cluster, dra_pod())
    assert decision.fit_error is not None and decision.deallocate is None


def test_the_never_pods_post_filter_message_says_the_claim_was_deallocated(cluster):
    cluster.add_resource_claim(claim("c", on_node("n1")))
    scheduler = create(cluster=cluster)
    pod = Pod(dra_pod(priority=1000, preemptionPolicy="Never"))
    with pytest.raises(FitError) as e:
        scheduler.schedule(pod)
    scheduler.preempt(pod, e.value).annotate(e.value)
    assert str(e.value) == ("0/2 nodes are available: 1 NodeUnschedulable, 1 resourceclaim not available "
                            "on the node. deallocation of ResourceClaim completed, preemption: not eligible due to "
                            "preemptionPolicy=Never.")
    checker = dynamic_resources_of(scheduler.algorithms_for(pod).predicates)
    assert checker.post_filter_message(pod, e.value.failed_predicates) == DEALLOCATED
    assert checker.post_filter_message(pod) == STILL_NOT_SCHEDULABLE


def test_the_write_clears_allocation_reserved_for_and_devices_and_keeps_the_rest(cluster):
    allocated = claim("c", on_node("n1"), ("uid-p",))
    raw = dict(allocated.raw)
    raw["status"] = {**raw["status"], "devices": [{"driver": DRIVER, "pool": "n1", "device": "gpu-0"}]}
    written = deallocated_claim_raw(ResourceClaim.from_dict(raw))
    assert written["status"] == {}
    assert written["metadata"] == allocated.raw["metadata"] and written["spec"] == allocated.raw["spec"]


def drive(cluster: ClusterState, *raws: dict[str, Any], queue_kind: str = "fifo") -> dict[str, Any]:
    result = OfflineDriver(create(cluster=cluster), [Pod(r) for r in raws], queue_kind=queue_kind,
                           pod_priority=queue_kind != "fifo").run()
    assert result.stopped is None
    return {key: (d.host, d.error) for key, d in result.decisions.items()}


@pytest.mark.parametrize("queue_kind", ["fifo", "priority", "three-queue"])
def test_offline_the_claim_is_deallocated_and_the_pod_bound_where_a_device_is_free(cluster, queue_kind):
    cluster.add_resource_claim(claim("c", on_node("n1")))
    assert drive(cluster, dra_pod(), queue_kind=queue_kind) == {"uid-p": ("n2", None)}
    written = cluster.get_resource_claim("ns", "c")
    assert written.allocation["devices"]["results"] == [
        {"request": "gpu", "driver": DRIVER, "pool": "n2", "device": "gpu-0"}]
    assert [r.uid for r in written.reserved_for] == ["uid-p"] and CLAIM_FINALIZER in written.finalizers
    assert cluster.allocated_devices() == {(DRIVER, "n2", "gpu-0")}


def test_offline_a_claim_another_pod_holds_keeps_the_pod_pending(cluster):
    cluster.add_resource_claim(claim("c", on_node("n1"), ("uid-other",)))
    assert drive(cluster, dra_pod()) == {"uid-p": (None, "0/2 nodes are available: 1 NodeUnschedulable, "
                                                        "1 resourceclaim not available on the node.")}
    assert cluster.get_resource_claim("ns", "c").allocated


def test_under_1_9_rules_claims_are_ignored_and_nothing_is_deallocated(cluster):
    cluster.add_resource_claim(claim("c", on_node("n1")))
    decision = decide(cluster, dra_pod(), Rules.V1_9)
    assert decision.host == "n2" and decision.deallocate is None


@pytest.mark.parametrize("reasons, picked", [
    (["resourceclaim not available on the node"], True),
    (["resourceclaim not available on the node", "node(s) didn't match Pod's required features"], True),
    (["Insufficient cpu", "resourceclaim not available on the node"], False),
    (["MatchNodeSelector", "resourceclaim not available on the node"], False),
    (["cannot allocate all claims"], False),
], ids=["alone", "with-a-later-plugins-reason", "after-noderesourcesfit", "after-nodeaffinity", "other-dra-reason"])
def test_a_node_counts_where_upstreams_filter_would_have_reached_dynamic_resources(cluster, reasons, picked):
    """NodeDeclaredFeatures is the only filter after DynamicResources in 1.36's default profile."""
    cluster.add_resource_claim(claim("c", on_node("n1")))
    pod = Pod(dra_pod())
    checker = dynamic_resources_of(create(cluster=cluster).algorithms_for(pod).predicates)
    assert (checker.claim_to_deallocate(pod, {"n2": reasons}) is not None) is picked
    assert checker.claim_to_deallocate(pod, {"gone": ["resourceclaim not available on the node"]}) is None
