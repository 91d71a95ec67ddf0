"""InterPodAffinityPriority (upstream ``TestInterPodAffinityPriority`` and
``TestHardPodAffinitySymmetricWeight`` in interpod_affinity_test.go)."""

from __future__ import annotations

import pytest

from policy_scheduler.cache.node_info import NodeInfo
from policy_scheduler.errors import PriorityError
from policy_scheduler.priorities import new_inter_pod_affinity_priority

from .conftest import (
    factory_args,
    host_scores,
    label_requirement,
    make_cluster,
    make_node,
    make_pod,
    pod_affinity_term,
    weighted_term,
)

RG_CHINA = {"region": "China"}
RG_INDIA = {"region": "India"}
AZ_AZ1 = {"az": "az1"}
AZ_AZ2 = {"az": "az2"}
RG_CHINA_AZ_AZ1 = {"region": "China", "az": "az1"}
S1 = {"security": "S1"}
S2 = {"security": "S2"}


def _in(*values: str) -> list[dict]:
    return [label_requirement("security", "In", list(values))]


STAY_WITH_S1_IN_REGION = {"podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [weighted_term(5, _in("S1"), "region")]}}
STAY_WITH_S2_IN_REGION = {"podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [weighted_term(6, _in("S2"), "region")]}}
AFFINITY3 = {
    "podAffinity": {
        "preferredDuringSchedulingIgnoredDuringExecution": [
            weighted_term(
                8,
                [label_requirement("security", "NotIn", ["S1"]), label_requirement("security", "In", ["S2"])],
                "region",
            ),
            weighted_term(
                2,
                [label_requirement("security", "Exists"), label_requirement("wrongkey", "DoesNotExist")],
                "region",
            ),
        ]
    }
}
HARD_AFFINITY = {
    "podAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [
            pod_affinity_term(_in("S1", "value2"), "region"),
            pod_affinity_term(
                [label_requirement("security", "Exists"), label_requirement("wrongkey", "DoesNotExist")], "region"
            ),
        ]
    }
}
AWAY_FROM_S1_IN_AZ = {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [weighted_term(5, _in("S1"), "az")]}}
AWAY_FROM_S2_IN_AZ = {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [weighted_term(5, _in("S2"), "az")]}}
STAY_WITH_S1_IN_REGION_AWAY_FROM_S2_IN_AZ = {
    "podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [weighted_term(8, _in("S1"), "region")]},
    "podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [weighted_term(5, _in("S2"), "az")]},
}


def _nodes(*labels: dict) -> list:
    return [make_node(f"machine{i}", labels=lab) for i, lab in enumerate(labels, start=1)]


def _p(node: str, labels: dict | None = None, affinity: dict | None = None):
    return make_pod(node_name=node, labels=labels, affinity=affinity)


def _pod(labels: dict | None = None, affinity: dict | None = None):
    return make_pod(labels=labels, affinity=affinity)


def _row(i, name, pod, pods, nodes, expected):
    return pytest.param(pod, pods, nodes, [(n.name, s) for n, s in zip(nodes, expected, strict=True)], id=f"{i}: {name}")


