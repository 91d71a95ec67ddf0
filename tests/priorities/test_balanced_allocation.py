"""BalancedResourceAllocation (upstream ``TestBalancedResourceAllocation`` in
balanced_resource_allocation_test.go)."""

from __future__ import annotations

import pytest

from policy_scheduler.errors import PriorityError
from policy_scheduler.priorities import PriorityMetadataFactory, balanced_resource_allocation_map
from policy_scheduler.priorities.balanced_allocation import fraction_of_capacity

from .conftest import (
    container,
    make_cluster,
    make_pod,
    no_resources,
    prioritize,
    resource_node,
    resource_table,
)

TABLE = resource_table({
    'nothing scheduled, nothing requested': (10, 10),
    'nothing scheduled, resources requested, differently sized machines': (7, 10),
    'no resources requested, pods scheduled': (10, 10),
    'no resources requested, pods scheduled with resources': (4, 6),
    'resources requested, pods scheduled with resources': (6, 9),
    'resources requested, pods scheduled with resources, differently sized machines': (6, 6),
    'requested resources exceed node capacity': (0, 0),
    'zero node resources, pods scheduled with resources': (0, 0),
})


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
