"""MostRequestedPriority (upstream ``TestMostRequested`` in most_requested_test.go)."""

from __future__ import annotations

import pytest

from policy_scheduler.errors import PriorityError
from policy_scheduler.priorities import PriorityMetadataFactory, most_requested_priority_map
from policy_scheduler.priorities.most_requested import used_score

from .conftest import (
    make_cluster,
    no_resources,
    prioritize,
    resource_table,
)

TABLE = resource_table({
    'nothing scheduled, nothing requested': (0, 0),
    'nothing scheduled, resources requested, differently sized machines': (6, 5),
    'no resources requested, pods scheduled with resources': (3, 4),
    'resources requested, pods scheduled with resources': (4, 5),
    'resources requested with more than the node, pods scheduled with resources': (4, 2),
})


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
