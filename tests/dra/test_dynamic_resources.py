"""DynamicResources in the scheduler: upstream's reasons and messages (PreFilter's on every node, Filter's per
node), the FitError a DRA pod gets, Reserve (``Decision.claims``, assumed and reverted), preemption (DRA's
reasons are unresolvable), refusals by feature, and ``--rules 1.9`` ignoring claims."""

from __future__ import annotations

from typing import Any

import pytest

from policy_scheduler.cache.cluster import ClusterState
from policy_scheduler.core.fit_error import FitError
from policy_scheduler.dra.reserve import (
    assume_pod_claims,
    commit_pod_claims,
    release_pod_claims,
    revert_pod_claims,
)
from policy_scheduler.errors import RefusedPodError, SchedulingError
from policy_scheduler.factory import create, create_from_keys
from policy_scheduler.features import FeatureGates, Rules
from policy_scheduler.model.dra import DeviceClass, ResourceClaim, ResourceSlice
from policy_scheduler.model.node import Node
from policy_scheduler.model.pod import Pod
from policy_scheduler.offline.driver import ClusterAssumer
from policy_scheduler.predicates.dynamic_resources import NAME, DynamicResourcesChecker
from policy_scheduler.predicates.reasons import PreFilterReason, UnresolvableReason
from policy_scheduler.scheduling.cycle import NO_NOMINATIONS, SchedulingCycle

DRIVER = "gpu.example.com"


def node(name: str, cpu: str = "4", **labels: str) -> Node:
    return Node({"metadata": {"name": name, "labels": labels},
                 "status": {"allocatable": {"cpu": cpu, "memory": "8Gi", "pods": "10"},
                            "conditions": [{"type": "Ready", "status": "True"}]}})


def gpu_class(name: str = "gpu", **spec: Any) -> DeviceClass:
    return DeviceClass.from_dict({"metadata": {"name": name}, "spec": {
        "selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}], **spec}})


def gpus(node_name: str, *names: str, **device_fields: Any) -> ResourceSlice:
    return ResourceSlice.from_dict({"metadata": {"name": f"{node_name}-gpus"}, "spec": {
        "driver": DRIVER, "nodeName": node_name, "pool": {"name": node_name, "generation": 1, "resourceSliceCount": 1},
        "devices": [{"name": n, "attributes": {"model": {"string": "a100"}}, **device_fields} for n in names]}})


def gpu_claim(name: str, count: int = 1, namespace: str = "ns", owner: str | None = None, **status: Any) -> ResourceClaim:
    meta: dict[str, Any] = {"name": name, "namespace": namespace, "uid": f"uid-{name}", "resourceVersion": "7"}
    if owner:
        meta["ownerReferences"] = [{"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": owner, "controller": True}]
    return ResourceClaim.from_dict({"metadata": meta, "spec": {"devices": {"requests": [
        {"name": "gpu", "exactly": {"deviceClassName": "gpu", "count": count}}]}}, "status": status})


def dra_pod(name: str = "p", claim: str | None = "c", template: str | None = None, statuses: list | None = None,
            cpu: str = "1", **spec: Any) -> dict[str, Any]:
    entry: dict[str, Any] = {"name": "gpu"}
    if template is not None:
        entry["resourceClaimTemplateName"] = template
    else:
        entry["resourceClaimName"] = claim
    raw: dict[str, Any] = {"metadata": {"name": name, "namespace": "ns", "uid": f"uid-{name}"},
                           "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu},
                                                                               "claims": [{"name": "gpu"}]}}],
                                    "resourceClaims": [entry], **spec}}
    if statuses is not None:
        raw["status"] = {"resourceClaimStatuses": statuses}
    return raw


@pytest.fixture
def cluster() -> ClusterState:
    c = ClusterState()
    for n in ("n1", "n2"):
        c.add_node(node(n))
    c.add_device_class(gpu_class())
    c.add_resource_slice(gpus("n2", "gpu-0", "gpu-1"))
    return c