INTER_POD_AFFINITY_TABLE = [
    _row(0, "all machines are same priority as Affinity is nil", _pod(S1), [], _nodes(RG_CHINA, RG_INDIA, AZ_AZ1), (0, 0, 0)),
    _row(
        1, "Affinity: pod that matches topology key & pods in nodes will get high score",
        _pod(S1, STAY_WITH_S1_IN_REGION), [_p("machine1", S1), _p("machine2", S2), _p("machine3", S1)],
        _nodes(RG_CHINA, RG_INDIA, AZ_AZ1), (10, 0, 0),
    ),
    _row(
        2, "All the nodes that have the same topology key & label value with one of them has an existing pod "
        "that match the affinity rules, have the same score",
        _pod(None, STAY_WITH_S1_IN_REGION), [_p("machine1", S1)],
        _nodes(RG_CHINA, RG_CHINA_AZ_AZ1, RG_INDIA), (10, 10, 0),
    ),
    _row(
        3, "Affinity: nodes in one region has more matching pods comparing to other reqion",
        _pod(S1, STAY_WITH_S2_IN_REGION),
        [
            _p("machine1", S2), _p("machine1", S2), _p("machine2", S2), _p("machine3", S2), _p("machine4", S2),
            _p("machine5", S2),
        ],
        _nodes(RG_CHINA, RG_INDIA, RG_CHINA, RG_CHINA, RG_INDIA), (10, 5, 10, 10, 5),
    ),
    _row(
        4, "Affinity: different Label operators and values for pod affinity scheduling preference, "
        "including some match failures",
        _pod(S1, AFFINITY3), [_p("machine1", S1), _p("machine2", S2), _p("machine3", S1)],
        _nodes(RG_CHINA, RG_INDIA, AZ_AZ1), (2, 10, 0),
    ),
    _row(
        5, "Affinity symmetry: considred only the preferredDuringSchedulingIgnoredDuringExecution in pod affinity symmetry",
        _pod(S2), [_p("machine1", S1, STAY_WITH_S1_IN_REGION), _p("machine2", S2, STAY_WITH_S2_IN_REGION)],
        _nodes(RG_CHINA, RG_INDIA, AZ_AZ1), (0, 10, 0),
    ),
    _row(
        6, "Affinity symmetry: considred RequiredDuringSchedulingIgnoredDuringExecution in pod affinity symmetry",
        _pod(S1), [_p("machine1", S1, HARD_AFFINITY), _p("machine2", S2, HARD_AFFINITY)],
        _nodes(RG_CHINA, RG_INDIA, AZ_AZ1), (10, 10, 0),
    ),
    _row(
        7, "Anti Affinity: pod that doesnot match existing pods in node will get high score",
        _pod(S1, AWAY_FROM_S1_IN_AZ), [_p("machine1", S1), _p("machine2", S2)], _nodes(AZ_AZ1, RG_CHINA), (0, 10),
    ),
    _row(
        8, "Anti Affinity: pod that does not matches topology key & matches the pods in nodes will get higher score",
        _pod(S1, AWAY_FROM_S1_IN_AZ), [_p("machine1", S1), _p("machine2", S1)], _nodes(AZ_AZ1, RG_CHINA), (0, 10),
    ),
    _row(
        9, "Anti Affinity: one node has more matching pods comparing to other node",
        _pod(S1, AWAY_FROM_S1_IN_AZ), [_p("machine1", S1), _p("machine1", S1), _p("machine2", S2)],
        _nodes(AZ_AZ1, RG_INDIA), (0, 10),
    ),
    _row(
        10, "Anti Affinity symmetry: the existing pods in node which has anti affinity match will get high score",
        _pod(S2), [_p("machine1", S1, AWAY_FROM_S2_IN_AZ), _p("machine2", S2, AWAY_FROM_S1_IN_AZ)],
        _nodes(AZ_AZ1, AZ_AZ2), (0, 10),
    ),
    _row(
        11, "Affinity and Anti Affinity: considered only preferredDuringSchedulingIgnoredDuringExecution in both",
        _pod(S1, STAY_WITH_S1_IN_REGION_AWAY_FROM_S2_IN_AZ), [_p("machine1", S1), _p("machine2", S1)],
        _nodes(RG_CHINA, AZ_AZ1), (10, 0),
    ),
    _row(
        12, "Affinity and Anti Affinity: the pod to schedule and existing pods have the same labels",
        _pod(S1, STAY_WITH_S1_IN_REGION_AWAY_FROM_S2_IN_AZ),
        [
            _p("machine1", S1), _p("machine1", S1), _p("machine2", S1), _p("machine3", S1), _p("machine3", S1),
            _p("machine4", S1), _p("machine5", S1),
        ],
        _nodes(RG_CHINA_AZ_AZ1, RG_INDIA, RG_CHINA, RG_CHINA, RG_INDIA), (10, 4, 10, 10, 4),
    ),
    _row(
        13, "Affinity and Anti Affinity and symmetry: considered only preferredDuringSchedulingIgnoredDuringExecution",
        _pod(S1, STAY_WITH_S1_IN_REGION_AWAY_FROM_S2_IN_AZ),
        [
            _p("machine1", S1), _p("machine2", S2), _p("machine3", None, STAY_WITH_S1_IN_REGION_AWAY_FROM_S2_IN_AZ),
            _p("machine4", None, AWAY_FROM_S1_IN_AZ),
        ],
        _nodes(RG_CHINA, AZ_AZ1, RG_INDIA, AZ_AZ2), (10, 0, 10, 0),
    ),
]


