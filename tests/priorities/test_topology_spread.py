"""PodTopologySpread, the score: upstream's ``scoring_test.go`` ``TestPodTopologySpreadScore`` rows (1.26
tag; node inclusion policies and matchLabelKeys on, as a server that keeps the fields has them). The
expectations are upstream's 0..100 scores converted to 1.9's 0..10 by the documented formula
``score * 10 / 100`` (Go integer division); each row is checked on the reference function and on the
vectorised form. Plus: no system-default constraints, the 1.9 rules, the conversion itself."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from policy_scheduler.errors import PriorityError
from policy_scheduler.fastpath.columns import NodeColumns
from policy_scheduler.fastpath.topology_spread import score_form
from policy_scheduler.features import FeatureGates, Rules
from policy_scheduler.model.pod import Pod
from policy_scheduler.priorities.topology_spread import new_pod_topology_spread_priority, to_max_priority

from ..predicates.conftest import make_args, make_cluster, make_node
from ..predicates.test_topology_spread import BAR, TAINTS, existing, pod, spread

HOST = "kubernetes.io/hostname"


def hn(name: str, zone: str | None = None, **extra: str):
    labels = {HOST: name, **extra}
    if zone is not None:
        labels["zone"] = zone
    return make_node(name, labels)


def nn(name: str, taints: list | None = None, **extra: str):
    return make_node(name, {"node": name, **extra}, taints=taints or ())


def ps(spec: str) -> list[Pod]:
    """``"a:foo a:foo b:foo,bar"``: one pod per item on ``node-<x>`` with those labels."""
    out = []
    for i, item in enumerate(spec.split()):
        node, _, labels = item.partition(":")
        out.append(existing(f"p{i}-{node}", f"node-{node}", *labels.split(",")))
    return out


SOFT = "ScheduleAnyway"
ABCD = [hn("node-a"), hn("node-b"), hn("node-c"), hn("node-d")]
ABCD_ZONES = [hn("node-a", "zone1"), hn("node-b", "zone1"), hn("node-c", "zone2"), hn("node-d", "zone2")]
ABXY_ZONES = [hn("node-a", "zone1"), hn("node-b", "zone1"), hn("node-x", "zone2"), hn("node-y", "zone2")]
POLICY_NODES = [nn("node-a", foo=""), nn("node-b", foo=""), nn("node-c")]
POLICY_PODS = ps("a:foo a:foo b:foo c:foo")

# (name, pod, candidate nodes, failed nodes, existing pods, upstream scores 0..100 in candidate order)
ROWS: list[tuple[str, Pod, list, list, list[Pod], list[int]]] = [
    ("one constraint on node, no existing pods", pod("foo", constraints=[spread(1, HOST, SOFT)]),
     [hn("node-a"), hn("node-b")], [], [], [100, 100]),
    ("one constraint on node, only one node is candidate", pod("foo", constraints=[spread(1, HOST, SOFT)]),
     [hn("node-a")], [hn("node-b")], ps("a:foo a:foo b:foo"), [100]),
    ("one constraint on node, all nodes have the same number of matching pods",
     pod("foo", constraints=[spread(1, HOST, SOFT)]), [hn("node-a"), hn("node-b")], [], ps("a:foo b:foo"), [100, 100]),
    ("one constraint on node, all 4 nodes are candidates", pod("foo", constraints=[spread(1, HOST, SOFT)]),
     ABCD, [], ps("a:foo a:foo b:foo d:foo d:foo d:foo"), [20, 60, 100, 0]),
    ("one constraint on node, null selector", pod("foo", constraints=[spread(1, HOST, SOFT, selector=None)]),
     ABCD, [], ps("a:foo a:foo b:foo d:foo d:foo d:foo"), [100, 100, 100, 100]),
    ("one constraint on node, all 4 nodes are candidates, maxSkew=2", pod("foo", constraints=[spread(2, HOST, SOFT)]),
     ABCD, [], ps("a:foo a:foo b:foo d:foo d:foo d:foo"), [33, 66, 100, 16]),
    ("one constraint on node, all 4 nodes are candidates, maxSkew=3", pod("foo", constraints=[spread(3, HOST, SOFT)]),
     ABCD, [], ps("a:foo a:foo a:foo a:foo b:foo b:foo b:foo c:foo c:foo d:foo"), [44, 66, 77, 100]),
    ("one constraint on node, 3 out of 4 nodes are candidates", pod("foo", constraints=[spread(1, HOST, SOFT)]),
     [hn("node-a"), hn("node-b"), hn("node-x")], [hn("node-y")],
     ps("a:foo a:foo a:foo a:foo b:foo b:foo x:foo y:foo y:foo y:foo"), [33, 83, 100]),
    ("one constraint on node, 3 out of 4 nodes are candidates, one node doesn't match topology key",
     pod("foo", constraints=[spread(1, HOST, SOFT)]),
     [hn("node-a"), make_node("node-b", {"n": "node-b"}), hn("node-x")], [hn("node-y")],
     ps("a:foo a:foo a:foo a:foo b:foo b:foo x:foo y:foo y:foo y:foo"), [16, 0, 100]),
    ("one constraint on zone, 3 out of 4 nodes are candidates", pod("foo", constraints=[spread(1, "zone", SOFT)]),
     [hn("node-a", "zone1"), hn("node-b", "zone1"), hn("node-x", "zone2")], [hn("node-y", "zone2")],
     ps("a:foo a:foo a:foo a:foo b:foo b:foo x:foo y:foo y:foo y:foo"), [75, 75, 100]),
    ("two Constraints on zone and node, 2 out of 4 nodes are candidates",
     pod("foo", constraints=[spread(1, "zone", SOFT), spread(1, HOST, SOFT)]),
     [hn("node-a", "zone1"), hn("node-x", "zone2")], [hn("node-b", "zone1"), hn("node-y", "zone2")],
     ps("a:foo a:foo b:foo x:foo x:foo y:foo y:foo y:foo y:foo"), [100, 63]),
    ("two Constraints on zone and node, with different labelSelectors",
     pod("foo", "bar", constraints=[spread(1, "zone", SOFT), spread(1, HOST, SOFT, selector=BAR)]),
     ABXY_ZONES, [], ps("a:foo b:foo,bar y:foo y:bar"), [60, 20, 100, 60]),
    ("two Constraints on zone and node, with different labelSelectors, some nodes have 0 pods",
     pod("foo", "bar", constraints=[spread(1, "zone", SOFT), spread(1, HOST, SOFT, selector=BAR)]),
     ABXY_ZONES, [], ps("b:bar x:foo y:foo,bar"), [100, 60, 40, 0]),
    ("two Constraints on zone and node, with different labelSelectors, 3 out of 4 nodes are candidates",
     pod("foo", "bar", constraints=[spread(1, "zone", SOFT), spread(1, HOST, SOFT, selector=BAR)]),
     ABXY_ZONES[:3], ABXY_ZONES[3:], ps("a:foo b:foo,bar y:foo y:bar"), [50, 25, 100]),
    ("existing pods in a different namespace do not count", pod("foo", constraints=[spread(1, HOST, SOFT)]),
     [hn("node-a"), hn("node-b")], [],
     [existing("p-a1", "node-a", "foo", namespace="ns1"), *ps("a:foo b:foo b:foo")], [100, 33]),
    ("terminating Pods should be excluded", pod("foo", constraints=[spread(1, HOST, SOFT)]),
     [hn("node-a"), hn("node-b")], [],
     [existing("p-a", "node-a", "foo", terminating=True), existing("p-b", "node-b", "foo")], [100, 0]),
    ("minDomains has no effect when ScheduleAnyway", pod("foo", constraints=[spread(2, "node", SOFT, min_domains=10)]),
     [nn("node-a"), nn("node-b"), nn("node-c")], [], ps("a:foo a:foo b:foo b:foo c:foo"), [75, 75, 100]),
    ("NodeAffinityPolicy honoed with labelSelectors",
     pod("foo", constraints=[spread(1, "node", SOFT)], node_selector={"foo": ""}), POLICY_NODES, [], POLICY_PODS,
     [0, 33, 100]),
    ("NodeAffinityPolicy ignored with labelSelectors",
     pod("foo", constraints=[spread(1, "node", SOFT, affinity_policy="Ignore")], node_selector={"foo": ""}),
     POLICY_NODES, [], POLICY_PODS, [66, 100, 100]),
    ("NodeAffinityPolicy honoed with nodeAffinity",
     pod("foo", constraints=[spread(1, "node", SOFT)], affinity_in=("foo", [""])), POLICY_NODES, [], POLICY_PODS,
     [0, 33, 100]),
    ("NodeAffinityPolicy ignored with nodeAffinity",
     pod("foo", constraints=[spread(1, "node", SOFT, affinity_policy="Ignore")], affinity_in=("foo", [""])),
     POLICY_NODES, [], POLICY_PODS, [66, 100, 100]),
    ("NodeTaintsPolicy honored", pod("foo", constraints=[spread(1, "node", SOFT, taints_policy="Honor")]),
     [nn("node-a"), nn("node-b"), nn("node-c", taints=TAINTS)], [], POLICY_PODS, [0, 33, 100]),
    ("NodeTaintsPolicy ignored", pod("foo", constraints=[spread(1, "node", SOFT)]),
     [nn("node-a"), nn("node-b"), nn("node-c", taints=TAINTS)], [], POLICY_PODS, [66, 100, 100]),
    ("matchLabelKeys ANDed with LabelSelector when LabelSelector is empty",
     pod("foo", "bar", constraints=[spread(1, "zone", SOFT, selector={}, match_label_keys=["foo"]),
                                    spread(1, HOST, SOFT, selector={}, match_label_keys=["bar"])]),
     ABCD_ZONES, [], ps("a:foo b:foo,bar c:foo c:bar"), [60, 20, 60, 100]),
    ("matchLabelKeys ANDed with LabelSelector when LabelSelector isn't empty",
     pod("foo", "bar", "baz", constraints=[spread(1, "zone", SOFT), spread(1, HOST, SOFT, selector=BAR,
                                                                          match_label_keys=["baz"])]),
     ABCD_ZONES, [], ps("a:foo b:foo,bar,baz c:foo c:bar c:bar,baz"), [60, 20, 60, 100]),
]
# Not ported: "system defaulting, ..." (system-default constraints are not applied, see below) and
# "matchLabelKeys ignored when feature gate disabled" (a server that keeps matchLabelKeys has the gate on).


def reference_scores(the_pod, candidates, failed, pods, **gates_kw) -> list[int]:
    cluster = make_cluster([*candidates, *failed], pods)
    args = make_args(cluster)
    if gates_kw.get("rules") is not None:
        args.feature_gates = FeatureGates(rules=gates_kw["rules"])
    fn = new_pod_topology_spread_priority(args)
    return [hp.score for hp in fn(the_pod, cluster.node_infos, list(candidates))]


def vectorised_scores(the_pod, candidates, failed, pods, cluster_rules=True) -> list[int]:
    cluster = make_cluster([*candidates, *failed], pods)
    cols = NodeColumns(cluster)
    rows = np.array(sorted(cols.index[n.name] for n in candidates), dtype=np.int64)
    scores = score_form(cluster_rules)(the_pod, None, cols, rows)
    by_name = {cols.names[int(r)]: int(s) for r, s in zip(rows, scores)}
    return [by_name[n.name] for n in candidates]


@pytest.mark.parametrize("name,the_pod,candidates,failed,pods,want", ROWS, ids=[r[0] for r in ROWS])
def test_upstream_rows(name, the_pod, candidates, failed, pods, want):
    converted = [s * 10 // 100 for s in want]
    assert reference_scores(the_pod, candidates, failed, pods) == converted
    assert vectorised_scores(the_pod, candidates, failed, pods) == converted


def test_conversion_truncates_as_go():
    assert [to_max_priority(s) for s in (0, 9, 10, 16, 19, 33, 66, 99, 100)] == [0, 0, 1, 1, 1, 3, 6, 9, 10]


def test_no_system_default_constraints():
    """Upstream's row "system defaulting, nodes don't have zone, pods match service" scores 44/66/77/100
    through the default profile's defaultConstraints; a pod without constraints scores 0 everywhere here."""
    plain = Pod({"metadata": {"name": "p", "namespace": "default", "labels": {"foo": ""}},
                 "spec": {"containers": [{"name": "c"}]}})
    existing_pods = ps("a:foo a:foo a:foo a:foo b:foo b:foo b:foo c:foo c:foo d:foo")
    assert reference_scores(plain, ABCD, [], existing_pods) == [0, 0, 0, 0]
    assert vectorised_scores(plain, ABCD, [], existing_pods) == [0, 0, 0, 0]


def test_the_1_9_rules_score_zero():
    name, the_pod, candidates, failed, pods, _ = ROWS[3]
    assert reference_scores(the_pod, candidates, failed, pods, rules=Rules.V1_9) == [0, 0, 0, 0]
    assert vectorised_scores(the_pod, candidates, failed, pods, cluster_rules=False) == [0, 0, 0, 0]


def test_do_not_schedule_constraints_do_not_score():
    the_pod = pod("foo", constraints=[spread(1, HOST)])
    assert reference_scores(the_pod, ABCD, [], ps("a:foo a:foo")) == [0, 0, 0, 0]


def test_a_selector_that_cannot_be_built_is_an_error():
    bad: dict[str, Any] = {"matchExpressions": [{"key": "foo", "operator": "Exists", "values": ["x"]}]}
    the_pod = pod("foo", constraints=[spread(1, HOST, SOFT, selector=bad)])
    with pytest.raises(PriorityError, match="obtaining pod's soft topology spread constraints"):
        reference_scores(the_pod, ABCD, [], [])
    cluster = make_cluster(ABCD, [])
    cols = NodeColumns(cluster)
    assert score_form(True)(the_pod, None, cols, np.arange(4)) is None  # declined: the reference decides