def decide(cluster: ClusterState, raw: dict[str, Any], rules: Rules = Rules.CLUSTER):
    scheduler = create(cluster=cluster)
    cycle = SchedulingCycle(algorithm=lambda: scheduler, cache=ClusterAssumer(cluster), nominations=NO_NOMINATIONS)
    return cycle.decide(Pod(raw, rules))


# -- PreFilter ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("case, message", [
    ("template without a claim", 'pod "ns/p": ResourceClaim not created yet'),
    ("missing claim", 'could not find ResourceClaim "ns/missing"'),
    ("claim being deleted", 'resourceclaim "c" is being deleted'),
    ("claim of another pod", "ResourceClaim ns/p-gpu was not created for Pod ns/p (Pod is not owner)"),
    ("missing class", "request gpu: device class gpu does not exist"),
    ("missing class of a subrequest", "request gpu/big: device class big-gpu does not exist"),
])
def test_a_pre_filter_rejection_is_upstreams_message_for_every_node(cluster, case, message):
    raw = dra_pod()
    if case == "template without a claim":
        raw = dra_pod(template="t")
    elif case == "missing claim":
        raw = dra_pod(claim="missing")
    elif case == "claim being deleted":
        deleting = gpu_claim("c")
        deleting.raw["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
        cluster.add_resource_claim(ResourceClaim.from_dict(deleting.raw))
    elif case == "claim of another pod":
        cluster.add_resource_claim(gpu_claim("p-gpu", owner="uid-someone-else"))
        raw = dra_pod(template="t", statuses=[{"name": "gpu", "resourceClaimName": "p-gpu"}])
    elif case == "missing class":
        cluster.remove_device_class("gpu")
        cluster.add_resource_claim(gpu_claim("c"))
    else:
        cluster.add_resource_claim(ResourceClaim.from_dict({"metadata": {"name": "c", "namespace": "ns"}, "spec": {
            "devices": {"requests": [{"name": "gpu", "firstAvailable": [
                {"name": "big", "deviceClassName": "big-gpu"}, {"name": "small", "deviceClassName": "gpu"}]}]}}}))
    decision = decide(cluster, raw)
    assert decision.host is None and decision.unschedulable
    assert decision.error == f"0/2 nodes are available: {message}."
    assert all(r == [message] and isinstance(r[0], PreFilterReason) for r in decision.failed_predicates.values())


def test_a_template_claim_owned_by_the_pod_is_its_claim(cluster):
    cluster.add_resource_claim(gpu_claim("p-gpu", owner="uid-p"))
    decision = decide(cluster, dra_pod(template="t", statuses=[{"name": "gpu", "resourceClaimName": "p-gpu"}]))
    assert decision.host == "n2"
    (reservation,) = decision.claims.reservations
    assert reservation.claim.name == "p-gpu" and reservation.allocation["devices"]["results"][0]["device"] == "gpu-0"


def test_a_status_without_a_claim_name_needs_no_claim(cluster):
    """``resourceclaim.Name`` gives nil: no claim is needed for that entry (the controller decided so)."""
    decision = decide(cluster, dra_pod(template="t", statuses=[{"name": "gpu"}]))
    assert decision.host in ("n1", "n2") and decision.claims is None


# -- Filter ------------------------------------------------------------------------------------------------------
def test_cannot_allocate_all_claims_on_any_node(cluster):
    cluster.add_resource_claim(gpu_claim("c", count=3))
    decision = decide(cluster, dra_pod())
    assert decision.error == "0/2 nodes are available: 2 cannot allocate all claims."
    assert all(isinstance(r[0], UnresolvableReason) for r in decision.failed_predicates.values())


def test_the_devices_are_allocated_where_they_are_and_taken_for_later_pods(cluster):
    for name in ("c1", "c2", "c3"):
        cluster.add_resource_claim(gpu_claim(name))
    first = decide(cluster, dra_pod("a", claim="c1"))
    assert first.host == "n2"
    (reservation,) = first.claims.reservations
    assert reservation.claim.resource_version == "7"
    assert reservation.allocation == {
        "devices": {"results": [{"request": "gpu", "driver": DRIVER, "pool": "n2", "device": "gpu-0"}]},
        "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
            {"key": "metadata.name", "operator": "In", "values": ["n2"]}]}]}}
    # Assumed: the claim reads allocated and reserved for the pod, its device taken.
    assumed = cluster.get_resource_claim("ns", "c1")
    assert assumed.allocated and assumed.reserved_for_uid("uid-a") and "resource.kubernetes.io/delete-protection" in assumed.finalizers
    assert cluster.allocated_devices() == {(DRIVER, "n2", "gpu-0")}
    second = decide(cluster, dra_pod("b", claim="c2"))
    assert second.claims.reservations[0].allocation["devices"]["results"][0]["device"] == "gpu-1"
    third = decide(cluster, dra_pod("c", claim="c3"))
    assert third.error == "0/2 nodes are available: 2 cannot allocate all claims."
    revert_pod_claims(cluster, second.claims)
    assert cluster.allocated_devices() == {(DRIVER, "n2", "gpu-0")}
    assert not cluster.get_resource_claim("ns", "c2").allocated


