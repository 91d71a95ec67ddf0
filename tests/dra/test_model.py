"""The DRA objects as the model parses them: names qualified by the driver's domain, the pod's claims and their
statuses, a claim's allocation and reservations, and the API server's messages for what the scheduler reads."""

from __future__ import annotations

from fractions import Fraction

import pytest

from policy_scheduler.errors import ObjectError
from policy_scheduler.model.dra import DeviceAttribute, ResourceClaim, ResourceClaimTemplate, ResourceSlice
from policy_scheduler.model.pod import Pod, PodResourceClaim


def slice_raw(**spec):
    base = {"driver": "gpu.example.com", "nodeName": "n1", "pool": {"name": "p", "generation": 2,
                                                                    "resourceSliceCount": 1}}
    return {"metadata": {"name": "s", "resourceVersion": "42"}, "spec": {**base, **spec}}


def test_a_devices_attributes_and_capacity_are_qualified_by_the_drivers_domain():
    s = ResourceSlice.from_dict(slice_raw(devices=[{"name": "gpu-0", "attributes": {
        "model": {"string": "a100"}, "numa": {"int": 1}, "other.example.com/x": {"bool": True},
        "driverVersion": {"version": "1.2.3"}}, "capacity": {"memory": {"value": "40Gi"}}}]))
    (d,) = s.devices
    assert dict(d.attributes) == {"gpu.example.com/model": DeviceAttribute("string", "a100"),
                                  "gpu.example.com/numa": DeviceAttribute("int", 1),
                                  "other.example.com/x": DeviceAttribute("bool", True),
                                  "gpu.example.com/driverVersion": DeviceAttribute("version", "1.2.3")}
    assert dict(d.capacity) == {"gpu.example.com/memory": Fraction(40 * 2**30)}
    assert (s.pool, s.generation, s.resource_slice_count, s.resource_version, d.driver) == (
        "p", 2, 1, "42", "gpu.example.com")


@pytest.mark.parametrize("spec, message", [
    ({"devices": [{"name": "d", "attributes": {"v": {"version": "1.02.0"}}}]},
     'spec.devices[0].attributes[v].version: Invalid value: "1.02.0": must be a string compatible with semver.org '
     "spec 2.0.0"),
    ({"nodeName": None}, "spec: Required value: exactly one of `nodeName`, `nodeSelector`, `allNodes`, "
                         "`perDeviceNodeSelection` is required"),
    ({"devices": [{"name": "d", "nodeName": "n1"}]},
     "spec.devices[0]: Invalid value: null: `nodeName`, `nodeSelector` and `allNodes` can only be set if "
     "`perDeviceNodeSelection` is set to true in the ResourceSlice spec"),
    ({"devices": [{"name": "d", "taints": [{"key": "k", "effect": "Sometimes"}]}]},
     'spec.devices[0].taints[0].effect: Unsupported value: "Sometimes": supported values: "NoExecute", '
     '"NoSchedule", "None"'),
    ({"driver": ""}, "spec.driver: Required value"),
    ({"pool": {"name": "p", "generation": -1, "resourceSliceCount": 1}},
     "spec.pool.generation: Invalid value: -1: must be greater than or equal to zero"),
])
def test_bad_slices_get_the_api_servers_message(spec, message):
    with pytest.raises(ObjectError) as e:
        ResourceSlice.from_dict(slice_raw(**spec))
    assert str(e.value) == f"ResourceSlice s: {message}"


def test_a_claims_allocation_and_reservations():
    claim = ResourceClaim.from_dict({
        "metadata": {"name": "c", "namespace": "ns", "uid": "u", "resourceVersion": "9",
                     "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": "pod-uid",
                                          "controller": True}]},
        "spec": {"devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": "gpu"}}]}},
        "status": {"allocation": {"devices": {"results": [
            {"request": "r", "driver": "d", "pool": "p", "device": "x"},
            {"request": "r", "driver": "d", "pool": "p", "device": "y", "adminAccess": True}]}},
            "reservedFor": [{"resource": "pods", "name": "p", "uid": "pod-uid"}]}})
    assert claim.key == ("ns", "c") and claim.resource_version == "9" and claim.allocated
    assert [(r.device_id, r.admin_access) for r in claim.results] == [(("d", "p", "x"), False), (("d", "p", "y"), True)]
    assert claim.reserved_for_uid("pod-uid") and claim.controller_uid == "pod-uid"
    (request,) = claim.spec.requests
    assert (request.exactly.allocation_mode, request.exactly.count) == ("ExactCount", 1)  # the API's defaults


@pytest.mark.parametrize("devices, message", [
    ({"requests": [{"name": "r", "exactly": {"deviceClassName": "gpu", "allocationMode": "All", "count": 2}}]},
     "spec.devices.requests[0].exactly.count: Invalid value: 2: must not be specified when allocationMode is 'All'"),
    ({"requests": [{"name": "r", "exactly": {"deviceClassName": "gpu", "allocationMode": "Some"}}]},
     'spec.devices.requests[0].exactly.allocationMode: Unsupported value: "Some": supported values: "All", '
     '"ExactCount"'),
    ({"requests": [{"name": "r", "exactly": {"deviceClassName": ""}}]},
     "spec.devices.requests[0].exactly.deviceClassName: Required value"),
    ({"requests": [{"name": "r", "exactly": {"deviceClassName": "gpu", "selectors": [{}]}}]},
     "spec.devices.requests[0].exactly.selectors[0].cel: Required value"),
    ({"requests": [{"name": "r", "exactly": {"deviceClassName": "gpu"}}], "constraints": [{}]},
     "spec.devices.constraints[0].matchAttribute: Required value"),
    ({"requests": [{"name": "r", "exactly": {"deviceClassName": "gpu"}}],
      "constraints": [{"requests": ["q"], "matchAttribute": "d/x"}]},
     'spec.devices.constraints[0].requests[0]: Invalid value: "q": must be the name of a request in the claim or '
     "the name of a request and a subrequest separated by '/'"),
])
def test_bad_claims_get_the_api_servers_message(devices, message):
    with pytest.raises(ObjectError) as e:
        ResourceClaim.from_dict({"metadata": {"name": "c", "namespace": "ns"}, "spec": {"devices": devices}})
    assert str(e.value) == f"ResourceClaim ns/c: {message}"
    with pytest.raises(ObjectError) as e:
        ResourceClaimTemplate.from_dict({"metadata": {"name": "t", "namespace": "ns"},
                                         "spec": {"spec": {"devices": devices}}})
    assert str(e.value) == f"ResourceClaimTemplate ns/t: {message.replace('spec.', 'spec.spec.', 1)}"


def test_a_pods_claims_and_their_statuses_are_parsed_once():
    pod = Pod({"metadata": {"name": "p", "namespace": "ns"}, "spec": {"resourceClaims": [
        {"name": "a", "resourceClaimName": "c"}, {"name": "b", "resourceClaimTemplateName": "t"}]},
        "status": {"resourceClaimStatuses": [{"name": "b", "resourceClaimName": "p-b-x1y2z"}]}})
    assert pod.resource_claims == (PodResourceClaim("a", "c", None), PodResourceClaim("b", None, "t"))
    assert pod.resource_claim_statuses == {"b": "p-b-x1y2z"}
    updated = pod.with_status({"resourceClaimStatuses": [{"name": "b"}]})
    assert updated.resource_claim_statuses == {"b": None}
    with pytest.raises(ObjectError, match="spec.resourceClaims\\[0\\]: Required value: must specify one of"):
        Pod({"metadata": {"name": "p", "namespace": "ns"}, "spec": {"resourceClaims": [{"name": "a"}]}})