@pytest.mark.parametrize(("pod", "pods", "nodes", "expected"), INTER_POD_AFFINITY_TABLE)
def test_inter_pod_affinity_priority(pod, pods, nodes, expected) -> None:
    """Upstream TestInterPodAffinityPriority (all 14 rows; hard pod affinity weight 1, the default)."""
    cluster = make_cluster(nodes, pods)
    fn = new_inter_pod_affinity_priority(factory_args(cluster))
    assert host_scores(fn(pod, cluster.node_infos, nodes)) == expected


HARD_POD_AFFINITY = {
    "podAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [
            pod_affinity_term([label_requirement("service", "In", ["S1"])], "region")
        ]
    }
}


@pytest.mark.parametrize(
    ("weight", "expected"),
    [
        pytest.param(1, (10, 10, 0), id="0: hard pod affinity symmetry weights 1 by default"),
        pytest.param(0, (0, 0, 0), id="1: hard pod affinity symmetry is closed (weights 0)"),
    ],
)
def test_hard_pod_affinity_symmetric_weight(weight: int, expected: tuple[int, ...]) -> None:
    """Upstream TestHardPodAffinitySymmetricWeight (both rows)."""
    nodes = _nodes(RG_CHINA, RG_INDIA, AZ_AZ1)
    pods = [_p("machine1", None, HARD_POD_AFFINITY), _p("machine2", None, HARD_POD_AFFINITY)]
    cluster = make_cluster(nodes, pods)
    fn = new_inter_pod_affinity_priority(factory_args(cluster, hard_pod_affinity_symmetric_weight=weight))
    result = fn(_pod({"service": "S1"}), cluster.node_infos, nodes)
    assert host_scores(result) == [(n.name, s) for n, s in zip(nodes, expected, strict=True)]


@pytest.mark.parametrize(("weight", "expected"), [(1, (3, 10, 0)), (5, (10, 6, 0)), (100, (10, 0, 0))])
def test_hard_pod_affinity_symmetric_weight_scales_required_terms(weight: int, expected: tuple[int, ...]) -> None:
    """H is added per matching *required* term of an existing pod; preferred terms add their own weight.
    machine1 (China) gets +H from a hard-affinity pod, machine2 (India) +3 from a preferred term."""
    preferred = {"podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        weighted_term(3, [label_requirement("service", "In", ["S1"])], "region")
    ]}}
    nodes = _nodes(RG_CHINA, RG_INDIA, AZ_AZ1)
    pods = [_p("machine1", None, HARD_POD_AFFINITY), _p("machine2", None, preferred)]
    cluster = make_cluster(nodes, pods)
    fn = new_inter_pod_affinity_priority(factory_args(cluster, hard_pod_affinity_symmetric_weight=weight))
    result = fn(_pod({"service": "S1"}), cluster.node_infos, nodes)
    assert [r.score for r in result] == list(expected)


def test_negative_counts_normalise_between_min_and_max() -> None:
    """counts: machine1 -5 (anti-affinity), machine2 0, machine3 +8 -> 10*(c+5)/13: 0, 3, 10."""
    nodes = _nodes(RG_CHINA_AZ_AZ1, RG_INDIA, {"region": "Mars"})
    pods = [_p("machine1", S2), _p("machine3", S1)]
    cluster = make_cluster(nodes, pods)
    fn = new_inter_pod_affinity_priority(factory_args(cluster))
    affinity = {
        "podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [weighted_term(8, _in("S1"), "region")]},
        "podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [weighted_term(5, _in("S2"), "az")]},
    }
    assert [r.score for r in fn(_pod(S1, affinity), cluster.node_infos, nodes)] == [0, 3, 10]