def test_an_assumed_claim_is_in_the_process_of_being_allocated_for_a_second_pod(cluster):
    cluster.add_resource_claim(gpu_claim("shared"))
    first = decide(cluster, dra_pod("a", claim="shared"))
    assert first.host == "n2"
    second = decide(cluster, dra_pod("b", claim="shared"))
    assert second.error == "0/2 nodes are available: resource claim ns/shared is in the process of being allocated."
    # Once written (the API object carries the allocation), the claim is shared on the allocation's node.
    commit_pod_claims(cluster, first.claims)
    assert not cluster.assumed_resource_claims
    third = decide(cluster, dra_pod("b", claim="shared"))
    assert third.host == "n2" and third.claims.reservations[0].allocation is None


def test_an_allocated_claim_is_not_available_on_other_nodes(cluster):
    selector = {"nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n2"]}]}]}
    allocation = {"devices": {"results": [{"request": "gpu", "driver": DRIVER, "pool": "n2", "device": "gpu-0"}]},
                  "nodeSelector": selector}
    cluster.add_resource_claim(gpu_claim("c", allocation=allocation))
    cluster.add_node(node("n3"))
    decision = decide(cluster, dra_pod(cpu="1"))
    assert decision.host == "n2"
    scheduler = create(cluster=cluster)
    _, failed = scheduler.find_nodes_that_fit(Pod(dra_pod()), cluster.node_list())
    assert failed == {"n1": ["resourceclaim not available on the node"],
                      "n3": ["resourceclaim not available on the node"]}


def test_a_cel_runtime_error_fails_the_attempt_with_upstreams_wrapping(cluster):
    cluster.add_device_class(DeviceClass.from_dict({"metadata": {"name": "gpu"}, "spec": {"selectors": [
        {"cel": {"expression": 'device.attributes["gpu.example.com"].memory == "x"'}}]}}))
    cluster.add_resource_claim(gpu_claim("c"))
    decision = decide(cluster, dra_pod())
    assert decision.host is None and not decision.unschedulable
    assert decision.error == "class gpu: selector #0: CEL runtime error: no such key: memory"


