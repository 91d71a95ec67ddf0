"""NodeLabel priority (upstream ``TestNewNodeLabelPriority`` in node_label_test.go)."""

from __future__ import annotations

import pytest

from policy_scheduler.errors import PriorityError
from policy_scheduler.priorities import new_node_label_priority

from .conftest import make_cluster, make_node, prioritize

NODES = [
    make_node("machine1", labels={"foo": "bar"}),
    make_node("machine2", labels={"bar": "foo"}),
    make_node("machine3", labels={"bar": "baz"}),
]


@pytest.mark.parametrize(
    ("label", "presence", "expected"),
    [
        pytest.param("baz", True, (0, 0, 0), id="0: no match found, presence true"),
        pytest.param("baz", False, (10, 10, 10), id="1: no match found, presence false"),
        pytest.param("foo", True, (10, 0, 0), id="2: one match found, presence true"),
        pytest.param("foo", False, (0, 10, 10), id="3: one match found, presence false"),
        pytest.param("bar", True, (0, 10, 10), id="4: two matches found, presence true"),
        pytest.param("bar", False, (10, 0, 0), id="5: two matches found, presence false"),
    ],
)
def test_new_node_label_priority(label: str, presence: bool, expected) -> None:
    """Upstream TestNewNodeLabelPriority (all 6 rows; the pod is nil upstream)."""
    cluster = make_cluster(NODES)
    got = prioritize(new_node_label_priority(label, presence), None, None, None, cluster.node_infos, NODES)
    assert got == [(n.name, s) for n, s in zip(NODES, expected, strict=True)]


def test_node_not_found() -> None:
    with pytest.raises(PriorityError, match="node not found"):
        new_node_label_priority("foo", True)(None, None, None)