def test_only_candidate_nodes_receive_and_normalise_counts() -> None:
    """Existing pods on every node of the snapshot are processed, but only candidate nodes are scored."""
    nodes = _nodes(RG_CHINA, RG_INDIA, RG_INDIA)
    pods = [_p("machine1", S1), _p("machine2", S1), _p("machine2", S1)]
    cluster = make_cluster(nodes, pods)
    fn = new_inter_pod_affinity_priority(factory_args(cluster))
    affinity = {"podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [weighted_term(5, _in("S1"), "region")]}}
    result = fn(_pod(S1, affinity), cluster.node_infos, [nodes[0], nodes[2]])
    assert host_scores(result) == [("machine1", 5), ("machine3", 10)]


def test_term_namespaces_default_to_the_defining_pod() -> None:
    nodes = _nodes(RG_CHINA, RG_INDIA)
    pods = [make_pod(node_name="machine1", labels=S1, namespace="a"), make_pod(node_name="machine2", labels=S1, namespace="b")]
    cluster = make_cluster(nodes, pods)
    fn = new_inter_pod_affinity_priority(factory_args(cluster))
    affinity = {"podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [weighted_term(5, _in("S1"), "region")]}}
    assert [r.score for r in fn(make_pod(namespace="b", affinity=affinity), cluster.node_infos, nodes)] == [0, 10]
    ns_term = {"weight": 5, "podAffinityTerm": pod_affinity_term(_in("S1"), "region", namespaces=["a"])}
    affinity = {"podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [ns_term]}}
    assert [r.score for r in fn(make_pod(namespace="b", affinity=affinity), cluster.node_infos, nodes)] == [10, 0]


def test_unused_terms() -> None:
    """The incoming pod's required terms and existing pods' required anti-affinity are not scored."""
    nodes = _nodes(RG_CHINA, RG_INDIA)
    required_anti = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        pod_affinity_term(_in("S1"), "region")
    ]}}
    required = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [pod_affinity_term(_in("S1"), "region")]}}
    cluster = make_cluster(nodes, [_p("machine1", S1, required_anti), _p("machine2", S1)])
    fn = new_inter_pod_affinity_priority(factory_args(cluster))
    assert [r.score for r in fn(_pod(S1, required), cluster.node_infos, nodes)] == [0, 0]


def test_invalid_selector_fails_the_function() -> None:
    bad = {"podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        weighted_term(5, [label_requirement("security", "Bogus", ["S1"])], "region")
    ]}}
    nodes = _nodes(RG_CHINA)
    cluster = make_cluster(nodes, [_p("machine1", S2, bad)])
    fn = new_inter_pod_affinity_priority(factory_args(cluster))
    with pytest.raises(PriorityError, match="Bogus"):
        fn(_pod(S1), cluster.node_infos, nodes)
    # With no existing pod to process, the term is never evaluated.
    empty = make_cluster(nodes)
    assert [r.score for r in new_inter_pod_affinity_priority(factory_args(empty))(_pod(S1, bad), empty.node_infos, nodes)] == [0]


def test_existing_pod_whose_node_is_not_found_is_skipped() -> None:
    nodes = _nodes(RG_CHINA, RG_INDIA)
    cluster = make_cluster(nodes)
    ghost = _p("ghost", S1)
    node_infos = {
        "machine1": NodeInfo(nodes[0], [ghost]),
        "machine2": NodeInfo(nodes[1], [_p("machine2", S1)]),
        "orphan": NodeInfo(None, [_p("machine1", S1)]),
    }
    fn = new_inter_pod_affinity_priority(factory_args(cluster))
    affinity = {"podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [weighted_term(5, _in("S1"), "region")]}}
    assert [r.score for r in fn(_pod(S1, affinity), node_infos, nodes)] == [0, 10]
