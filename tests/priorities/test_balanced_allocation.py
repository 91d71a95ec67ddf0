"""BalancedResourceAllocation (upstream ``TestBalancedResourceAllocation`` in
balanced_resource_allocation_test.go)."""

from __future__ import annotations

import pytest

from policy_scheduler.errors import PriorityError
from policy_scheduler.priorities import PriorityMetadataFactory, balanced_resource_allocation_map
from policy_scheduler.priorities.balanced_allocation import fraction_of_capacity

from .conftest import (
    LABELS1,
    LABELS2,
    container,
    cpu_and_memory,
    cpu_only,
    make_cluster,
    make_pod,
    no_resources,
    prioritize,
    resource_node,
)


def _nodes(spec1: tuple[int, int], spec2: tuple[int, int]):
    return [resource_node("machine1", *spec1), resource_node("machine2", *spec2)]


TABLE = [
    pytest.param(
        no_resources(), [], _nodes((4000, 10000), (4000, 10000)), [("machine1", 10), ("machine2", 10)],
        id="nothing scheduled, nothing requested",
    ),
    pytest.param(
        cpu_and_memory(), [], _nodes((4000, 10000), (6000, 10000)), [("machine1", 7), ("machine2", 10)],
        id="nothing scheduled, resources requested, differently sized machines",
    ),
    pytest.param(
        no_resources(),
        [
            no_resources("machine1", LABELS2), no_resources("machine1", LABELS1),
            no_resources("machine2", LABELS1), no_resources("machine2", LABELS1),
        ],
        _nodes((4000, 10000), (4000, 10000)), [("machine1", 10), ("machine2", 10)],
        id="no resources requested, pods scheduled",
    ),
    pytest.param(
        no_resources(),
        [
            cpu_only(labels=LABELS2), cpu_only(labels=LABELS1),
            cpu_only("machine2", LABELS1), cpu_and_memory(labels=LABELS1),
        ],
        _nodes((10000, 20000), (10000, 20000)), [("machine1", 4), ("machine2", 6)],
        id="no resources requested, pods scheduled with resources",
    ),
    pytest.param(
        cpu_and_memory(), [cpu_only(), cpu_and_memory()],
        _nodes((10000, 20000), (10000, 20000)), [("machine1", 6), ("machine2", 9)],
        id="resources requested, pods scheduled with resources",
    ),
    pytest.param(
        cpu_and_memory(), [cpu_only(), cpu_and_memory()],
        _nodes((10000, 20000), (10000, 50000)), [("machine1", 6), ("machine2", 6)],
        id="resources requested, pods scheduled with resources, differently sized machines",
    ),
    pytest.param(
        cpu_only(), [cpu_only(), cpu_and_memory()],
        _nodes((4000, 10000), (4000, 10000)), [("machine1", 0), ("machine2", 0)],
        id="requested resources exceed node capacity",
    ),
    pytest.param(
        no_resources(), [cpu_only(), cpu_and_memory()],
        _nodes((0, 0), (0, 0)), [("machine1", 0), ("machine2", 0)],
        id="zero node resources, pods scheduled with resources",
    ),
]


@pytest.mark.parametrize("with_metadata", [False, True], ids=["meta=nil", "meta"])
@pytest.mark.parametrize(("pod", "pods", "nodes", "expected"), TABLE)
def test_balanced_resource_allocation(pod, pods, nodes, expected, with_metadata: bool) -> None:
    """Upstream TestBalancedResourceAllocation (all 8 rows; upstream passes nil metadata)."""
    cluster = make_cluster(nodes, pods)
    meta = PriorityMetadataFactory(cluster).get_metadata(pod) if with_metadata else None
    assert prioritize(balanced_resource_allocation_map, None, pod, meta, cluster.node_infos, nodes) == expected


def test_worked_example() -> None:
    """priorities.md §19: capacity 10000m/20000, requested 3000m/5000 -> cpuF 0.3, memF 0.25 ->
    int((1 - 0.05) * 10) = int(9.5) = 9."""
    node = resource_node("n", 10000, 20000)
    cluster = make_cluster([node])
    pod = make_pod(containers=[container({"cpu": "3000m", "memory": "5000"})])
    assert balanced_resource_allocation_map(pod, None, cluster.node_infos["n"]) == 9


def test_fractions() -> None:
    """Fractions are float(requested) / float(capacity); a zero capacity counts as full (1.0)."""
    diff = abs(fraction_of_capacity(3000, 10000) - fraction_of_capacity(5000, 20000))
    assert int((1 - diff) * 10.0) == 9
    assert fraction_of_capacity(5, 0) == 1.0
    assert fraction_of_capacity(0, 0) == 1.0


def test_node_not_found() -> None:
    with pytest.raises(PriorityError, match="node not found"):
        balanced_resource_allocation_map(no_resources(), None, None)
