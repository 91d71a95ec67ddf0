"""NodeAffinityPriority (upstream ``TestNodeAffinityPriority`` in node_affinity_test.go)."""

from __future__ import annotations

import pytest

from policy_scheduler.errors import PriorityError
from policy_scheduler.priorities import (
    PriorityMetadataFactory,
    calculate_node_affinity_priority_map,
    calculate_node_affinity_priority_reduce,
)

from .conftest import make_cluster, make_node, make_pod, prioritize

LABEL1 = {"foo": "bar"}
LABEL2 = {"key": "value"}
LABEL3 = {"az": "az1"}
LABEL4 = {"abc": "az11", "def": "az22"}
LABEL5 = {"foo": "bar", "key": "value", "az": "az1"}


def _expr(key: str, op: str, values: list[str] | None = None) -> dict:
    e = {"key": key, "operator": op}
    if values is not None:
        e["values"] = values
    return e


def _preferred(*terms: tuple[int, list[dict] | None]) -> dict:
    return {
        "nodeAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": w, "preference": {} if exprs is None else {"matchExpressions": exprs}} for w, exprs in terms
            ]
        }
    }


AFFINITY1 = _preferred((2, [_expr("foo", "In", ["bar"])]))
AFFINITY2 = _preferred(
    (2, [_expr("foo", "In", ["bar"])]),
    (4, [_expr("key", "In", ["value"])]),
    (5, [_expr("foo", "In", ["bar"]), _expr("key", "In", ["value"]), _expr("az", "In", ["az1"])]),
)


def _nodes(*spec: tuple[str, dict]):
    return [make_node(name, labels=labels) for name, labels in spec]


TABLE = [
    pytest.param(
        make_pod(), _nodes(("machine1", LABEL1), ("machine2", LABEL2), ("machine3", LABEL3)), (0, 0, 0),
        id="0: all machines are same priority as NodeAffinity is nil",
    ),
    pytest.param(
        make_pod(affinity=AFFINITY1), _nodes(("machine1", LABEL4), ("machine2", LABEL2), ("machine3", LABEL3)),
        (0, 0, 0),
        id="1: no machine macthes preferred scheduling requirements in NodeAffinity of pod so all machines' priority is zero",
    ),
    pytest.param(
        make_pod(affinity=AFFINITY1), _nodes(("machine1", LABEL1), ("machine2", LABEL2), ("machine3", LABEL3)),
        (10, 0, 0),
        id="2: only machine1 matches the preferred scheduling requirements of pod",
    ),
    pytest.param(
        make_pod(affinity=AFFINITY2), _nodes(("machine1", LABEL1), ("machine5", LABEL5), ("machine2", LABEL2)),
        (1, 10, 3),
        id="3: all machines matches the preferred scheduling requirements of pod but with different priorities",
    ),
]


@pytest.mark.parametrize("with_metadata", [False, True], ids=["meta=nil", "meta"])
@pytest.mark.parametrize(("pod", "nodes", "expected"), TABLE)
def test_node_affinity_priority(pod, nodes, expected, with_metadata: bool) -> None:
    """Upstream TestNodeAffinityPriority (all 4 rows; map + NormalizeReduce(10, false))."""
    cluster = make_cluster(nodes)
    meta = PriorityMetadataFactory(cluster).get_metadata(pod) if with_metadata else None
    got = prioritize(
        calculate_node_affinity_priority_map, calculate_node_affinity_priority_reduce, pod, meta,
        cluster.node_infos, nodes,
    )
    assert got == [(n.name, s) for n, s in zip(nodes, expected, strict=True)]


def test_empty_match_expressions_match_nothing_and_zero_weights_are_skipped() -> None:
    nodes = _nodes(("machine1", LABEL1))
    cluster = make_cluster(nodes)
    info = cluster.node_infos["machine1"]
    assert calculate_node_affinity_priority_map(make_pod(affinity=_preferred((7, None), (3, []))), None, info) == 0
    # A weight-0 term is skipped before its (invalid) selector is built.
    pod = make_pod(affinity=_preferred((0, [_expr("foo", "Bogus")]), (4, [_expr("foo", "Exists")])))
    assert calculate_node_affinity_priority_map(pod, None, info) == 4


def test_invalid_selector_is_an_error() -> None:
    nodes = _nodes(("machine1", LABEL1))
    cluster = make_cluster(nodes)
    pod = make_pod(affinity=_preferred((1, [_expr("foo", "Gt", ["x"])])))
    with pytest.raises(PriorityError):
        calculate_node_affinity_priority_map(pod, None, cluster.node_infos["machine1"])


def test_node_not_found() -> None:
    with pytest.raises(PriorityError, match="node not found"):
        calculate_node_affinity_priority_map(make_pod(), None, None)
