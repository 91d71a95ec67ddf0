"""TaintTolerationPriority (upstream ``TestTaintAndToleration`` in taint_toleration_test.go)."""

from __future__ import annotations

import pytest

from policy_scheduler.errors import PriorityError
from policy_scheduler.priorities import (
    PriorityMetadataFactory,
    compute_taint_toleration_priority_map,
    compute_taint_toleration_priority_reduce,
)

from .conftest import make_cluster, make_node, make_pod, prioritize

PNS = "PreferNoSchedule"


def _taint(key: str, value: str, effect: str = PNS) -> dict:
    return {"key": key, "value": value, "effect": effect}


def _tol(key: str, value: str, effect: str = PNS) -> dict:
    return {"key": key, "operator": "Equal", "value": value, "effect": effect}


def _nodes(*spec: tuple[str, list[dict]]):
    return [make_node(name, taints=taints) for name, taints in spec]


CPU_ARM = _taint("cpu-type", "arm64")
DISK_SSD = _taint("disk-type", "ssd")

TABLE = [
    pytest.param(
        [_tol("foo", "bar")],
        _nodes(("nodeA", [_taint("foo", "bar")]), ("nodeB", [_taint("foo", "blah")])),
        (10, 0),
        id="0: node with taints tolerated by the pod, gets a higher score than those node with intolerable taints",
    ),
    pytest.param(
        [_tol("cpu-type", "arm64"), _tol("disk-type", "ssd")],
        _nodes(("nodeA", []), ("nodeB", [CPU_ARM]), ("nodeC", [CPU_ARM, DISK_SSD])),
        (10, 10, 10),
        id="1: the nodes that all of their taints are tolerated by the pod, get the same score",
    ),
    pytest.param(
        [_tol("foo", "bar")],
        _nodes(("nodeA", []), ("nodeB", [CPU_ARM]), ("nodeC", [CPU_ARM, DISK_SSD])),
        (10, 5, 0),
        id="2: the more intolerable taints a node has, the lower score it gets",
    ),
    pytest.param(
        [_tol("cpu-type", "arm64", "NoSchedule"), _tol("disk-type", "ssd", "NoSchedule")],
        _nodes(("nodeA", []), ("nodeB", [_taint("cpu-type", "arm64", "NoSchedule")]), ("nodeC", [CPU_ARM, DISK_SSD])),
        (10, 10, 0),
        id="3: only taints and tolerations that have effect PreferNoSchedule are checked",
    ),
    pytest.param(
        [],
        _nodes(("nodeA", []), ("nodeB", [CPU_ARM])),
        (10, 0),
        id="4: Default behaviour No taints and tolerations, lands on node with no taints",
    ),
]


@pytest.mark.parametrize("with_metadata", [False, True], ids=["meta=nil", "meta"])
@pytest.mark.parametrize(("tolerations", "nodes", "expected"), TABLE)
def test_taint_and_toleration(tolerations, nodes, expected, with_metadata: bool) -> None:
    """Upstream TestTaintAndToleration (all 5 rows; map + NormalizeReduce(10, reverse=true))."""
    pod = make_pod(tolerations=tolerations)
    cluster = make_cluster(nodes)
    meta = PriorityMetadataFactory(cluster).get_metadata(pod) if with_metadata else None
    got = prioritize(
        compute_taint_toleration_priority_map, compute_taint_toleration_priority_reduce, pod, meta,
        cluster.node_infos, nodes,
    )
    assert got == [(n.name, s) for n, s in zip(nodes, expected, strict=True)]


def test_toleration_without_effect_counts() -> None:
    """An empty-effect toleration tolerates PreferNoSchedule taints too; operator Exists matches any value."""
    nodes = _nodes(("nodeA", [CPU_ARM, DISK_SSD]))
    info = make_cluster(nodes).node_infos["nodeA"]
    pod = make_pod(tolerations=[{"key": "cpu-type", "operator": "Exists"}])
    assert compute_taint_toleration_priority_map(pod, None, info) == 1


def test_node_not_found() -> None:
    with pytest.raises(PriorityError, match="node not found"):
        compute_taint_toleration_priority_map(make_pod(), None, None)