def test_binding_conditions_and_extended_resources_are_refused_by_name_shared_devices_are_shared(cluster):
    cluster.add_resource_slice(gpus("n2", "gpu-0", bindingConditions=["attached"]))
    cluster.add_resource_claim(gpu_claim("c"))
    refused = decide(cluster, dra_pod())
    assert refused.unschedulable and refused.error == (
        "device gpu.example.com/n2/gpu-0 has binding conditions (DRADeviceBindingConditions): allocating it is not "
        "supported by this scheduler")
    cluster.add_resource_slice(gpus("n2", "gpu-0", allowMultipleAllocations=True,
                                    capacity={"memory": {"value": "16Gi", "requestPolicy": {
                                        "default": "4Gi", "validRange": {"min": "1Gi", "step": "1Gi"}}}}))
    shared = [decide(cluster, dra_pod(name, claim=name, cpu="100m")) for name in ("s1", "s2", "s3", "s4", "s5")
              if cluster.add_resource_claim(gpu_claim(name)) is None]
    results = [d.claims.reservations[0].allocation["devices"]["results"][0] for d in shared[:4]]
    assert [r["consumedCapacity"] for r in results] == [{"memory": str(4 * 2**30)}] * 4  # the policy's default
    assert len({r["shareID"] for r in results}) == 4 and cluster.allocated_devices() == set()
    assert shared[4].error == "0/2 nodes are available: 2 cannot allocate all claims."  # 16Gi consumed
    cluster.add_device_class(gpu_class("gpu", extendedResourceName="example.com/gpu"))
    raw = {"metadata": {"name": "x", "namespace": "ns"}, "spec": {"containers": [
        {"name": "c", "resources": {"requests": {"example.com/gpu": "1"}, "limits": {"example.com/gpu": "1"}}}]}}
    refused = decide(cluster, raw)
    assert refused.unschedulable and refused.error == (
        "extended resources backed by DRA (DRAExtendedResource) are not supported by this scheduler: the pod "
        "requests example.com/gpu")
    with pytest.raises(RefusedPodError):
        create(cluster=cluster).schedule(Pod(raw))


@pytest.mark.parametrize("labelled", [True, False])
def test_admin_access_is_allocated_whatever_the_namespace_label(cluster, labelled):
    """The scheduler does not read the namespace's admin-access label (1.36's DynamicResources neither): the API
    server checks it, at the claim's creation and at PreBind's status write (tests/kube/test_dra.py)."""
    claim = gpu_claim("c")
    claim.raw["spec"]["devices"]["requests"][0]["exactly"]["adminAccess"] = True
    cluster.add_resource_claim(ResourceClaim.from_dict(claim.raw))
    if labelled:
        cluster.put_namespace("ns", {"resource.kubernetes.io/admin-access": "true"})
    allowed = decide(cluster, dra_pod())
    assert allowed.host == "n2"
    assert allowed.claims.reservations[0].allocation["devices"]["results"][0]["adminAccess"] is True
    commit_pod_claims(cluster, allowed.claims)
    assert cluster.allocated_devices() == set()  # admin access takes no device


def test_the_cluster_rules_apply_whatever_the_policy_names_and_1_9_ignores_claims(cluster):
    cluster.add_resource_claim(gpu_claim("c", count=3))
    policy = create_from_keys({"PodFitsResources"}, {"LeastRequestedPriority"}, cluster=cluster)
    with pytest.raises(FitError, match="cannot allocate all claims"):
        policy.schedule(Pod(dra_pod()))
    assert NAME not in policy.predicates and any(NAME in a.predicates for a in [policy.algorithms_for(Pod(dra_pod()))])
    assert policy.schedule(Pod(dra_pod(), Rules.V1_9)) in ("n1", "n2")
    legacy = create_from_keys({"PodFitsResources"}, {"LeastRequestedPriority"}, cluster=cluster,
                              feature_gates=FeatureGates(rules=Rules.V1_9))
    assert legacy.schedule(Pod(dra_pod(), Rules.V1_9)) in ("n1", "n2") and not legacy.pod_scoped
    assert policy.algorithms_for(Pod({"metadata": {"name": "x", "namespace": "ns"}, "spec": {}})) is policy._base


# -- preemption and PostFilter -----------------------------------------------------------------------------------
def test_preemption_does_not_help_a_pod_whose_claims_cannot_be_allocated(cluster):
    cluster.add_resource_claim(gpu_claim("c", count=3))
    for n in ("n1", "n2"):
        low = {"metadata": {"name": f"low-{n}", "namespace": "ns", "uid": f"low-{n}"},
               "spec": {"nodeName": n, "priority": 0, "containers": [{"name": "c", "resources": {"requests": {"cpu": "4"}}}]}}
        cluster.add_pod(Pod(low))
    scheduler = create(cluster=cluster)
    pod = Pod(dra_pod(priority=1000))
    with pytest.raises(FitError) as e:
        scheduler.schedule(pod)
    result = scheduler.preempt(pod, e.value)
    assert result.node is None and result.message == "preemption would not help on any node"


