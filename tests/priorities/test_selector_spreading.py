"""SelectorSpreadPriority / ServiceSpreadingPriority (upstream ``TestSelectorSpreadPriority`` and
``TestZoneSelectorSpreadPriority`` in selector_spreading_test.go)."""

from __future__ import annotations

import pytest

from policy_scheduler.algorithm import HostPriority
from policy_scheduler.errors import PriorityError
from policy_scheduler.priorities import PriorityMetadataFactory, new_selector_spread_priority
from policy_scheduler.priorities.selector_spreading import (
    LABEL_ZONE_FAILURE_DOMAIN,
    LABEL_ZONE_REGION,
    calculate_spread_priority_reduce,
    get_zone_key,
)

from .conftest import (
    LABELS1,
    LABELS2,
    factory_args,
    labeled_node_list,
    make_cluster,
    make_node,
    make_pod,
    node_list,
    prioritize,
    replica_set,
    replication_controller,
    service,
    stateful_set,
)

FOO_BAR_BAR_FOO = {"foo": "bar", "bar": "foo"}


def _p(node: str, labels: dict | None = None, namespace: str = ""):
    return make_pod(node_name=node, labels=labels, namespace=namespace)


def _three_pods():
    """``{zone1Spec, labels2}, {zone1Spec, labels1}, {zone2Spec, labels1}``, used by many rows."""
    return [_p("machine1", LABELS2), _p("machine1", LABELS1), _p("machine2", LABELS1)]


def _row(i, name, pod, pods, expected, services=(), rcs=(), rss=(), sss=()):
    return pytest.param(pod, pods, services, rcs, rss, sss, expected, id=f"{i}: {name}")


SELECTOR_SPREAD_TABLE = [
    _row(0, "nothing scheduled", make_pod(), [], (10, 10)),
    _row(1, "no services", make_pod(labels=LABELS1), [_p("machine1")], (10, 10)),
    _row(
        2, "different services", make_pod(labels=LABELS1), [_p("machine1", LABELS2)], (10, 10),
        services=[service({"key": "value"})],
    ),
    _row(
        3, "two pods, one service pod", make_pod(labels=LABELS1),
        [_p("machine1", LABELS2), _p("machine2", LABELS1)], (10, 0), services=[service(LABELS1)],
    ),
    _row(
        4, "five pods, one service pod in no namespace", make_pod(labels=LABELS1),
        [
            _p("machine1", LABELS2), _p("machine1", LABELS1, "default"), _p("machine1", LABELS1, "ns1"),
            _p("machine2", LABELS1), _p("machine2", LABELS2),
        ],
        (10, 0), services=[service(LABELS1)],
    ),
    _row(
        5, "four pods, one service pod in default namespace", make_pod(labels=LABELS1, namespace="default"),
        [
            _p("machine1", LABELS1), _p("machine1", LABELS1, "ns1"), _p("machine2", LABELS1, "default"),
            _p("machine2", LABELS2),
        ],
        (10, 0), services=[service(LABELS1, "default")],
    ),
    _row(
        6, "five pods, one service pod in specific namespace", make_pod(labels=LABELS1, namespace="ns1"),
        [
            _p("machine1", LABELS1), _p("machine1", LABELS1, "default"), _p("machine1", LABELS1, "ns2"),
            _p("machine2", LABELS1, "ns1"), _p("machine2", LABELS2),
        ],
        (10, 0), services=[service(LABELS1, "ns1")],
    ),
    _row(
        7, "three pods, two service pods on different machines", make_pod(labels=LABELS1), _three_pods(), (0, 0),
        services=[service(LABELS1)],
    ),
    _row(
        8, "four pods, three service pods", make_pod(labels=LABELS1),
        [_p("machine1", LABELS2), _p("machine1", LABELS1), _p("machine2", LABELS1), _p("machine2", LABELS1)],
        (5, 0), services=[service(LABELS1)],
    ),
    _row(
        9, "service with partial pod label matches", make_pod(labels=LABELS1), _three_pods(), (0, 5),
        services=[service({"baz": "blah"})],
    ),
    _row(
        10, "service with partial pod label matches with service and replication controller",
        make_pod(labels=LABELS1), _three_pods(), (0, 5),
        services=[service({"baz": "blah"})], rcs=[replication_controller({"foo": "bar"})],
    ),
    _row(
        11, "service with partial pod label matches with service and replica set",
        make_pod(labels=LABELS1), _three_pods(), (0, 5),
        services=[service({"baz": "blah"})], rss=[replica_set({"foo": "bar"})],
    ),
    _row(
        12, "service with partial pod label matches with service and replica set (StatefulSet)",
        make_pod(labels=LABELS1), _three_pods(), (0, 5),
        services=[service({"baz": "blah"})], sss=[stateful_set({"foo": "bar"})],
    ),
    _row(
        13, "disjoined service and replication controller should be treated equally",
        make_pod(labels=FOO_BAR_BAR_FOO), _three_pods(), (0, 5),
        services=[service({"bar": "foo"})], rcs=[replication_controller({"foo": "bar"})],
    ),
    _row(
        14, "disjoined service and replica set should be treated equally",
        make_pod(labels=FOO_BAR_BAR_FOO), _three_pods(), (0, 5),
        services=[service({"bar": "foo"})], rss=[replica_set({"foo": "bar"})],
    ),
    _row(
        15, "disjoined service and replica set should be treated equally (StatefulSet)",
        make_pod(labels=FOO_BAR_BAR_FOO), _three_pods(), (0, 5),
        services=[service({"bar": "foo"})], sss=[stateful_set({"foo": "bar"})],
    ),
    _row(
        16, "Replication controller with partial pod label matches", make_pod(labels=LABELS1), _three_pods(), (0, 0),
        rcs=[replication_controller({"foo": "bar"})],
    ),
    _row(
        17, "Replica set with partial pod label matches", make_pod(labels=LABELS1), _three_pods(), (0, 0),
        rss=[replica_set({"foo": "bar"})],
    ),
    _row(
        18, "StatefulSet with partial pod label matches", make_pod(labels=LABELS1), _three_pods(), (0, 0),
        sss=[stateful_set({"foo": "bar"})],
    ),
    _row(
        19, "Another replication controller with partial pod label matches", make_pod(labels=LABELS1),
        _three_pods(), (0, 5), rcs=[replication_controller({"baz": "blah"})],
    ),
    _row(
        20, "Another replication set with partial pod label matches", make_pod(labels=LABELS1),
        _three_pods(), (0, 5), rss=[replica_set({"baz": "blah"})],
    ),
    _row(
        21, "Another stateful set with partial pod label matches", make_pod(labels=LABELS1),
        _three_pods(), (0, 5), sss=[stateful_set({"baz": "blah"})],
    ),
]


