"""CheckNodeMemoryPressure, CheckNodeDiskPressure and CheckNodeCondition: upstream
``TestPodSchedulesOnNodeWithMemoryPressureCondition``, ``TestPodSchedulesOnNodeWithDiskPressureCondition``
and ``TestNodeConditionPredicate``, every row."""

from __future__ import annotations

import pytest

from policy_scheduler.predicates import (
    check_node_condition,
    check_node_disk_pressure,
    check_node_memory_pressure,
)

from .conftest import allocatable, make_node, make_node_info, make_pod, metadata

BEST_EFFORT = make_pod(containers=[{"name": "container", "image": "image", "imagePullPolicy": "Always", "resources": {}}])
NOT_BEST_EFFORT = make_pod(containers=[{
    "name": "container", "image": "image", "imagePullPolicy": "Always",
    "resources": {"requests": allocatable(100, 100, 100, 100, 0, 0, 0)},
}])
NO_MEMORY_PRESSURE = make_node(conditions=[("Ready", "True")])
MEMORY_PRESSURE = make_node(conditions=[("MemoryPressure", "True")])

MEMORY_CASES = [
    ("best-effort pod schedulable on node without memory pressure condition on", BEST_EFFORT, NO_MEMORY_PRESSURE, True),
    ("best-effort pod not schedulable on node with memory pressure condition on", BEST_EFFORT, MEMORY_PRESSURE, False),
    ("non best-effort pod schedulable on node with memory pressure condition on", NOT_BEST_EFFORT, MEMORY_PRESSURE, True),
    ("non best-effort pod schedulable on node without memory pressure condition on", NOT_BEST_EFFORT, NO_MEMORY_PRESSURE, True),
]


@pytest.mark.parametrize(("name", "pod", "node", "fits"), MEMORY_CASES, ids=[c[0] for c in MEMORY_CASES])
def test_memory_pressure(name, pod, node, fits) -> None:
    """Upstream TestPodSchedulesOnNodeWithMemoryPressureCondition."""
    node_info = make_node_info(node)
    expected = (fits, [] if fits else ["NodeUnderMemoryPressure"])
    assert check_node_memory_pressure(pod, metadata(pod), node_info) == expected
    assert check_node_memory_pressure(pod, None, node_info) == expected


DISK_POD = make_pod(containers=[{"name": "container", "image": "image", "imagePullPolicy": "Always"}])
DISK_CASES = [
    ("pod schedulable on node without pressure condition on", make_node(conditions=[("Ready", "True")]), True),
    ("pod not schedulable on node with pressure condition on", make_node(conditions=[("DiskPressure", "True")]), False),
]


@pytest.mark.parametrize(("name", "node", "fits"), DISK_CASES, ids=[c[0] for c in DISK_CASES])
def test_disk_pressure(name, node, fits) -> None:
    """Upstream TestPodSchedulesOnNodeWithDiskPressureCondition."""
    assert check_node_disk_pressure(DISK_POD, metadata(DISK_POD), make_node_info(node)) == (
        fits, [] if fits else ["NodeUnderDiskPressure"])


def test_pressure_needs_exactly_true() -> None:
    node_info = make_node_info(make_node(conditions=[("MemoryPressure", "Unknown"), ("DiskPressure", "Unknown")]))
    assert check_node_memory_pressure(BEST_EFFORT, None, node_info) == (True, [])
    assert check_node_disk_pressure(BEST_EFFORT, None, node_info) == (True, [])
    assert check_node_memory_pressure(BEST_EFFORT, None, None) == (True, [])
    assert check_node_disk_pressure(BEST_EFFORT, None, None) == (True, [])


CONDITION_CASES = [
    ("node1 considered", make_node("node1", conditions=[("Ready", "True")]), True),
    ("node2 ignored - node not Ready", make_node("node2", conditions=[("Ready", "False")]), False),
    ("node3 ignored - node out of disk", make_node("node3", conditions=[("OutOfDisk", "True")]), False),
    ("node4 considered", make_node("node4", conditions=[("OutOfDisk", "False")]), True),
    ("node5 ignored - node out of disk", make_node("node5", conditions=[("Ready", "True"), ("OutOfDisk", "True")]), False),
    ("node6 considered", make_node("node6", conditions=[("Ready", "True"), ("OutOfDisk", "False")]), True),
    ("node7 ignored - node out of disk, node not Ready", make_node("node7", conditions=[("Ready", "False"), ("OutOfDisk", "True")]), False),
    ("node8 ignored - node not Ready", make_node("node8", conditions=[("Ready", "False"), ("OutOfDisk", "False")]), False),
    ("node9 ignored - node unschedulable", make_node("node9", unschedulable=True), False),
    ("node10 considered", make_node("node10", unschedulable=False), True),
    ("node11 considered", make_node("node11"), True),
]


@pytest.mark.parametrize(("name", "node", "schedulable"), CONDITION_CASES, ids=[c[0] for c in CONDITION_CASES])
def test_node_condition_predicate(name, node, schedulable) -> None:
    """Upstream TestNodeConditionPredicate (nil pod, nil metadata)."""
    assert check_node_condition(None, None, make_node_info(node))[0] is schedulable


def test_node_condition_reasons() -> None:
    node = make_node(conditions=[("Ready", "Unknown"), ("OutOfDisk", "Unknown"), ("NetworkUnavailable", "True")], unschedulable=True)
    assert check_node_condition(None, None, make_node_info(node)) == (
        False, ["NodeNotReady", "NodeOutOfDisk", "NodeNetworkUnavailable", "NodeUnschedulable"])
    ok = make_node(conditions=[("NetworkUnavailable", "False"), ("MemoryPressure", "True")])
    assert check_node_condition(None, None, make_node_info(ok)) == (True, [])


@pytest.mark.parametrize("node_info", [None, make_node_info()], ids=["null NodeInfo", "NodeInfo without node"])
def test_unknown_node(node_info) -> None:
    assert check_node_condition(make_pod(), None, node_info) == (False, ["NodeUnknownCondition"])
