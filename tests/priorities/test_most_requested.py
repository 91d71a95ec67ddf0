"""MostRequestedPriority (upstream ``TestMostRequested`` in most_requested_test.go)."""

from __future__ import annotations

import pytest

from policy_scheduler.errors import PriorityError
from policy_scheduler.priorities import PriorityMetadataFactory, most_requested_priority_map
from policy_scheduler.priorities.most_requested import used_score

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


def big_cpu_and_memory():
    """``bigCpuAndMemory``: 2000m/4000 + 3000m/5000."""
    containers = [container({"cpu": "2000m", "memory": "4000"}), container({"cpu": "3000m", "memory": "5000"})]
    return make_pod(node_name="machine1", containers=containers)


TABLE = [
    pytest.param(
        no_resources(), [], _nodes((4000, 10000), (4000, 10000)), [("machine1", 0), ("machine2", 0)],
        id="nothing scheduled, nothing requested",
    ),
    pytest.param(
        cpu_and_memory(), [], _nodes((4000, 10000), (6000, 10000)), [("machine1", 6), ("machine2", 5)],
        id="nothing scheduled, resources requested, differently sized machines",
    ),
    pytest.param(
        no_resources(),
        [
            cpu_only(labels=LABELS2), cpu_only(labels=LABELS1),
            cpu_only("machine2", LABELS1), cpu_and_memory(labels=LABELS1),
        ],
        _nodes((10000, 20000), (10000, 20000)), [("machine1", 3), ("machine2", 4)],
        id="no resources requested, pods scheduled with resources",
    ),
    pytest.param(
        cpu_and_memory(), [cpu_only(), cpu_and_memory()],
        _nodes((10000, 20000), (10000, 20000)), [("machine1", 4), ("machine2", 5)],
        id="resources requested, pods scheduled with resources",
    ),
    pytest.param(
        big_cpu_and_memory(), [], _nodes((4000, 10000), (10000, 8000)), [("machine1", 4), ("machine2", 2)],
        id="resources requested with more than the node, pods scheduled with resources",
    ),
]


@pytest.mark.parametrize("with_metadata", [False, True], ids=["meta=nil", "meta"])
@pytest.mark.parametrize(("pod", "pods", "nodes", "expected"), TABLE)
def test_most_requested(pod, pods, nodes, expected, with_metadata: bool) -> None:
    """Upstream TestMostRequested (all 5 rows; upstream passes nil metadata, the metadata path must agree)."""
    cluster = make_cluster(nodes, pods)
    meta = PriorityMetadataFactory(cluster).get_metadata(pod) if with_metadata else None
    assert prioritize(most_requested_priority_map, None, pod, meta, cluster.node_infos, nodes) == expected


def test_used_score_edges() -> None:
    """Over-commit scores 0, not 10 (priorities.md §5)."""
    assert used_score(0, 0) == 0
    assert used_score(11, 10) == 0
    assert used_score(10, 10) == 10
    assert used_score(5, 10) == 5


def test_node_not_found() -> None:
    with pytest.raises(PriorityError, match="node not found"):
        most_requested_priority_map(no_resources(), None, None)