@pytest.mark.parametrize("with_metadata", [True, False], ids=["meta", "meta=nil"])
@pytest.mark.parametrize(("pod", "pods", "services", "rcs", "rss", "sss", "expected"), SELECTOR_SPREAD_TABLE)
def test_selector_spread_priority(pod, pods, services, rcs, rss, sss, expected, with_metadata: bool) -> None:
    """Upstream TestSelectorSpreadPriority (all 22 rows). Upstream runs map + reduce with the metadata
    producer's output; without metadata the map step computes the same selectors from the listers."""
    nodes = node_list(["machine1", "machine2"])
    cluster = make_cluster(nodes, pods, services=services, rcs=rcs, replica_sets=rss, stateful_sets=sss)
    map_fn, reduce_fn = new_selector_spread_priority(factory_args(cluster))
    meta = PriorityMetadataFactory(cluster).get_metadata(pod, cluster.node_infos) if with_metadata else None
    got = prioritize(map_fn, reduce_fn, pod, meta, cluster.node_infos, nodes)
    assert got == [("machine1", expected[0]), ("machine2", expected[1])]


M1Z1, M1Z2, M2Z2 = "machine1.zone1", "machine1.zone2", "machine2.zone2"
M1Z3, M2Z3, M3Z3 = "machine1.zone3", "machine2.zone3", "machine3.zone3"
ZONE_NODES = {
    M1Z1: {LABEL_ZONE_FAILURE_DOMAIN: "zone1"},
    M1Z2: {LABEL_ZONE_FAILURE_DOMAIN: "zone2"},
    M2Z2: {LABEL_ZONE_FAILURE_DOMAIN: "zone2"},
    M1Z3: {LABEL_ZONE_FAILURE_DOMAIN: "zone3"},
    M2Z3: {LABEL_ZONE_FAILURE_DOMAIN: "zone3"},
    M3Z3: {LABEL_ZONE_FAILURE_DOMAIN: "zone3"},
}
Z_LABELS1 = {"label1": "l1", "baz": "blah"}
Z_LABELS2 = {"label2": "l2", "baz": "blah"}
ALL_MAX = (10, 10, 10, 10, 10, 10)


