"""Upstream's allocator test table (``structured/internal/allocatortesting/allocator_testing.go`` of 1.36, run
there against the incubating allocator), transcribed row by row for what this engine implements: the same
objects, the same expected AllocationResults (request, driver, pool, device, admin access, tolerations,
configs, node selector), the same errors. Rows upstream runs with a feature off are left out (1.36's defaults
have them on); rows whose objects the API server would refuse (an empty class name, an unknown allocation mode,
an empty selector or constraint) are in ``test_model.py`` as validation errors instead."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import pytest

from policy_scheduler.dra import allocator as dra_allocator
from policy_scheduler.dra.allocator import (
    AllocationError,
    Allocator,
    InvalidPoolsError,
)
from tests.dra.builders import (
    ALL_NODES,
    BOOL_ATTRIBUTE,
    CLAIM0,
    CLAIM1,
    CLASS_A,
    CLASS_B,
    COUNTER_SET1,
    DEVICE0,
    DEVICE1,
    DEVICE2,
    DEVICE3,
    DRIVER_A,
    DRIVER_B,
    INT_ATTRIBUTE,
    NODE1,
    NODE2,
    NON_EXISTENT_ATTRIBUTE,
    PER_DEVICE,
    POOL1,
    POOL2,
    POOL3,
    POOL4,
    REGION1,
    REGION2,
    REQ0,
    REQ1,
    REQ2,
    SLICE1,
    SLICE2,
    STRING_ATTRIBUTE,
    SUB0,
    SUB1,
    TAINT_NO_EXECUTE,
    TAINT_NO_SCHEDULE,
    TAINT_NONE,
    TOLERATION_NO_EXECUTE,
    TOLERATION_NO_SCHEDULE,
    VERSION_ATTRIBUTE,
    allocation,
    attrs,
    claim,
    consumes,
    counter_set,
    device,
    device_class,
    local_node_selector,
    many_devices,
    node,
    node_label_selector,
    one_device,
    opaque,
    prioritized,
    request,
    resource_slice,
    result,
    sub_request,
)

R0S0, R0S1 = f"{REQ0}/{SUB0}", f"{REQ0}/{SUB1}"
MEM_1GI = f'device.capacity["{DRIVER_A}"].memory.compareTo(quantity("1Gi")) >= 0'
MEM_2GI = f'device.capacity["{DRIVER_A}"].memory.compareTo(quantity("2Gi")) >= 0'
MEM_4GI = f'device.capacity["{DRIVER_A}"].memory.compareTo(quantity("4Gi")) >= 0'
MEM_8GI = f'device.capacity["{DRIVER_A}"].memory.compareTo(quantity("8Gi")) >= 0'
R1S0, R1S1 = f"{REQ1}/{SUB0}", f"{REQ1}/{SUB1}"
TYPE_X = f'device.attributes["{DRIVER_A}"].type == "X"'
TYPE_Y = f'device.attributes["{DRIVER_A}"].type == "Y"'
MEM_6GI = f'device.capacity["{DRIVER_A}"].memory.compareTo(quantity("6Gi")) >= 0'
LOCAL1 = local_node_selector(NODE1)


def counted(name: str, memory: str, **extra: Any) -> dict[str, Any]:
    """``device(name, fromCounters, nil).withDeviceCounterConsumption(counterSet1: memory)``: the device's
    capacity is what it consumes."""
    return device(name, {"memory": memory}, None, consumesCounters=consumes(COUNTER_SET1, memory=memory), **extra)


def row(claims: list, classes: list, slices: list, node_: tuple = node(NODE1, REGION1), *, allocated: tuple = (),
        expect: list | None = None, error: str | None = None, invalid_pools: bool = False,
        invocations: int | None = None) -> dict[str, Any]:
    return {"claims": claims, "classes": classes, "slices": slices, "node": node_, "allocated": allocated,
            "expect": expect, "error": error, "invalid_pools": invalid_pools, "invocations": invocations}


def mem_device(name: str, memory: str, version: str | None = None) -> dict[str, Any]:
    return device(name, {"memory": memory}, attrs(driverVersion=version) if version else None)


def obsolete_slices() -> list:
    first = resource_slice("slice-1-obsolete", NODE1, POOL1, DRIVER_A, device(DEVICE1), count=2)
    second = resource_slice("slice-1-obsolete", NODE1, POOL1, DRIVER_A, device(DEVICE2), count=2, generation=2)
    return [first, second]


def duplicate_slices() -> list:
    a = one_device(SLICE1, NODE1, POOL1, DRIVER_A, count=2)
    b = one_device(SLICE1 + "-2", NODE1, POOL1, DRIVER_A, count=2)
    return [a, b]


def all_mode(name: str, class_name: str, **kw: Any) -> dict[str, Any]:
    return request(name, class_name, mode="All", **kw)


def two_devices_with(**attributes_by_device: dict) -> Any:
    return resource_slice(SLICE1, NODE1, POOL1, DRIVER_A,
                          *(device(name.replace("_", "-"), None, a) for name, a in attributes_by_device.items()))


ROWS: dict[str, dict[str, Any]] = {
    "empty": row([], [], [], expect=[]),
    "simple": row([claim(CLAIM0, request(REQ0, CLASS_A))], [device_class(CLASS_A, DRIVER_A)],
                  [one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
                  expect=[allocation(LOCAL1, result(REQ0, DRIVER_A, POOL1, DEVICE1))]),
    "other-node": row([claim(CLAIM0, request(REQ0, CLASS_A))], [device_class(CLASS_A, DRIVER_A)],
                      [one_device(SLICE1, NODE1, POOL1, DRIVER_B), one_device(SLICE2, NODE2, POOL2, DRIVER_A)],
                      node(NODE2, REGION2),
                      expect=[allocation(local_node_selector(NODE2), result(REQ0, DRIVER_A, POOL2, DEVICE1))]),
    "small-and-large": row(
        [claim(CLAIM0, request(REQ0, CLASS_A, 1, MEM_1GI), request(REQ1, CLASS_A, 1, MEM_2GI))],
        [device_class(CLASS_A, DRIVER_A)],
        [resource_slice(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1, {"memory": "1Gi"}),
                        device(DEVICE2, {"memory": "2Gi"}))],
        expect=[allocation(LOCAL1, result(REQ0, DRIVER_A, POOL1, DEVICE1), result(REQ1, DRIVER_A, POOL1, DEVICE2))]),
    "small-and-large-backtrack-requests": row(
        [claim(CLAIM0, request(REQ0, CLASS_A, 1, MEM_1GI), request(REQ1, CLASS_A, 1, MEM_2GI))],
        [device_class(CLASS_A, DRIVER_A)],
        [resource_slice(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE2, {"memory": "2Gi"}),
                        device(DEVICE1, {"memory": "1Gi"}))],
        expect=[allocation(LOCAL1, result(REQ0, DRIVER_A, POOL1, DEVICE1), result(REQ1, DRIVER_A, POOL1, DEVICE2))]),
    "small-and-large-backtrack-claims": row(
        [claim(CLAIM0, request(REQ0, CLASS_A, 1, MEM_1GI)), claim(CLAIM1, request(REQ1, CLASS_A, 1, MEM_2GI))],
        [device_class(CLASS_A, DRIVER_A)],
        [resource_slice(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE2, {"memory": "2Gi"}),
                        device(DEVICE1, {"memory": "1Gi"}))],
        expect=[allocation(LOCAL1, result(REQ0, DRIVER_A, POOL1, DEVICE1)),
                allocation(LOCAL1, result(REQ1, DRIVER_A, POOL1, DEVICE2))]),
    "devices-split-across-different-slices": row(
        [claim(CLAIM0, request(REQ0, CLASS_A, 2))], [device_class(CLASS_A, DRIVER_A)],
        [one_device(SLICE1, NODE1, POOL1, DRIVER_A), one_device(SLICE2, NODE1, POOL2, DRIVER_A)],
        expect=[allocation(LOCAL1, result(REQ0, DRIVER_A, POOL1, DEVICE1), result(REQ0, DRIVER_A, POOL2, DEVICE1))]),
    "obsolete-slice": row([claim(CLAIM0, request(REQ0, CLASS_A))], [device_class(CLASS_A, DRIVER_A)],
                          obsolete_slices(), expect=None),
    "duplicate-slice": row([claim(CLAIM0, request(REQ0, CLASS_A))], [device_class(CLASS_A, DRIVER_A)],
                           duplicate_slices(), error="invalid resource pools were encountered", invalid_pools=True),
    "no-slices": row([claim(CLAIM0, request(REQ0, CLASS_A))], [device_class(CLASS_A, DRIVER_A)], [], expect=None),
    "not-enough-suitable-devices": row(
        [claim(CLAIM0, request(REQ0, CLASS_A)), claim(CLAIM0, request(REQ1, CLASS_A))],
        [device_class(CLASS_A, DRIVER_A)], [one_device(SLICE1, NODE1, POOL1, DRIVER_A)], expect=None),
    "no-classes": row([claim(CLAIM0, request(REQ0, CLASS_A))], [], [one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
                      error="could not retrieve device class class-a"),
    "unknown-class": row([claim(CLAIM0, request(REQ0, "unknown-class"))], [device_class(CLASS_A, DRIVER_A)],
                         [one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
                         error="could not retrieve device class unknown-class"),
    "all-devices-single": row(
        [claim(CLAIM0, all_mode(REQ0, CLASS_A))], [device_class(CLASS_A, DRIVER_A)],
        [one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
        expect=[allocation(LOCAL1, result(REQ0, DRIVER_A, POOL1, DEVICE1))]),
    "all-devices-with-consumed-counters": row(
        [claim(CLAIM0, all_mode(REQ0, CLASS_A))], [device_class(CLASS_A, DRIVER_A)],
        [resource_slice(SLICE1, NODE1, POOL1, DRIVER_A,
                        device(DEVICE1, consumesCounters=consumes(COUNTER_SET1, memory="4Gi")), count=2),
         resource_slice(SLICE2, NODE1, POOL1, DRIVER_A, count=2, counters=[counter_set(COUNTER_SET1, memory="8Gi")])],
        expect=[allocation(LOCAL1, result(REQ0, DRIVER_A, POOL1, DEVICE1))]),
    "all-devices-many": row(
        [claim(CLAIM0, all_mode(REQ0, CLASS_A))], [device_class(CLASS_A, DRIVER_A)],
        [one_device(SLICE1, NODE1, POOL1, DRIVER_A), one_device(SLICE1, NODE1, POOL2, DRIVER_A)],
        expect=[allocation(LOCAL1, result(REQ0, DRIVER_A, POOL1, DEVICE1), result(REQ0, DRIVER_A, POOL2, DEVICE1))]),
    "all-devices-of-the-incomplete-pool": row(
        [claim(CLAIM0, all_mode(REQ0, CLASS_A))], [device_class(CLASS_A, DRIVER_A)],
        [one_device(SLICE1, NODE1, POOL1, DRIVER_A, count=2)],
        error="claim default/claim-0, request req-0: asks for all devices, but resource pool driver-a/pool-1 is "
              "currently being updated"),
    "all-devices-plus-another": row(
        [claim(CLAIM0, all_mode(REQ0, CLASS_A)), claim(CLAIM1, request(REQ0, CLASS_B))],
        [device_class(CLASS_A, DRIVER_A), device_class(CLASS_B, DRIVER_B)],
        [one_device(SLICE1, NODE1, POOL1, DRIVER_A), one_device(SLICE1, NODE1, POOL1, DRIVER_B)],
        expect=[allocation(LOCAL1, result(REQ0, DRIVER_A, POOL1, DEVICE1)),
                allocation(LOCAL1, result(REQ0, DRIVER_B, POOL1, DEVICE1))]),
    "all-devices-plus-another-reversed": row(
        [claim(CLAIM1, request(REQ0, CLASS_B)), claim(CLAIM0, all_mode(REQ0, CLASS_A))],
        [device_class(CLASS_A, DRIVER_A), device_class(CLASS_B, DRIVER_B)],
        [one_device(SLICE1, NODE1, POOL1, DRIVER_A), one_device(SLICE1, NODE1, POOL1, DRIVER_B)],
        expect=[allocation(LOCAL1, result(REQ0, DRIVER_B, POOL1, DEVICE1)),
                allocation(LOCAL1, result(REQ0, DRIVER_A, POOL1, DEVICE1))]),
    "all-devices-many-plus-another": row(
        [claim(CLAIM0, all_mode(REQ0, CLASS_A)), claim(CLAIM1, request(REQ0, CLASS_B))],
        [device_class(CLASS_A, DRIVER_A), device_class(CLASS_B, DRIVER_B)],
        [resource_slice(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1), device(DEVICE2)),
         one_device(SLICE1, NODE1, POOL1, DRIVER_B)],
        expect=[allocation(LOCAL1, result(REQ0, DRIVER_A, POOL1, DEVICE1), result(REQ0, DRIVER_A, POOL1, DEVICE2)),
                allocation(LOCAL1, result(REQ0, DRIVER_B, POOL1, DEVICE1))]),
    "all-devices-no-solution": row(
        [claim(CLAIM1, request(REQ0, CLASS_A)), claim(CLAIM0, all_mode(REQ0, CLASS_A))],
        [device_class(CLASS_A, DRIVER_A)], [one_device(SLICE1, NODE1, POOL1, DRIVER_A)], expect=None),
    "all-devices-no-solution-reversed": row(
        [claim(CLAIM0, all_mode(REQ0, CLASS_A)), claim(CLAIM1, request(REQ0, CLASS_A))],
        [device_class(CLASS_A, DRIVER_A)], [one_device(SLICE1, NODE1, POOL1, DRIVER_A)], expect=None),
    "all-devices-slice-without-devices": row(
        [claim(CLAIM0, all_mode(REQ0, CLASS_A))], [device_class(CLASS_A, DRIVER_A)],
        [resource_slice(SLICE1, NODE1, POOL1, DRIVER_A)], expect=None),
    "all-devices-no-slices": row([claim(CLAIM0, all_mode(REQ0, CLASS_A))], [device_class(CLASS_A, DRIVER_A)], [],
                                 expect=None),
    "all-devices-some-allocated": row(
        [claim(CLAIM0, all_mode(REQ0, CLASS_A))], [device_class(CLASS_A, DRIVER_A)],
        [resource_slice(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1), device(DEVICE2))],
        allocated=((DRIVER_A, POOL1, DEVICE1),), expect=None),
    "all-devices-some-allocated-admin-access": row(
        [claim(CLAIM0, all_mode(REQ0, CLASS_A, admin=True))], [device_class(CLASS_A, DRIVER_A)],
        [resource_slice(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1), device(DEVICE2))],
        allocated=((DRIVER_A, POOL1, DEVICE1),),
        expect=[allocation(LOCAL1, result(REQ0, DRIVER_A, POOL1, DEVICE1, True),
                           result(REQ0, DRIVER_A, POOL1, DEVICE2, True))]),
    "all-devices-some-allocating-admin-access": row(
        [claim(CLAIM0, request(REQ0, CLASS_A, admin=True), all_mode(REQ1, CLASS_A, admin=True))],
        [device_class(CLASS_A, DRIVER_A)],
        [resource_slice(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1), device(DEVICE2))], expect=None),
    "count-devices-some-allocated-admin-access": row(
        [claim(CLAIM0, request(REQ0, CLASS_A, 2, admin=True))], [device_class(CLASS_A, DRIVER_A)],
        [resource_slice(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1), device(DEVICE2))],
        allocated=((DRIVER_A, POOL1, DEVICE1),),
        expect=[allocation(LOCAL1, result(REQ0, DRIVER_A, POOL1, DEVICE1, True),
                           result(REQ0, DRIVER_A, POOL1, DEVICE2, True))]),
    "separate-claims-share-device-admin-access": row(
        [claim(CLAIM0, request(REQ0, CLASS_A, admin=True)), claim(CLAIM1, request(REQ0, CLASS_A, admin=True))],
        [device_class(CLASS_A, DRIVER_A)],
        [resource_slice(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1), device(DEVICE2))],
        expect=[allocation(LOCAL1, result(REQ0, DRIVER_A, POOL1, DEVICE1, True)),
                allocation(LOCAL1, result(REQ0, DRIVER_A, POOL1, DEVICE1, True))]),
    "admin-access-claims-device-allocating-for-non-admin-access": row(
        [claim(CLAIM0, request(REQ0, CLASS_A)), claim(CLAIM1, request(REQ0, CLASS_A, admin=True))],
        [device_class(CLASS_A, DRIVER_A)],
        [resource_slice(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1), device(DEVICE2))],
        expect=[allocation(LOCAL1, result(REQ0, DRIVER_A, POOL1, DEVICE1)),
                allocation(LOCAL1, result(REQ0, DRIVER_A, POOL1, DEVICE1, True))]),
    "all-devices-slice-without-devices-prioritized-list": row(
        [claim(CLAIM0, prioritized(REQ0, sub_request(SUB0, CLASS_A, mode="All"), sub_request(SUB1, CLASS_B)))],
        [device_class(CLASS_A, DRIVER_A), device_class(CLASS_B, DRIVER_B)],
        [resource_slice(SLICE1, NODE1, POOL1, DRIVER_A), one_device(SLICE2, NODE1, POOL2, DRIVER_B)],
        expect=[allocation(LOCAL1, result(R0S1, DRIVER_B, POOL2, DEVICE1))]),
    "all-devices-no-slices-prioritized-list": row(
        [claim(CLAIM0, prioritized(REQ0, sub_request(SUB0, CLASS_A, mode="All"), sub_request(SUB1, CLASS_B)))],
        [device_class(CLASS_A, DRIVER_A), device_class(CLASS_B, DRIVER_B)],
        [one_device(SLICE2, NODE1, POOL2, DRIVER_B)],
        expect=[allocation(LOCAL1, result(R0S1, DRIVER_B, POOL2, DEVICE1))]),
    "all-devices-some-allocated-prioritized-list": row(
        [claim(CLAIM0, prioritized(REQ0, sub_request(SUB0, CLASS_A, mode="All"), sub_request(SUB1, CLASS_B)))],
        [device_class(CLASS_A, DRIVER_A), device_class(CLASS_B, DRIVER_B)],
        [resource_slice(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1), device(DEVICE2)),
         one_device(SLICE2, NODE1, POOL2, DRIVER_B)],
        allocated=((DRIVER_A, POOL1, DEVICE1),),
        expect=[allocation(LOCAL1, result(R0S1, DRIVER_B, POOL2, DEVICE1))]),
    "network-attached-device": row(
        [claim(CLAIM0, request(REQ0, CLASS_A))], [device_class(CLASS_A, DRIVER_A)],
        [one_device(SLICE1, node_label_selector("region", REGION1), POOL1, DRIVER_A)],
        expect=[allocation(node_label_selector("region", REGION1), result(REQ0, DRIVER_A, POOL1, DEVICE1))]),
    "unsuccessful-allocation-network-attached-device": row(
        [claim(CLAIM0, request(REQ0, CLASS_A))], [device_class(CLASS_A, DRIVER_A)],
        [one_device(SLICE1, node_label_selector("region", REGION1), POOL1, DRIVER_A)], node(NODE2, REGION2),
        expect=None),
    "many-network-attached-devices": row(
        [claim(CLAIM0, request(REQ0, CLASS_A, 4))], [device_class(CLASS_A, DRIVER_A)],
        [one_device(SLICE1, node_label_selector("region", REGION1), POOL1, DRIVER_A),
         one_device(SLICE1, ALL_NODES, POOL2, DRIVER_A),
         one_device(SLICE1, node_label_selector("planet", "earth"), POOL3, DRIVER_A),
         one_device(SLICE1, local_node_selector(NODE1), POOL4, DRIVER_A)],
        expect=[allocation({"nodeSelectorTerms": [{
            "matchExpressions": [{"key": "region", "operator": "In", "values": [REGION1]},
                                 {"key": "planet", "operator": "In", "values": ["earth"]}],
            "matchFields": [{"key": "metadata.name", "operator": "In", "values": [NODE1]}]}]},
            result(REQ0, DRIVER_A, POOL1, DEVICE1), result(REQ0, DRIVER_A, POOL2, DEVICE1),
            result(REQ0, DRIVER_A, POOL3, DEVICE1), result(REQ0, DRIVER_A, POOL4, DEVICE1))]),
    "local-and-network-attached-devices": row(
        [claim(CLAIM0, request(REQ0, CLASS_A, 2))], [device_class(CLASS_A, DRIVER_A)],
        [one_device(SLICE1, node_label_selector("region", REGION1), POOL1, DRIVER_A),
         one_device(SLICE1, NODE1, POOL2, DRIVER_A)],
        expect=[allocation(LOCAL1, result(REQ0, DRIVER_A, POOL1, DEVICE1), result(REQ0, DRIVER_A, POOL2, DEVICE1))]),
    "several-different-drivers": row(
        [claim(CLAIM0, request(REQ0, CLASS_A)), claim(CLAIM0, request(REQ0, CLASS_B))],
        [device_class(CLASS_A, DRIVER_A), device_class(CLASS_B, DRIVER_B)],
        [resource_slice(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1), device(DEVICE2)),
         one_device(SLICE1, NODE1, POOL1, DRIVER_B)],
        expect=[allocation(LOCAL1, result(REQ0, DRIVER_A, POOL1, DEVICE1)),
                allocation(LOCAL1, result(REQ0, DRIVER_B, POOL1, DEVICE1))]),
    "already-allocated-devices": row(
        [claim(CLAIM0, request(REQ0, CLASS_A))], [device_class(CLASS_A, DRIVER_A)],
        [one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
        allocated=((DRIVER_A, POOL1, DEVICE1), (DRIVER_A, POOL1, DEVICE2)), expect=None),
    "admin-access-enabled": row(
        [claim(CLAIM0, request(REQ0, CLASS_A, admin=True))], [device_class(CLASS_A, DRIVER_A)],
        [one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
        allocated=((DRIVER_A, POOL1, DEVICE1), (DRIVER_A, POOL1, DEVICE2)),
        expect=[allocation(LOCAL1, result(REQ0, DRIVER_A, POOL1, DEVICE1, True))]),
    "with-constraint": row(
        [claim(CLAIM0, request(REQ0, CLASS_A), request(REQ1, CLASS_A),
               constraints=[{"matchAttribute": a} for a in (INT_ATTRIBUTE, VERSION_ATTRIBUTE, STRING_ATTRIBUTE,
                                                              BOOL_ATTRIBUTE)])],
        [device_class(CLASS_A, DRIVER_A)],
        [two_devices_with(**{d: attrs(driverVersion="1.0.0", numa=1, stringAttribute="stringAttributeValue",
                                      boolAttribute=True) for d in (DEVICE1, DEVICE2)})],
        expect=[allocation(LOCAL1, result(REQ0, DRIVER_A, POOL1, DEVICE1), result(REQ1, DRIVER_A, POOL1, DEVICE2))]),
    "with-constraint-non-existent-attribute": row(
        [claim(CLAIM0, request(REQ0, CLASS_A), constraints=[{"matchAttribute": NON_EXISTENT_ATTRIBUTE}])],
        [device_class(CLASS_A, DRIVER_A)], [one_device(SLICE1, NODE1, POOL1, DRIVER_A)], expect=None),
    "with-constraint-not-matching-int-attribute": row(
        [claim(CLAIM0, request(REQ0, CLASS_A, 2), constraints=[{"matchAttribute": INT_ATTRIBUTE}])],
        [device_class(CLASS_A, DRIVER_A), device_class(CLASS_B, DRIVER_B)],
        [two_devices_with(**{DEVICE1: attrs(numa=1), DEVICE2: attrs(numa=2)})], expect=None),
    "with-constraint-not-matching-int-attribute-all-devices": row(
        [claim(CLAIM0, all_mode(REQ0, CLASS_A), constraints=[{"matchAttribute": INT_ATTRIBUTE}])],
        [device_class(CLASS_A, DRIVER_A), device_class(CLASS_B, DRIVER_B)],
        [two_devices_with(**{DEVICE1: attrs(numa=1), DEVICE2: attrs(numa=2)})],
        error="claim default/claim-0, request req-0: cannot add device driver-a/pool-1/device-2 because a claim "
              "constraint would not be satisfied"),
    "partitionable-all-mode-constraint-must-error-with-reserved-counter": row(
        [claim(CLAIM0, all_mode(REQ0, CLASS_A), constraints=[{"matchAttribute": INT_ATTRIBUTE}])],
        [device_class(CLASS_A, DRIVER_A)],
        [resource_slice(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1, None, attrs(numa=1)),
                        device(DEVICE2, None, attrs(numa=2), consumesCounters=consumes(COUNTER_SET1, c="1")),
                        count=2),
         resource_slice(SLICE2, NODE1, POOL1, DRIVER_A, count=2, counters=[counter_set(COUNTER_SET1, c="1")])],
        error="claim default/claim-0, request req-0: cannot add device driver-a/pool-1/device-2 because a claim "
              "constraint would not be satisfied"),
    "with-constraint-not-matching-string-attribute": row(
        [claim(CLAIM0, request(REQ0, CLASS_A, 2), constraints=[{"matchAttribute": STRING_ATTRIBUTE}])],
        [device_class(CLASS_A, DRIVER_A)],
        [two_devices_with(**{DEVICE1: attrs(stringAttribute="stringAttributeValue"),
                             DEVICE2: attrs(stringAttribute="stringAttributeValue2")})], expect=None),
    "with-constraint-not-matching-bool-attribute": row(
        [claim(CLAIM0, request(REQ0, CLASS_A, 2), constraints=[{"matchAttribute": BOOL_ATTRIBUTE}])],
        [device_class(CLASS_A, DRIVER_A)],
        [two_devices_with(**{DEVICE1: attrs(boolAttribute=True), DEVICE2: attrs(boolAttribute=False)})],
        expect=None),
    "with-constraint-not-matching-version-attribute": row(
        [claim(CLAIM0, request(REQ0, CLASS_A, 2), constraints=[{"matchAttribute": VERSION_ATTRIBUTE}])],
        [device_class(CLASS_A, DRIVER_A)],
        [two_devices_with(**{DEVICE1: attrs(driverVersion="1.0.0"), DEVICE2: attrs(driverVersion="2.0.0")})],
        expect=None),
    "with-constraint-for-request": row(
        [claim(CLAIM0, request(REQ0, CLASS_A), request(REQ1, CLASS_A),
               constraints=[{"requests": [REQ0], "matchAttribute": VERSION_ATTRIBUTE}])],
        [device_class(CLASS_A, DRIVER_A)],
        [two_devices_with(**{DEVICE1: attrs(driverVersion="1.0.0"), DEVICE2: attrs(driverVersion="2.0.0")})],
        expect=[allocation(LOCAL1, result(REQ0, DRIVER_A, POOL1, DEVICE1), result(REQ1, DRIVER_A, POOL1, DEVICE2))]),
    "with-constraint-for-request-retry": row(
        [claim(CLAIM0, request(REQ0, CLASS_A), request(REQ1, CLASS_A),
               constraints=[{"requests": [REQ0], "matchAttribute": VERSION_ATTRIBUTE},
                            {"matchAttribute": STRING_ATTRIBUTE}])],
        [device_class(CLASS_A, DRIVER_A)],
        [two_devices_with(**{DEVICE1: attrs(driverVersion="1.0.0", stringAttribute="a"),
                             DEVICE2: attrs(driverVersion="2.0.0", stringAttribute="b"),
                             DEVICE3: attrs(driverVersion="3.0.0", stringAttribute="b")})],
        expect=[allocation(LOCAL1, result(REQ0, DRIVER_A, POOL1, DEVICE2), result(REQ1, DRIVER_A, POOL1, DEVICE3))]),
    "with-class-device-config": row(
        [claim(CLAIM0, request(REQ0, CLASS_A))], [device_class(CLASS_A, DRIVER_A, "classAttribute")],
        [one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
        expect=[allocation(LOCAL1, result(REQ0, DRIVER_A, POOL1, DEVICE1), config=[
            {"source": "FromClass", "requests": [REQ0], "opaque": opaque(DRIVER_A, "classAttribute")}])]),
    "with-class-device-config-with-multiple-request-and-configs": row(
        [claim(CLAIM0, request(REQ0, CLASS_A), request(REQ1, CLASS_A), request(REQ2, CLASS_B))],
        [device_class(CLASS_A, DRIVER_A, "classAttribute-A"), device_class(CLASS_B, DRIVER_B, "classAttribute-B")],
        [many_devices(SLICE1, NODE1, POOL1, DRIVER_A, 2), one_device(SLICE2, NODE1, POOL1, DRIVER_B)],
        expect=[allocation(LOCAL1, result(REQ0, DRIVER_A, POOL1, DEVICE0), result(REQ1, DRIVER_A, POOL1, DEVICE1),
                           result(REQ2, DRIVER_B, POOL1, DEVICE1), config=[
            {"source": "FromClass", "requests": [REQ0, REQ1], "opaque": opaque(DRIVER_A, "classAttribute-A")},
            {"source": "FromClass", "requests": [REQ2], "opaque": opaque(DRIVER_B, "classAttribute-B")}])]),
    "claim-with-device-config": row(
        [claim(CLAIM0, request(REQ0, CLASS_A),
               config=[{"requests": [REQ0], "opaque": opaque(DRIVER_A, "deviceAttribute")}])],
        [device_class(CLASS_A, DRIVER_A)], [one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
        expect=[allocation(LOCAL1, result(REQ0, DRIVER_A, POOL1, DEVICE1), config=[
            {"source": "FromClaim", "requests": [REQ0], "opaque": opaque(DRIVER_A, "deviceAttribute")}])]),
    "invalid-CEL-one-device": row(
        [claim(CLAIM0, request(REQ0, CLASS_A, 1, "noSuchVar"))], [device_class(CLASS_A, DRIVER_A)],
        [one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
        error="claim default/claim-0: selector #0: CEL compile error: "),  # then CEL's: undeclared reference
    "invalid-CEL-all-devices": row(
        [claim(CLAIM0, request(REQ0, CLASS_A, 1, "noSuchVar", mode="All"))], [device_class(CLASS_A, DRIVER_A)],
        [one_device(SLICE1, NODE1, POOL1, DRIVER_A)], error="undeclared reference"),
    "too-many-devices-single-request": row(
        [claim(CLAIM0, request(REQ0, CLASS_A, 500))], [device_class(CLASS_A, DRIVER_A)], [],
        error="claim default/claim-0: number of requested devices 500 exceeds the claim limit of 32"),
    "many-devices-okay": row([claim(CLAIM0, request(REQ0, CLASS_A, 32))], [device_class(CLASS_A, DRIVER_A)], [],
                             expect=None),
    "too-many-devices-total": row(
        [claim(CLAIM0, request(REQ0, CLASS_A, 32), request(REQ1, CLASS_A, 1))], [device_class(CLASS_A, DRIVER_A)],
        [many_devices(SLICE1, NODE1, POOL1, DRIVER_A, 33)], error="exceeds the claim limit"),
    "prioritized-list-first-unavailable": row(
        [claim(CLAIM0, prioritized(REQ0, sub_request(SUB0, CLASS_B), sub_request(SUB1, CLASS_A)))],
        [device_class(CLASS_A, DRIVER_A), device_class(CLASS_B, DRIVER_B)],
        [one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
        expect=[allocation(LOCAL1, result(R0S1, DRIVER_A, POOL1, DEVICE1))]),
    "prioritized-list-non-available": row(
        [claim(CLAIM0, prioritized(REQ0, sub_request(SUB0, CLASS_B, 2), sub_request(SUB1, CLASS_A, 2)))],
        [device_class(CLASS_A, DRIVER_A), device_class(CLASS_B, DRIVER_B)],
        [one_device(SLICE1, NODE1, POOL1, DRIVER_A), one_device(SLICE2, NODE1, POOL2, DRIVER_B)], expect=None),
    "prioritized-list-device-config": row(
        [claim(CLAIM0, prioritized(REQ0, sub_request(SUB0, CLASS_A), sub_request(SUB1, CLASS_B, 2)),
               config=[{"requests": [R0S0], "opaque": opaque(DRIVER_A, "foo")},
                       {"requests": [R0S1], "opaque": opaque(DRIVER_B, "bar")}])],
        [device_class(CLASS_A, DRIVER_A), device_class(CLASS_B, DRIVER_B)],
        [resource_slice(SLICE1, NODE1, POOL1, DRIVER_B, device(DEVICE1), device(DEVICE2))],
        expect=[allocation(LOCAL1, result(R0S1, DRIVER_B, POOL1, DEVICE1), result(R0S1, DRIVER_B, POOL1, DEVICE2),
                           config=[{"source": "FromClaim", "requests": [R0S1], "opaque": opaque(DRIVER_B, "bar")}])]),
    "prioritized-list-class-config": row(
        [claim(CLAIM0, prioritized(REQ0, sub_request(SUB0, CLASS_A, 2), sub_request(SUB1, CLASS_B, 2)))],
        [device_class(CLASS_A, DRIVER_A, "foo"), device_class(CLASS_B, DRIVER_B, "bar")],
        [resource_slice(SLICE1, NODE1, POOL1, DRIVER_B, device(DEVICE1), device(DEVICE2)),
         resource_slice(SLICE2, NODE1, POOL2, DRIVER_A, device(DEVICE3))],
        expect=[allocation(LOCAL1, result(R0S1, DRIVER_B, POOL1, DEVICE1), result(R0S1, DRIVER_B, POOL1, DEVICE2),
                           config=[{"source": "FromClass", "requests": [R0S1], "opaque": opaque(DRIVER_B, "bar")}])]),
    "tainted-two-devices": row(
        [claim(CLAIM0, request(REQ0, CLASS_A))], [device_class(CLASS_A, DRIVER_A)],
        [resource_slice(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1, taints=[TAINT_NO_SCHEDULE]),
                        device(DEVICE2, taints=[TAINT_NO_EXECUTE]))], expect=None),
    "tainted-one-device-two-taints": row(
        [claim(CLAIM0, request(REQ0, CLASS_A))], [device_class(CLASS_A, DRIVER_A)],
        [resource_slice(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1, taints=[TAINT_NO_SCHEDULE, TAINT_NO_EXECUTE]))],
        expect=None),
    "tainted-two-devices-tolerated": row(
        [claim(CLAIM0, request(REQ0, CLASS_A, tolerations=[TOLERATION_NO_EXECUTE]))],
        [device_class(CLASS_A, DRIVER_A)],
        [resource_slice(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1, taints=[TAINT_NO_SCHEDULE]),
                        device(DEVICE2, taints=[TAINT_NO_EXECUTE]))],
        expect=[allocation(LOCAL1, result(REQ0, DRIVER_A, POOL1, DEVICE2, False, TOLERATION_NO_EXECUTE))]),
    "tainted-two-devices-prioritized-list-tolerated": row(
        [claim(CLAIM0, prioritized(REQ0, sub_request(SUB0, CLASS_A),
                                   sub_request(SUB1, CLASS_A, tolerations=[TOLERATION_NO_EXECUTE])))],
        [device_class(CLASS_A, DRIVER_A)],
        [resource_slice(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1, taints=[TAINT_NO_SCHEDULE]),
                        device(DEVICE2, taints=[TAINT_NO_EXECUTE]))],
        expect=[allocation(LOCAL1, result(R0S1, DRIVER_A, POOL1, DEVICE2, False, TOLERATION_NO_EXECUTE))]),
    "tainted-no-effect": row(
        [claim(CLAIM0, request(REQ0, CLASS_A))], [device_class(CLASS_A, DRIVER_A)],
        [resource_slice(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1, taints=[TAINT_NONE]))],
        expect=[allocation(LOCAL1, result(REQ0, DRIVER_A, POOL1, DEVICE1))]),
    "tainted-one-device-two-taints-both-tolerated": row(
        [claim(CLAIM0, request(REQ0, CLASS_A, tolerations=[TOLERATION_NO_SCHEDULE, TOLERATION_NO_EXECUTE]))],
        [device_class(CLASS_A, DRIVER_A)],
        [resource_slice(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1, taints=[TAINT_NO_SCHEDULE, TAINT_NO_EXECUTE]))],
        expect=[allocation(LOCAL1, result(REQ0, DRIVER_A, POOL1, DEVICE1, False, TOLERATION_NO_SCHEDULE,
                                          TOLERATION_NO_EXECUTE))]),
    "tainted-prioritized-list": row(
        [claim(CLAIM0, prioritized(REQ0, sub_request(SUB0, CLASS_B), sub_request(SUB1, CLASS_A)))],
        [device_class(CLASS_A, DRIVER_A), device_class(CLASS_B, DRIVER_B)],
        [resource_slice(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1, taints=[TAINT_NO_SCHEDULE]))], expect=None),
    "partitionable-devices-per-device-node-selection-nodename": row(
        [claim(CLAIM0, prioritized(REQ0, sub_request(SUB0, CLASS_A, 1, MEM_6GI), sub_request(SUB1, CLASS_A, 1, MEM_4GI)))],
        [device_class(CLASS_A, DRIVER_A)],
        [resource_slice(SLICE1, PER_DEVICE, POOL1, DRIVER_A, counted(DEVICE1, "4Gi", nodeName=NODE1),
                        counted(DEVICE2, "6Gi", nodeName=NODE2), count=2),
         resource_slice(SLICE2, PER_DEVICE, POOL1, DRIVER_A, count=2, counters=[counter_set(COUNTER_SET1, memory="18Gi")])],
        expect=[allocation(LOCAL1, result(R0S1, DRIVER_A, POOL1, DEVICE1))]),
    "partitionable-devices-per-device-node-selection-node-selector": row(
        [claim(CLAIM0, request(REQ0, CLASS_A))], [device_class(CLASS_A, DRIVER_A)],
        [resource_slice(SLICE1, PER_DEVICE, POOL1, DRIVER_A,
                        counted(DEVICE1, "4Gi", nodeSelector=node_label_selector("region", REGION1)), count=2),
         resource_slice(SLICE2, PER_DEVICE, POOL1, DRIVER_A, count=2, counters=[counter_set(COUNTER_SET1, memory="18Gi")])],
        expect=[allocation(node_label_selector("region", REGION1), result(REQ0, DRIVER_A, POOL1, DEVICE1))]),
    "partitionable-devices-no-capacity-available": row(
        [claim(CLAIM0, request(REQ0, CLASS_A))], [device_class(CLASS_A, DRIVER_A)],
        [resource_slice(SLICE1, NODE1, POOL1, DRIVER_A, counted(DEVICE1, "4Gi"), counted(DEVICE2, "16Gi")),
         resource_slice(SLICE2, NODE1, POOL1, DRIVER_A, counters=[counter_set(COUNTER_SET1, memory="18Gi")])],
        allocated=((DRIVER_A, POOL1, DEVICE2),), expect=None),
    "partitionable-devices-multiple-devices": row(
        [claim(CLAIM0, request(REQ0, CLASS_A), request(REQ1, CLASS_A))], [device_class(CLASS_A, DRIVER_A)],
        [resource_slice(SLICE1, NODE1, POOL1, DRIVER_A, counted(DEVICE1, "4Gi"), counted(DEVICE2, "6Gi"),
                        counted(DEVICE3, "4Gi"), count=2),
         resource_slice(SLICE2, NODE1, POOL1, DRIVER_A, count=2, counters=[counter_set(COUNTER_SET1, memory="8Gi")])],
        expect=[allocation(LOCAL1, result(REQ0, DRIVER_A, POOL1, DEVICE1), result(REQ1, DRIVER_A, POOL1, DEVICE3))]),
    "partitionable-devices-taint-releases-counter": row(
        [claim(CLAIM0, request(REQ0, CLASS_A))], [device_class(CLASS_A, DRIVER_A)],
        [resource_slice(SLICE1, NODE1, POOL1, DRIVER_A,
                        device(DEVICE1, taints=[TAINT_NO_SCHEDULE], consumesCounters=consumes(COUNTER_SET1, c="1")),
                        device(DEVICE2, consumesCounters=consumes(COUNTER_SET1, c="1")), count=2),
         resource_slice(SLICE2, NODE1, POOL1, DRIVER_A, count=2, counters=[counter_set(COUNTER_SET1, c="1")])],
        expect=[allocation(LOCAL1, result(REQ0, DRIVER_A, POOL1, DEVICE2))]),
    "prioritized-list-subrequests-with-constraints-ref-parent-request": row(
        [claim(CLAIM0, request(REQ0, CLASS_A, 1, MEM_8GI),
               prioritized(REQ1, sub_request(SUB0, CLASS_A, 1, MEM_2GI), sub_request(SUB1, CLASS_A, 1, MEM_1GI)),
               constraints=[{"requests": [REQ0, REQ1], "matchAttribute": VERSION_ATTRIBUTE}])],
        [device_class(CLASS_A, DRIVER_A)],
        [resource_slice(SLICE1, NODE1, POOL1, DRIVER_A, mem_device(DEVICE1, "8Gi", "1.0.0")),
         resource_slice(SLICE2, NODE1, POOL2, DRIVER_A, mem_device(DEVICE2, "2Gi", "2.0.0"),
                        mem_device(DEVICE3, "1Gi", "1.0.0"))],
        expect=[allocation(LOCAL1, result(REQ0, DRIVER_A, POOL1, DEVICE1), result(R1S1, DRIVER_A, POOL2, DEVICE3))]),
    "prioritized-list-subrequests-with-constraints-ref-sub-request": row(
        [claim(CLAIM0, request(REQ0, CLASS_A, 1, MEM_8GI),
               prioritized(REQ1, sub_request(SUB0, CLASS_A, 1, MEM_2GI), sub_request(SUB1, CLASS_A, 1, MEM_1GI)),
               constraints=[{"requests": [REQ0, R1S0], "matchAttribute": VERSION_ATTRIBUTE}])],
        [device_class(CLASS_A, DRIVER_A)],
        [resource_slice(SLICE1, NODE1, POOL1, DRIVER_A, mem_device(DEVICE1, "8Gi", "1.0.0")),
         resource_slice(SLICE2, NODE1, POOL2, DRIVER_A, mem_device(DEVICE2, "2Gi", "2.0.0"))],
        expect=[allocation(LOCAL1, result(REQ0, DRIVER_A, POOL1, DEVICE1), result(R1S1, DRIVER_A, POOL2, DEVICE2))]),
    "prioritized-list-multi-request": row(
        [claim(CLAIM0, request(REQ1, CLASS_A, 1, MEM_8GI),
               prioritized(REQ0, sub_request(SUB0, CLASS_A, 1, MEM_8GI), sub_request(SUB1, CLASS_A, 1, MEM_4GI)))],
        [device_class(CLASS_A, DRIVER_A)],
        [resource_slice(SLICE1, NODE1, POOL1, DRIVER_A, mem_device(DEVICE1, "8Gi")),
         resource_slice(SLICE2, NODE1, POOL2, DRIVER_A, mem_device(DEVICE2, "4Gi"))],
        expect=[allocation(LOCAL1, result(REQ1, DRIVER_A, POOL1, DEVICE1), result(R0S1, DRIVER_A, POOL2, DEVICE2))]),
    "prioritized-list-with-backtracking": row(
        [claim(CLAIM0, prioritized(REQ0, sub_request(SUB0, CLASS_A, 1, MEM_8GI), sub_request(SUB1, CLASS_A, 1, MEM_4GI)),
               request(REQ1, CLASS_A, 1, MEM_8GI))],
        [device_class(CLASS_A, DRIVER_A)],
        [resource_slice(SLICE1, NODE1, POOL1, DRIVER_A, mem_device(DEVICE1, "8Gi")),
         resource_slice(SLICE2, NODE1, POOL2, DRIVER_A, mem_device(DEVICE2, "4Gi"))],
        expect=[allocation(LOCAL1, result(R0S1, DRIVER_A, POOL2, DEVICE2), result(REQ1, DRIVER_A, POOL1, DEVICE1))]),
    "prioritized-list-too-many-in-first-subrequest": row(
        [claim(CLAIM0, prioritized(REQ0, sub_request(SUB0, CLASS_B, 500), sub_request(SUB1, CLASS_A)))],
        [device_class(CLASS_A, DRIVER_A), device_class(CLASS_B, DRIVER_B)],
        [one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
        expect=[allocation(LOCAL1, result(R0S1, DRIVER_A, POOL1, DEVICE1))]),
    "prioritized-list-max-allocation-limit-request": row(
        [claim(CLAIM0, prioritized(REQ0, sub_request(SUB0, CLASS_A, 32), sub_request(SUB1, CLASS_A, 16)),
               prioritized(REQ1, sub_request(SUB0, CLASS_A, 32), sub_request(SUB1, CLASS_A, 16)))],
        [device_class(CLASS_A, DRIVER_A)], [many_devices(SLICE1, NODE1, POOL1, DRIVER_A, 64)],
        expect=[allocation(LOCAL1, *(result(R0S1, DRIVER_A, POOL1, f"device-{i}") for i in range(16)),
                           *(result(R1S1, DRIVER_A, POOL1, f"device-{i}") for i in range(16, 32)))],
        invocations=75),
    "prioritized-list-max-allocation-allocation-mode-all": row(
        [claim(CLAIM0, prioritized(REQ0, sub_request(SUB0, CLASS_A, mode="All"), sub_request(SUB1, CLASS_A, 2)),
               request(REQ1, CLASS_B, 2))],
        [device_class(CLASS_A, DRIVER_A), device_class(CLASS_B, DRIVER_B)],
        [many_devices(SLICE1, NODE1, POOL1, DRIVER_A, 31), many_devices(SLICE2, NODE1, POOL2, DRIVER_B, 2)],
        expect=[allocation(LOCAL1, result(R0S1, DRIVER_A, POOL1, "device-0"), result(R0S1, DRIVER_A, POOL1, "device-1"),
                           result(REQ1, DRIVER_B, POOL2, "device-0"), result(REQ1, DRIVER_B, POOL2, "device-1"))],
        invocations=42),
    "check-combinations-within-single-request-single-pool-single-slice": row(
        [claim(CLAIM0, request(REQ0, CLASS_A, 5))], [device_class(CLASS_A, DRIVER_A)],
        [resource_slice(SLICE1, NODE1, POOL1, DRIVER_A, *(device(d) for d in (DEVICE1, DEVICE2, DEVICE3, "device-4")))],
        expect=None, invocations=16),
    "check-combinations-within-single-request-single-pool-multiple-slices": row(
        [claim(CLAIM0, request(REQ0, CLASS_A, 5))], [device_class(CLASS_A, DRIVER_A)],
        [resource_slice(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1), device(DEVICE2), count=2),
         resource_slice(SLICE2, NODE1, POOL1, DRIVER_A, device(DEVICE3), device("device-4"), count=2)],
        expect=None, invocations=16),
    "check-combinations-within-single-request-multiple-pools-multiple-slices": row(
        [claim(CLAIM0, request(REQ0, CLASS_A, 5))], [device_class(CLASS_A, DRIVER_A)],
        [resource_slice(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1), count=2),
         resource_slice(SLICE2, NODE1, POOL1, DRIVER_A, device(DEVICE2), count=2),
         resource_slice("slice-3", NODE1, POOL2, DRIVER_A, device(DEVICE3), device("device-4"))],
        expect=None, invocations=16),
    "check-combinations-within-single-request-many-pools": row(
        [claim(CLAIM0, request(REQ0, CLASS_A, 5))], [device_class(CLASS_A, DRIVER_A)],
        [resource_slice(f"slice-{i}", NODE1, pool, DRIVER_A, device(d))
         for i, (pool, d) in enumerate(((POOL1, DEVICE1), (POOL2, DEVICE2), (POOL3, DEVICE3), (POOL4, "device-4")), 1)],
        expect=None, invocations=16),
    "check-combinations-with-backtracking": row(
        [claim(CLAIM0, request(REQ1, CLASS_A, 2), request(REQ2, CLASS_A, 1, TYPE_X))],
        [device_class(CLASS_A, DRIVER_A)],
        [resource_slice(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1, None, attrs(type="X")),
                        device(DEVICE2, None, attrs(type="Y")), device(DEVICE3, None, attrs(type="Y")))],
        expect=[allocation(LOCAL1, result(REQ1, DRIVER_A, POOL1, DEVICE2), result(REQ1, DRIVER_A, POOL1, DEVICE3),
                           result(REQ2, DRIVER_A, POOL1, DEVICE1))],
        invocations=12),
    "check-combinations-with-backtracking-across-slices-and-pools": row(  # upstream allocates device-3 (binding
        # conditions): refused here, after the same search
        [claim(CLAIM0, request(REQ1, CLASS_A, 2), request(REQ2, CLASS_A, 1, TYPE_X))],
        [device_class(CLASS_A, DRIVER_A)],
        [resource_slice(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1, None, attrs(type="X")), count=2),
         resource_slice(SLICE2, NODE1, POOL1, DRIVER_A, device(DEVICE2, None, attrs(type="Y")), count=2),
         resource_slice("slice-3", NODE1, POOL2, DRIVER_A,
                        device(DEVICE3, None, attrs(type="Y"), bindingConditions=["IsPrepare"]))],
        error="device driver-a/pool-2/device-3 has binding conditions (DRADeviceBindingConditions)", invocations=12),
    "check-combinations-with-prioritized-list": row(
        [claim(CLAIM0, prioritized(REQ1, sub_request(SUB0, CLASS_A, 3, TYPE_Y), sub_request(SUB1, CLASS_A, 2)),
               prioritized(REQ2, sub_request(SUB0, CLASS_A, 2), sub_request(SUB1, CLASS_A, 1, TYPE_X)))],
        [device_class(CLASS_A, DRIVER_A)],
        [resource_slice(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1, None, attrs(type="X")),
                        device(DEVICE2, None, attrs(type="Y")), device(DEVICE3, None, attrs(type="Y")))],
        expect=[allocation(LOCAL1, result(R1S1, DRIVER_A, POOL1, DEVICE2), result(R1S1, DRIVER_A, POOL1, DEVICE3),
                           result(f"{REQ2}/{SUB1}", DRIVER_A, POOL1, DEVICE1))],
        invocations=26),
}


@pytest.mark.parametrize("name", list(ROWS))
def test_upstream_allocator_row(name):
    r = ROWS[name]
    cel = dra_allocator.default_environment()
    allocator = Allocator({c.name: c for c in r["classes"]}, r["slices"], frozenset(r["allocated"]), cel)
    node_name, labels = r["node"]
    if r["error"] is not None:
        with pytest.raises(AllocationError) as e:
            allocator.allocate(node_name, labels, r["claims"])
        assert r["error"] in e.value.message
        assert isinstance(e.value, InvalidPoolsError) == r["invalid_pools"]
        if r["invocations"] is not None:
            assert allocator.num_allocate_one == r["invocations"]
        return
    solution = allocator.allocate(node_name, labels, r["claims"])
    if r["invocations"] is not None:  # upstream's expectNumAllocateOneInvocations: the same search, step by step
        assert allocator.num_allocate_one == r["invocations"]
    if r["expect"] is None:
        assert solution is None
        return
    assert solution is not None
    assert allocator.allocation_results(node_name, labels, r["claims"], solution) == r["expect"]


def test_counters_are_kept_per_pool_name_as_upstream_keys_them():
    """Not a row of upstream's table: upstream's ``availableCounters`` and ``consumedCounters`` are keyed by the
    pool's name (``pool.PoolID.Pool``), not by driver and name, so two drivers' pools of one name share what
    is counted. Kept as upstream does it (same decisions), and pinned here."""
    cel = dra_allocator.default_environment()
    slices = [
        resource_slice(SLICE1, NODE1, POOL1, DRIVER_A, counted(DEVICE1, "2"), count=2),
        resource_slice(SLICE2, NODE1, POOL1, DRIVER_A, count=2, counters=[counter_set(COUNTER_SET1, memory="3")]),
        resource_slice("slice-3", NODE1, POOL1, DRIVER_B, counted(DEVICE1, "2"), count=2),
        resource_slice("slice-4", NODE1, POOL1, DRIVER_B, count=2, counters=[counter_set(COUNTER_SET1, memory="3")]),
    ]
    classes = {CLASS_A: device_class(CLASS_A, DRIVER_A), CLASS_B: device_class(CLASS_B, DRIVER_B)}
    both = [claim(CLAIM0, request(REQ0, CLASS_A), request(REQ1, CLASS_B))]
    assert Allocator(classes, slices, frozenset(), cel).allocate(NODE1, {}, both) is None  # 2 + 2 > 3 in "pool-1"
    alone = [claim(CLAIM0, request(REQ1, CLASS_B))]
    assert Allocator(classes, slices, frozenset(), cel).allocate(NODE1, {}, alone) is not None


def test_a_shared_devices_used_capacity_passes_the_search_on_to_the_next_device():
    """Not a row of upstream's table (its consumable-capacity rows need share IDs this engine does not write):
    a device that allows multiple allocations, whose shares already consume its capacity, is not a candidate
    (``CmpRequestOverCapacity``: a request naming no capacity consumes all of it), so the next device is
    allocated, as upstream would; unshared, the device comes first in upstream's order: a share of it, with its
    ID and the capacity it consumes."""
    cel = dra_allocator.default_environment()
    slices = [resource_slice(SLICE1, NODE1, POOL1, DRIVER_A,
                             device(DEVICE0, {"memory": "16Gi"}, None, allowMultipleAllocations=True),
                             device(DEVICE1, {"memory": "16Gi"}))]
    classes = {CLASS_A: device_class(CLASS_A, DRIVER_A)}
    claims = [claim(CLAIM0, request(REQ0, CLASS_A))]
    full = {(DRIVER_A, POOL1, DEVICE0): {f"{DRIVER_A}/memory": Fraction(16 * 2**30)}}
    allocator = Allocator(classes, slices, frozenset(), cel, frozenset(full), full)
    solution = allocator.allocate(NODE1, {}, claims)
    assert [r.device_id for r in solution[0]] == [(DRIVER_A, POOL1, DEVICE1)]
    half = {(DRIVER_A, POOL1, DEVICE0): {f"{DRIVER_A}/memory": Fraction(8 * 2**30)}}
    solution = Allocator(classes, slices, frozenset(), cel, frozenset(half), half).allocate(NODE1, {}, claims)
    assert [r.device_id for r in solution[0]] == [(DRIVER_A, POOL1, DEVICE1)]
    allocator = Allocator(classes, slices, frozenset(), cel)
    solution = allocator.allocate(NODE1, {}, claims)
    (result_,) = allocator.allocation_results(NODE1, {}, claims, solution)[0]["devices"]["results"]
    assert result_["device"] == DEVICE0 and result_["consumedCapacity"] == {"memory": str(16 * 2**30)}
    assert len(result_["shareID"]) == 36 and result_ == allocator.allocation_results(NODE1, {}, claims, solution)[0][
        "devices"]["results"][0]  # the same ID every time: derived, not drawn


@pytest.mark.parametrize("requests, expected", [
    ({"memory": "8Gi"}, DEVICE1),  # fits the 16Gi device only
    ({"memory": "1Gi"}, DEVICE0),
    ({"other": "1"}, None),  # a capacity no device has: every device is skipped
    ({f"{DRIVER_A}/memory": "8Gi"}, DEVICE1),  # a qualified name is the device's own
])
def test_a_requests_capacity_picks_devices_with_room(requests, expected):
    cel = dra_allocator.default_environment()
    slices = [resource_slice(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE0, {"memory": "4Gi"}),
                             device(DEVICE1, {"memory": "16Gi"}))]
    spec = request(REQ0, CLASS_A)
    spec["exactly"]["capacity"] = {"requests": requests}
    solution = Allocator({CLASS_A: device_class(CLASS_A, DRIVER_A)}, slices, frozenset(), cel).allocate(
        NODE1, {}, [claim(CLAIM0, spec)])
    assert (solution[0][0].device_id[2] if solution else None) == expected


# -- consumable capacity (upstream's rows; share IDs are drawn at random upstream, derived here: compared as set) --
CAP0, CAP1 = "capacity-0", "capacity-1"
MULTI_A = f'device.driver == "{DRIVER_A}" && device.allowMultipleAllocations == true'


def multi_class() -> Any:
    """``classWithAllowMultipleAllocations(classA, driverA, true)``."""
    from policy_scheduler.model.dra import DeviceClass

    return DeviceClass.from_dict({"metadata": {"name": CLASS_A}, "spec": {"selectors": [{"cel": {"expression": MULTI_A}}]}})


def multi(name: str, capacity: dict[str, str] | None = None, policy: str | None = None, valid: tuple = (),
          default: str | None = None, attributes: dict | None = None) -> dict[str, Any]:
    """A device that allows multiple allocations; ``policy``: ``range`` (default 2, min 2, step 2, max 4) or
    ``values`` (default ``default``, valid values it and ``valid``)."""
    out = device(name, None, attributes, allowMultipleAllocations=True)
    if capacity:
        out["capacity"] = {}
        for k, v in capacity.items():
            entry: dict[str, Any] = {"value": v}
            if policy == "range":
                entry["requestPolicy"] = {"default": "2", "validRange": {"min": "2", "step": "2", "max": "4"}}
            elif policy == "values":
                entry["requestPolicy"] = {"default": default, "validValues": [default, *valid]}
            out["capacity"][k] = entry
    return out


def cap_request(name: str, amount: str | None = None, **kw: Any) -> dict[str, Any]:
    spec = request(name, CLASS_A, **kw)
    if amount is not None:
        spec["exactly"]["capacity"] = {"requests": {CAP0: amount}}
    return spec


def shared(request_name: str, device_name: str, consumed: dict[str, str] | None) -> dict[str, Any]:
    out = {**result(request_name, DRIVER_A, POOL1, device_name), "shareID": "<derived>"}
    if consumed:
        out["consumedCapacity"] = consumed
    return out


CONSUMABLE: dict[str, tuple[list, list, list, dict, list | None]] = {
    # name: (claims, classes, devices of slice-1 on node-1, already consumed per device, expected results per claim)
    "consumable-capacity-multi-allocatable-device-with-missing-capacity-request": (
        [claim(CLAIM0, cap_request(REQ0, "1"))], [device_class(CLASS_A, DRIVER_A)],
        [multi(DEVICE1, {CAP1: "1"})], {}, None),
    "consumable-capacity-multi-allocatable-device-without-capacity-without-capacity-request": (
        [claim(CLAIM0, cap_request(REQ0)), claim(CLAIM1, cap_request(REQ0))], [multi_class()],
        [multi(DEVICE1)], {}, [[shared(REQ0, DEVICE1, None)], [shared(REQ0, DEVICE1, None)]]),
    "consumable-capacity-multi-allocatable-device-without-policy-without-capacity-request": (
        [claim(CLAIM0, cap_request(REQ0)), claim(CLAIM1, cap_request(REQ0))], [multi_class()],
        [multi(DEVICE1, {CAP0: "1"}), multi(DEVICE2, {CAP0: "1"})], {},
        [[shared(REQ0, DEVICE1, {CAP0: "1"})], [shared(REQ0, DEVICE2, {CAP0: "1"})]]),
    "consumable-capacity-multi-allocatable-device-without-policy-without-capacity-request-block": (
        [claim(CLAIM0, cap_request(REQ0)), claim(CLAIM1, cap_request(REQ0))], [multi_class()],
        [multi(DEVICE1, {CAP0: "2"})], {}, None),
    "consumable-capacity-multi-allocatable-device-without-policy-with-capacity-request": (
        [claim(CLAIM0, cap_request(REQ0, "1")), claim(CLAIM1, cap_request(REQ0, "1"))], [multi_class()],
        [multi(DEVICE1, {CAP0: "2"})], {}, [[shared(REQ0, DEVICE1, {CAP0: "1"})], [shared(REQ0, DEVICE1, {CAP0: "1"})]]),
    "consumable-capacity-multi-allocatable-device-with-policy-without-capacity-request": (
        [claim(CLAIM0, cap_request(REQ0)), claim(CLAIM1, cap_request(REQ0))], [multi_class()],
        [multi(DEVICE1, {CAP0: "4"}, "range")], {},
        [[shared(REQ0, DEVICE1, {CAP0: "2"})], [shared(REQ0, DEVICE1, {CAP0: "2"})]]),
    "consumable-capacity-multi-allocatable-device-with-zero-request-policy": (
        [claim(CLAIM0, cap_request(REQ0)), claim(CLAIM1, cap_request(REQ0))], [multi_class()],
        [multi(DEVICE1, {CAP0: "1"}, "values", default="0")], {},
        [[shared(REQ0, DEVICE1, {CAP0: "0"})], [shared(REQ0, DEVICE1, {CAP0: "0"})]]),
    "consumable-capacity-multi-allocatable-device-violates-zero-request-policy": (
        [claim(CLAIM0, cap_request(REQ0, "1"))], [multi_class()],
        [multi(DEVICE1, {CAP0: "1"}, "values", default="0")], {}, None),
    "consumable-capacity-multi-allocatable-device-with-range-policy-with-capacity-request": (
        [claim(CLAIM0, cap_request(REQ0, "1")), claim(CLAIM1, cap_request(REQ0, "1"))], [multi_class()],
        [multi(DEVICE1, {CAP0: "4"}, "range")], {},
        [[shared(REQ0, DEVICE1, {CAP0: "2"})], [shared(REQ0, DEVICE1, {CAP0: "2"})]]),
    "consumable-capacity-multi-allocatable-device-with-range-policy-step": (
        [claim(CLAIM0, cap_request(REQ0, "3"))], [multi_class()],
        [multi(DEVICE1, {CAP0: "4"}, "range")], {}, [[shared(REQ0, DEVICE1, {CAP0: "4"})]]),
    "consumable-capacity-multi-allocatable-device-with-valid-values-policy": (
        [claim(CLAIM0, cap_request(REQ0, "2"))], [multi_class()],
        [multi(DEVICE1, {CAP0: "4"}, "values", ("2",), default="1")], {}, [[shared(REQ0, DEVICE1, {CAP0: "2"})]]),
    "consumable-capacity-multi-allocatable-device-with-valid-values-policy-round-up": (
        [claim(CLAIM0, cap_request(REQ0, "2"))], [multi_class()],
        [multi(DEVICE1, {CAP0: "3"}, "values", ("3",), default="1")], {}, [[shared(REQ0, DEVICE1, {CAP0: "3"})]]),
    "consumable-capacity-multi-allocatable-device-with-exceeded-consumable-capacity-request": (
        [claim(CLAIM0, cap_request(REQ0, "1")), claim(CLAIM1, cap_request(REQ0, "2"))], [multi_class()],
        [multi(DEVICE1, {CAP0: "2"}, "range")], {}, None),
    "consumable-capacity-multi-allocatable-device-with-request-over-max-sharing-policy": (
        [claim(CLAIM0, cap_request(REQ0, "6"))], [multi_class()],
        [multi(DEVICE1, {CAP0: "10"}, "range")], {}, None),
    "consumable-capacity-multi-allocatable-device-with-allocated-capacity-use-remaining": (
        [claim(CLAIM0, cap_request(REQ0, "2"))], [multi_class()],
        [multi(DEVICE1, {CAP0: "4"}, "range")], {DEVICE1: "2"}, [[shared(REQ0, DEVICE1, {CAP0: "2"})]]),
    "consumable-capacity-multi-allocatable-device-with-allocated-capacity-next-device": (
        [claim(CLAIM0, cap_request(REQ0, "2"))], [multi_class()],
        [multi(DEVICE1, {CAP0: "2"}, "range"), multi(DEVICE2, {CAP0: "2"}, "range")], {DEVICE1: "2"},
        [[shared(REQ0, DEVICE2, {CAP0: "2"})]]),
    "consumable-capacity-with-multi-allocatable-device-backtrack": (
        [claim(CLAIM0, cap_request(REQ0, "2"), cap_request(REQ1, "2"), constraints=[{"matchAttribute": STRING_ATTRIBUTE}]),
         claim(CLAIM1, cap_request(REQ0, "2"))], [device_class(CLASS_A, DRIVER_A)],
        [multi(DEVICE2, {CAP0: "2"}, "range", attributes=attrs(stringAttribute="stringAttributeValue1")),
         multi(DEVICE1, {CAP0: "4"}, "range", attributes=attrs(stringAttribute="stringAttributeValue2"))], {},
        [[shared(REQ0, DEVICE1, {CAP0: "2"}), shared(REQ1, DEVICE1, {CAP0: "2"})], [shared(REQ0, DEVICE2, {CAP0: "2"})]]),
    "consumable-capacity-multi-allocatable-device-with-no-available-consumable-capacity": (
        [claim(CLAIM0, cap_request(REQ0, "2"))], [multi_class()],
        [multi(DEVICE1, {CAP0: "2"}, "range")], {DEVICE1: "2"}, None),
}


@pytest.mark.parametrize("name", list(CONSUMABLE))
def test_upstream_consumable_capacity_row(name):
    claims, classes, devices, consumed, expected = CONSUMABLE[name]
    cel = dra_allocator.default_environment()
    slices = [resource_slice(SLICE1, NODE1, POOL1, DRIVER_A, *devices)]
    used = {(DRIVER_A, POOL1, d): {f"{DRIVER_A}/{CAP0}": Fraction(v)} for d, v in consumed.items()}
    allocator = Allocator({c.name: c for c in classes}, slices, frozenset(), cel, frozenset(used), used)
    solution = allocator.allocate(NODE1, {}, claims)
    if expected is None:
        assert solution is None
        return
    assert solution is not None
    got = [a["devices"]["results"] for a in allocator.allocation_results(NODE1, {}, claims, solution)]
    ids = [r.pop("shareID") for results in got for r in results]
    assert len(set(ids)) == len(ids)  # every share its own ID
    for results in expected:
        for r in results:
            r.pop("shareID", None)
    assert got == expected
