"""LeastRequestedPriority (upstream ``TestLeastRequested`` in least_requested_test.go)."""

from __future__ import annotations

import pytest

from policy_scheduler.errors import PriorityError
from policy_scheduler.priorities import PriorityMetadataFactory, least_requested_priority_map
from policy_scheduler.priorities.least_requested import unused_score

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
    'nothing scheduled, resources requested, differently sized machines': (3, 5),
    'no resources requested, pods scheduled': (10, 10),
    'no resources requested, pods scheduled with resources': (7, 5),
    'resources requested, pods scheduled with resources': (5, 4),
    'resources requested, pods scheduled with resources, differently sized machines': (5, 6),
    'requested resources exceed node capacity': (5, 2),
    'zero node resources, pods scheduled with resources': (0, 0),
})


@pytest.mark.parametrize("with_metadata", [False, True], ids=["meta=nil", "meta"])
@pytest.mark.parametrize(("pod", "pods", "nodes", "expected"), TABLE)
def test_least_requested(pod, pods, nodes, expected, with_metadata: bool) -> None:
    """Upstream TestLeastRequested (all 8 rows; upstream passes nil metadata, the metadata path must agree)."""
    cluster = make_cluster(nodes, pods)
    meta = PriorityMetadataFactory(cluster).get_metadata(pod) if with_metadata else None
    assert prioritize(least_requested_priority_map, None, pod, meta, cluster.node_infos, nodes) == expected


def test_worked_example_explicit_zero_cpu_request() -> None:
    """priorities.md §19: allocatable 4000m/10000, node non-zero requests 3000m/5000; the pod's one
    container requests ``cpu: "0"`` (memory absent => 209715200). Memory over-committed => 0,
    CPU ((4000-3000)*10)//4000 = 2, score (2+0)//2 = 1."""
    node = resource_node("n", 4000, 10000)
    existing = make_pod(node_name="n", containers=[container({"cpu": "3000m", "memory": "5000"})])
    cluster = make_cluster([node], [existing])
    pod = make_pod(containers=[container({"cpu": "0"})])
    assert least_requested_priority_map(pod, None, cluster.node_infos["n"]) == 1


def test_unused_score_edges() -> None:
    assert unused_score(0, 0) == 0
    assert unused_score(11, 10) == 0
    assert unused_score(10, 10) == 0
    assert unused_score(0, 10) == 10
    assert unused_score(1, 3) == 6


def test_node_not_found() -> None:
    from policy_scheduler.cache.node_info import NodeInfo

    with pytest.raises(PriorityError, match="node not found"):
        least_requested_priority_map(no_resources(), None, None)
    with pytest.raises(PriorityError, match="node not found"):
        least_requested_priority_map(no_resources(), None, NodeInfo())