@pytest.mark.parametrize("claim_count, message", [
    (3, "0/2 nodes are available: 2 cannot allocate all claims. still not schedulable, "
        "preemption: not eligible due to preemptionPolicy=Never."),
    (None, '0/2 nodes are available: could not find ResourceClaim "ns/c". no new claims to deallocate, '
           "preemption: not eligible due to preemptionPolicy=Never."),
])
def test_a_never_pod_with_claims_gets_dynamic_resources_post_filter_message(cluster, claim_count, message):
    """1.36's PostFilter: ``still not schedulable`` once PreFilter found the claims, else ``no new claims to
    deallocate``; then preemption's."""
    if claim_count is not None:
        cluster.add_resource_claim(gpu_claim("c", count=claim_count))
    scheduler = create(cluster=cluster)
    pod = Pod(dra_pod(priority=1000, preemptionPolicy="Never"))
    with pytest.raises(FitError) as e:
        scheduler.schedule(pod)
    scheduler.preempt(pod, e.value).annotate(e.value)
    assert str(e.value) == message


def test_a_deleted_pods_claims_are_released(cluster):
    """Offline, a preemption's victim: its own claim (from a template) is deleted, a shared one loses the pod and,
    reserved for nobody, is deallocated: the devices are free again."""
    cluster.add_resource_claim(gpu_claim("a-gpu", owner="uid-a"))
    cluster.add_resource_claim(gpu_claim("shared"))
    a = decide(cluster, dra_pod("a", template="t", statuses=[{"name": "gpu", "resourceClaimName": "a-gpu"}]))
    commit_pod_claims(cluster, a.claims)
    b = decide(cluster, dra_pod("b", claim="shared"))
    commit_pod_claims(cluster, b.claims)
    assert len(cluster.allocated_devices()) == 2
    release_pod_claims(cluster, a.assumed)
    release_pod_claims(cluster, b.assumed)
    assert cluster.get_resource_claim("ns", "a-gpu") is None
    shared = cluster.get_resource_claim("ns", "shared")
    assert not shared.allocated and not shared.reserved_for and not shared.finalizers
    assert cluster.allocated_devices() == set()


def test_assume_and_revert_leave_the_api_objects_alone(cluster):
    cluster.add_resource_claim(gpu_claim("c"))
    checker = DynamicResourcesChecker(cluster)
    pod = Pod(dra_pod())
    claims = checker.reserve(pod, cluster.node_infos["n2"])
    assume_pod_claims(cluster, claims)
    assert cluster.api_resource_claim("ns", "c").allocation is None
    assert cluster.get_resource_claim("ns", "c").allocated
    revert_pod_claims(cluster, claims)
    assert not cluster.get_resource_claim("ns", "c").allocated
    with pytest.raises(SchedulingError, match="claim allocation not found for node: cannot allocate all claims"):
        checker.reserve(pod, cluster.node_infos["n1"])


def test_a_refusal_comes_only_when_upstream_would_pick_the_device(cluster):
    """Upstream sorts pools whose devices have binding conditions after the others: a free device elsewhere is
    picked first, and nothing is refused."""
    cluster.add_resource_slice(ResourceSlice.from_dict({"metadata": {"name": "n2-bound"}, "spec": {
        "driver": DRIVER, "nodeName": "n2", "pool": {"name": "a-bound", "generation": 1, "resourceSliceCount": 1},
        "devices": [{"name": "b-0", "bindingConditions": ["attached"], "bindingFailureConditions": ["failed"]}]}}))
    cluster.add_resource_claim(gpu_claim("c"))
    decision = decide(cluster, dra_pod())
    assert decision.host == "n2"
    assert decision.claims.reservations[0].allocation["devices"]["results"][0]["pool"] == "n2"
    revert_pod_claims(cluster, decision.claims)
    cluster.add_resource_claim(gpu_claim("c3", count=3))  # now the bound device is needed too
    refused = decide(cluster, dra_pod("q", claim="c3"))
    assert refused.unschedulable and "has binding conditions (DRADeviceBindingConditions)" in refused.error