def _zrow(i, name, pod, pods, expected, services=(), rcs=()):
    return pytest.param(pod, pods, services, rcs, expected, id=f"{i}: {name}")


def _bp(node: str, labels: dict | None):
    """``buildPod(nodeName, labels, nil)``."""
    return make_pod(node_name=node, labels=labels)


ZONE_SELECTOR_SPREAD_TABLE = [
    _zrow(0, "nothing scheduled", make_pod(), [], ALL_MAX),
    _zrow(1, "no services", _bp("", Z_LABELS1), [_bp(M1Z1, None)], ALL_MAX),
    _zrow(
        2, "different services", _bp("", Z_LABELS1), [_bp(M1Z1, Z_LABELS2)], ALL_MAX,
        services=[service({"key": "value"})],
    ),
    _zrow(
        3, "two pods, 0 matching", _bp("", Z_LABELS1), [_bp(M1Z1, Z_LABELS2), _bp(M1Z2, Z_LABELS2)], ALL_MAX,
        services=[service(Z_LABELS1)],
    ),
    _zrow(
        4, "two pods, 1 matching (in z2)", _bp("", Z_LABELS1), [_bp(M1Z1, Z_LABELS2), _bp(M1Z2, Z_LABELS1)],
        (10, 0, 3, 10, 10, 10), services=[service(Z_LABELS1)],
    ),
    _zrow(
        5, "five pods, 3 matching (z2=2, z3=1)", _bp("", Z_LABELS1),
        [
            _bp(M1Z1, Z_LABELS2), _bp(M1Z2, Z_LABELS1), _bp(M2Z2, Z_LABELS1), _bp(M1Z3, Z_LABELS2),
            _bp(M2Z3, Z_LABELS1),
        ],
        (10, 0, 0, 6, 3, 6), services=[service(Z_LABELS1)],
    ),
    _zrow(
        6, "four pods, 3 matching (z1=1, z2=1, z3=1)", _bp("", Z_LABELS1),
        [_bp(M1Z1, Z_LABELS1), _bp(M1Z2, Z_LABELS1), _bp(M2Z2, Z_LABELS2), _bp(M1Z3, Z_LABELS1)],
        (0, 0, 3, 0, 3, 3), services=[service(Z_LABELS1)],
    ),
    _zrow(
        7, "four pods, 3 matching (z1=1, z2=1, z3=1), other order", _bp("", Z_LABELS1),
        [_bp(M1Z1, Z_LABELS1), _bp(M1Z2, Z_LABELS1), _bp(M1Z3, Z_LABELS1), _bp(M2Z2, Z_LABELS2)],
        (0, 0, 3, 0, 3, 3), services=[service(Z_LABELS1)],
    ),
    _zrow(
        8, "Replication controller spreading (z1=0, z2=1, z3=2)", _bp("", Z_LABELS1),
        [_bp(M1Z3, Z_LABELS1), _bp(M1Z2, Z_LABELS1), _bp(M1Z3, Z_LABELS1)],
        (10, 5, 6, 0, 3, 3), rcs=[replication_controller(Z_LABELS1)],
    ),
]


@pytest.mark.parametrize(("pod", "pods", "services", "rcs", "expected"), ZONE_SELECTOR_SPREAD_TABLE)
def test_zone_selector_spread_priority(pod, pods, services, rcs, expected) -> None:
    """Upstream TestZoneSelectorSpreadPriority (all 9 rows; upstream compares sorted lists)."""
    nodes = labeled_node_list(ZONE_NODES)
    cluster = make_cluster(nodes, pods, services=services, rcs=rcs)
    map_fn, reduce_fn = new_selector_spread_priority(factory_args(cluster))
    meta = PriorityMetadataFactory(cluster).get_metadata(pod, cluster.node_infos)
    got = dict(prioritize(map_fn, reduce_fn, pod, meta, cluster.node_infos, nodes))
    assert got == dict(zip(ZONE_NODES, expected, strict=True))


