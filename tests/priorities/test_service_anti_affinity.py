"""ServiceAntiAffinity, the Policy's ``serviceAntiAffinity`` priority (upstream ``TestZoneSpreadPriority``
and ``TestGetNodeClassificationByLabels`` in selector_spreading_test.go)."""

from __future__ import annotations

import pytest

from policy_scheduler.priorities import new_service_anti_affinity_priority
from policy_scheduler.priorities.service_anti_affinity import classify_nodes_by_label

from .conftest import (
    LABELS1,
    LABELS2,
    factory_args,
    labeled_node_list,
    make_cluster,
    make_node,
    make_pod,
    node_list,
    service,
)

NOZONE = {"name": "value"}
ZONE1 = {"zone": "zone1"}
ZONE2 = {"zone": "zone2"}
LABELED_NODES = {
    "machine01": NOZONE, "machine02": NOZONE,
    "machine11": ZONE1, "machine12": ZONE1,
    "machine21": ZONE2, "machine22": ZONE2,
}


def _p(node: str, labels: dict | None = None, namespace: str = ""):
    return make_pod(node_name=node, labels=labels, namespace=namespace)


def _row(i, name, pod, pods, expected, services=()):
    """``expected``: scores of machine11, machine12, machine21, machine22, machine01, machine02."""
    names = ("machine11", "machine12", "machine21", "machine22", "machine01", "machine02")
    return pytest.param(pod, pods, services, dict(zip(names, expected, strict=True)), id=f"{i}: {name}")


ZONE_SPREAD_TABLE = [
    _row(0, "nothing scheduled", make_pod(), [], (10, 10, 10, 10, 0, 0)),
    _row(1, "no services", make_pod(labels=LABELS1), [_p("machine11")], (10, 10, 10, 10, 0, 0)),
    _row(
        2, "different services", make_pod(labels=LABELS1), [_p("machine11", LABELS2)], (10, 10, 10, 10, 0, 0),
        services=[service({"key": "value"})],
    ),
    _row(
        3, "three pods, one service pod", make_pod(labels=LABELS1),
        [_p("machine01", LABELS2), _p("machine11", LABELS2), _p("machine21", LABELS1)], (10, 10, 0, 0, 0, 0),
        services=[service(LABELS1)],
    ),
    _row(
        4, "three pods, two service pods on different machines", make_pod(labels=LABELS1),
        [_p("machine11", LABELS2), _p("machine11", LABELS1), _p("machine21", LABELS1)], (5, 5, 5, 5, 0, 0),
        services=[service(LABELS1)],
    ),
    _row(
        5, "three service label match pods in different namespaces", make_pod(labels=LABELS1, namespace="default"),
        [
            _p("machine11", LABELS1), _p("machine11", LABELS1, "default"), _p("machine21", LABELS1),
            _p("machine21", LABELS1, "ns1"),
        ],
        (0, 0, 10, 10, 0, 0), services=[service(LABELS1, "default")],
    ),
    _row(
        6, "four pods, three service pods", make_pod(labels=LABELS1),
        [_p("machine11", LABELS2), _p("machine11", LABELS1), _p("machine21", LABELS1), _p("machine21", LABELS1)],
        (6, 6, 3, 3, 0, 0), services=[service(LABELS1)],
    ),
    _row(
        7, "service with partial pod label matches", make_pod(labels=LABELS1),
        [_p("machine11", LABELS2), _p("machine11", LABELS1), _p("machine21", LABELS1)], (3, 3, 6, 6, 0, 0),
        services=[service({"baz": "blah"})],
    ),
    _row(
        8, "service pod on non-zoned node", make_pod(labels=LABELS1),
        [_p("machine01", LABELS1), _p("machine11", LABELS1), _p("machine21", LABELS1), _p("machine21", LABELS1)],
        (7, 7, 5, 5, 0, 0), services=[service(LABELS1)],
    ),
]


@pytest.mark.parametrize(("pod", "pods", "services", "expected"), ZONE_SPREAD_TABLE)
def test_zone_spread_priority(pod, pods, services, expected) -> None:
    """Upstream TestZoneSpreadPriority (all 9 rows; label "zone"; upstream compares sorted lists)."""
    nodes = labeled_node_list(LABELED_NODES)
    cluster = make_cluster(nodes, pods, services=services)
    fn = new_service_anti_affinity_priority(factory_args(cluster), "zone")
    result = fn(pod, cluster.node_infos, nodes)
    assert [r.host for r in result] == [n.name for n in nodes]
    assert {r.host: r.score for r in result} == expected


def test_scores_are_aligned_to_candidate_node_order() -> None:
    """Deliberate deviation from 1.9: element *i* belongs to candidate node *i* (1.9 put labelled nodes
    first, in map order, while its caller credited scores by position)."""
    nodes = [
        make_node("u1"),
        make_node("b1", labels={"zone": "b"}),
        make_node("u2", labels={"other": "x"}),
        make_node("a1", labels={"zone": "a"}),
        make_node("b2", labels={"zone": "b"}),
    ]
    pods = [_p("a1", LABELS1), _p("b1", LABELS1), _p("b2", LABELS1), _p("u1", LABELS1)]
    cluster = make_cluster(nodes, pods, services=[service(LABELS1)])
    fn = new_service_anti_affinity_priority(factory_args(cluster), "zone")
    result = fn(make_pod(labels=LABELS1), cluster.node_infos, nodes)
    # n = 4 service pods (the one on the unlabelled u1 included); zone a holds 1, zone b holds 2.
    assert [(r.host, r.score) for r in result] == [("u1", 0), ("b1", 5), ("u2", 0), ("a1", 7), ("b2", 5)]


def test_only_first_service_and_candidate_nodes_count_per_value() -> None:
    """Only the first matching service is used; its pods on non-candidate nodes count in ``n`` but not
    in any label value's count."""
    nodes = [make_node("a1", labels={"zone": "a"}), make_node("b1", labels={"zone": "b"})]
    off_candidate = make_node("a2", labels={"zone": "a"})
    pods = [_p("a2", {"app": "x"}), _p("b1", {"app": "x"}), _p("a1", {"other": "y"}), _p("a1", {"other": "y"})]
    cluster = make_cluster([*nodes, off_candidate], pods, services=[service({"app": "x"}), service({})])
    fn = new_service_anti_affinity_priority(factory_args(cluster), "zone")
    result = fn(make_pod(labels={"app": "x"}), cluster.node_infos, nodes)
    assert [(r.host, r.score) for r in result] == [("a1", 10), ("b1", 5)]


def test_get_node_classification_by_labels() -> None:
    """Upstream TestGetNodeClassificationByLabels."""
    labelled, unlabelled = classify_nodes_by_label(labeled_node_list({"machine01": {"zone": "zoneA"}}), "zone")
    assert labelled == {"machine01": "zoneA"} and unlabelled == []
    labelled, unlabelled = classify_nodes_by_label(node_list(["machine02"]), "zone")
    assert labelled == {} and unlabelled == ["machine02"]