def test_the_api_object_clears_an_assumed_claim_once_it_carries_an_allocation(cluster):
    cluster.add_resource_claim(gpu_claim("c"))
    decision = decide(cluster, dra_pod())
    assert ("ns", "c") in cluster.assumed_resource_claims
    cluster.add_resource_claim(gpu_claim("c"))  # an unrelated update, not yet the scheduler's write
    assert ("ns", "c") in cluster.assumed_resource_claims and cluster.get_resource_claim("ns", "c").allocated
    written = decision.claims.reservations[0].allocation
    cluster.add_resource_claim(gpu_claim("c", allocation=written,
                                         reservedFor=[{"resource": "pods", "name": "p", "uid": "uid-p"}]))
    assert not cluster.assumed_resource_claims
    assert cluster.allocated_devices() == {(DRIVER, "n2", "gpu-0")}
    cluster.remove_resource_claim("ns", "c")
    assert cluster.allocated_devices() == set()


def test_shares_of_a_device_are_kept_apart_from_dedicated_devices(cluster):
    """Upstream's tracker: a result with a shareID is a share (its consumed capacity summed per device), not a
    device held for one claim; admin-access results count as neither."""
    allocation = {"devices": {"results": [
        {"request": "gpu", "driver": DRIVER, "pool": "n2", "device": "gpu-0", "shareID": "s-1",
         "consumedCapacity": {"memory": "10Gi"}},
        {"request": "gpu", "driver": DRIVER, "pool": "n2", "device": "gpu-0", "shareID": "s-2",
         "consumedCapacity": {"memory": "6Gi"}},
        {"request": "gpu", "driver": DRIVER, "pool": "n2", "device": "gpu-1"},
        {"request": "gpu", "driver": DRIVER, "pool": "n3", "device": "gpu-9", "adminAccess": True}]}}
    cluster.add_resource_claim(gpu_claim("c", allocation=allocation))
    state = cluster.allocated_state()
    assert state.dedicated == {(DRIVER, "n2", "gpu-1")} == cluster.allocated_devices()
    assert state.shared == {(DRIVER, "n2", "gpu-0")}
    assert state.consumed == {(DRIVER, "n2", "gpu-0"): {f"{DRIVER}/memory": 16 * 2**30}}


def test_a_relabelled_node_is_decided_again(cluster):
    """A network-attached slice selects nodes by label: the verdict kept for a node holds only for that Node
    object (a relabelled node is a new one), not for the DRA objects alone."""
    cluster.add_resource_slice(ResourceSlice.from_dict({"metadata": {"name": "net"}, "spec": {
        "driver": DRIVER, "nodeSelector": {"nodeSelectorTerms": [{"matchExpressions": [
            {"key": "rack", "operator": "In", "values": ["r1"]}]}]},
        "pool": {"name": "net", "generation": 1, "resourceSliceCount": 1}, "devices": [{"name": "nic-0"}]}}))
    cluster.remove_resource_slice("n2-gpus")
    cluster.add_resource_claim(gpu_claim("c"))
    scheduler = create(cluster=cluster)
    pod = Pod(dra_pod())
    with pytest.raises(FitError, match="2 cannot allocate all claims"):
        scheduler.schedule(pod)
    cluster.add_node(node("n1", rack="r1"))
    assert scheduler.schedule(pod) == "n1"
    claims = DynamicResourcesChecker(cluster).reserve(pod, cluster.node_infos["n1"])
    assert claims.reservations[0].allocation["nodeSelector"] == {"nodeSelectorTerms": [{"matchExpressions": [
        {"key": "rack", "operator": "In", "values": ["r1"]}]}]}