@pytest.mark.parametrize(
    ("labels", "key"),
    [
        (None, ""),
        ({}, ""),
        ({"other": "x"}, ""),
        ({LABEL_ZONE_REGION: "r"}, "r:\x00:"),
        ({LABEL_ZONE_FAILURE_DOMAIN: "z"}, ":\x00:z"),
        ({LABEL_ZONE_REGION: "r", LABEL_ZONE_FAILURE_DOMAIN: "z"}, "r:\x00:z"),
        ({LABEL_ZONE_REGION: "", LABEL_ZONE_FAILURE_DOMAIN: ""}, ""),
    ],
)
def test_zone_key(labels, key: str) -> None:
    """``GetZoneKey``: region, colon, NUL, colon, zone; "" when both labels are missing or empty."""
    assert get_zone_key(make_node("n", labels=labels)) == key
    assert get_zone_key(None) == ""


def test_region_only_nodes_form_zones() -> None:
    """A node with only a region label still has a zone key; an unlabelled node stays out of the zones."""
    nodes = [
        make_node("a", labels={LABEL_ZONE_REGION: "r1"}),
        make_node("b", labels={LABEL_ZONE_REGION: "r1"}),
        make_node("c", labels={LABEL_ZONE_REGION: "r2"}),
        make_node("d"),
    ]
    cluster = make_cluster(nodes)
    results = [HostPriority("a", 2), HostPriority("b", 0), HostPriority("c", 1), HostPriority("d", 0)]
    calculate_spread_priority_reduce(None, None, cluster.node_infos, results)
    # a: node 0, zone r1 (2 of max 2) -> 0;  b: node 10, zone r1 -> 10 * (1 - 2/3) = 3.33 -> 3;
    # c: node 5, zone r2 (1 of 2) -> 5 * (1 - 2/3) + 2/3 * 5 = 5.0;  d: no zone key, node score 10.
    assert [(r.host, r.score) for r in results] == [("a", 0), ("b", 3), ("c", 5), ("d", 10)]


def test_pods_being_deleted_and_other_namespaces_are_not_counted() -> None:
    nodes = node_list(["machine1", "machine2"])
    pods = [
        make_pod(node_name="machine1", labels=LABELS1, deletion_timestamp="2018-01-01T00:00:00Z"),
        make_pod(node_name="machine1", labels=LABELS1, namespace="other"),
        make_pod(node_name="machine2", labels=LABELS1),
    ]
    cluster = make_cluster(nodes, pods, services=[service(LABELS1)])
    map_fn, reduce_fn = new_selector_spread_priority(factory_args(cluster))
    pod = make_pod(labels=LABELS1)
    assert [map_fn(pod, None, cluster.node_infos[n.name]) for n in nodes] == [0, 1]
    assert prioritize(map_fn, reduce_fn, pod, None, cluster.node_infos, nodes) == [("machine1", 10), ("machine2", 0)]


def test_service_spreading_quirk() -> None:
    """ServiceSpreadingPriority (services_only=True): with metadata it uses the metadata's selectors,
    which include the RC's, so it scores exactly like SelectorSpreadPriority (the 1.9 quirk); only
    without metadata does it count Service-selected pods alone."""
    nodes = node_list(["machine1", "machine2"])
    pods = [make_pod(node_name="machine1", labels={"app": "a", "rc": "x"}), make_pod(node_name="machine2", labels={"rc": "x"})]
    cluster = make_cluster(nodes, pods, services=[service({"app": "a"})], rcs=[replication_controller({"rc": "x"})])
    pod = make_pod(labels={"app": "a", "rc": "x"})
    meta = PriorityMetadataFactory(cluster).get_metadata(pod)
    spread = new_selector_spread_priority(factory_args(cluster))
    service_spread = new_selector_spread_priority(factory_args(cluster), services_only=True)
    with_meta = prioritize(*service_spread, pod, meta, cluster.node_infos, nodes)
    assert with_meta == prioritize(*spread, pod, meta, cluster.node_infos, nodes)
    assert with_meta == [("machine1", 0), ("machine2", 0)]
    assert prioritize(*service_spread, pod, None, cluster.node_infos, nodes) == [("machine1", 0), ("machine2", 10)]
    assert prioritize(*spread, pod, None, cluster.node_infos, nodes) == [("machine1", 0), ("machine2", 0)]


def test_node_not_found() -> None:
    map_fn, _ = new_selector_spread_priority(factory_args(make_cluster()))
    with pytest.raises(PriorityError, match="node not found"):
        map_fn(make_pod(), None, None)
