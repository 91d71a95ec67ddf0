"""EqualPriority (upstream ``EqualPriorityMap`` in core/generic_scheduler.go)."""

from __future__ import annotations

import pytest

from policy_scheduler.cache.node_info import NodeInfo
from policy_scheduler.errors import PriorityError
from policy_scheduler.priorities import equal_priority_map

from .conftest import make_cluster, make_pod, node_list, prioritize


def test_every_node_scores_one() -> None:
    nodes = node_list(["a", "b", "c"])
    cluster = make_cluster(nodes)
    assert prioritize(equal_priority_map, None, make_pod(), None, cluster.node_infos, nodes) == [("a", 1), ("b", 1), ("c", 1)]


@pytest.mark.parametrize("info", [None, NodeInfo()])
def test_node_not_found(info) -> None:
    with pytest.raises(PriorityError, match="node not found"):
        equal_priority_map(make_pod(), None, info)
