"""PodTopologySpread, the filter: upstream's ``filtering_test.go`` ``TestSingleConstraint`` and
``TestMultipleConstraints`` rows (1.26 tag, node inclusion policies on as the 1.26 server has them), each
checked with the metadata, without it, and in the vectorised form; plus the incremental updates the
preemption and nominated-pod passes rely on, and the 1.9 rules switch."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from policy_scheduler.errors import PredicateError
from policy_scheduler.fastpath.columns import NodeColumns
from policy_scheduler.fastpath.topology_spread import filter_form
from policy_scheduler.features import FeatureGates, Rules
from policy_scheduler.model.pod import Pod
from policy_scheduler.predicates.metadata import PredicateMetadataFactory
from policy_scheduler.predicates.topology_spread import (
    ERR_CONSTRAINTS_NOT_MATCH,
    ERR_NODE_LABEL_NOT_MATCH,
    new_pod_topology_spread_predicate,
)

from .conftest import make_args, make_cluster, make_node

S, U, UU = "Success", "Unschedulable", "UnschedulableAndUnresolvable"
FOO = {"matchExpressions": [{"key": "foo", "operator": "Exists"}]}
BAR = {"matchExpressions": [{"key": "bar", "operator": "Exists"}]}
TAINTS = [{"key": "node.kubernetes.io/unschedulable", "value": "", "effect": "NoSchedule"}]


def spread(max_skew: int, key: str, when: str = "DoNotSchedule", selector: Any = FOO, min_domains: int | None = None,
           affinity_policy: str | None = None, taints_policy: str | None = None,
           match_label_keys: list[str] | None = None) -> dict[str, Any]:
    c: dict[str, Any] = {"maxSkew": max_skew, "topologyKey": key, "whenUnsatisfiable": when}
    if selector is not None:
        c["labelSelector"] = selector
    if min_domains is not None:
        c["minDomains"] = min_domains
    if affinity_policy is not None:
        c["nodeAffinityPolicy"] = affinity_policy
    if taints_policy is not None:
        c["nodeTaintsPolicy"] = taints_policy
    if match_label_keys is not None:
        c["matchLabelKeys"] = match_label_keys
    return c


def pod(*labels: str, constraints: list[dict[str, Any]], name: str = "p", node_selector: dict | None = None,
        affinity_in: tuple[str, list[str]] | None = None, affinity_not_in: tuple[str, list[str]] | None = None) -> Pod:
    spec: dict[str, Any] = {"containers": [{"name": "c"}], "topologySpreadConstraints": constraints}
    if node_selector is not None:
        spec["nodeSelector"] = node_selector
    for term, op in ((affinity_in, "In"), (affinity_not_in, "NotIn")):
        if term is not None:
            spec["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [{"key": term[0], "operator": op, "values": term[1]}]}]}}}
    return Pod({"metadata": {"name": name, "namespace": "default", "labels": {k: "" for k in labels}}, "spec": spec})


def existing(name: str, node: str, *labels: str, namespace: str = "default", terminating: bool = False) -> Pod:
    meta: dict[str, Any] = {"name": name, "namespace": namespace, "uid": f"uid-{namespace}-{name}",
                            "labels": {k: "" for k in labels}}
    if terminating:
        meta["deletionTimestamp"] = "2020-01-01T00:00:00Z"
    return Pod({"metadata": meta, "spec": {"nodeName": node, "containers": [{"name": "c"}]}})


def zn(name: str, zone: str | None = None, zone_key: str = "zone", taints: list | None = None, **extra: str):
    labels = {"node": name, **extra}
    if zone is not None:
        labels[zone_key] = zone
    return make_node(name, labels, taints=taints or ())


def n(name: str, taints: list | None = None, **extra: str):
    return make_node(name, {"node": name, **extra}, taints=taints or ())


FOUR = [zn("node-a", "zone1"), zn("node-b", "zone1"), zn("node-x", "zone2"), zn("node-y", "zone2")]
A2_B1_Y3 = [existing("p-a1", "node-a", "foo"), existing("p-a2", "node-a", "foo"), existing("p-b1", "node-b", "foo"),
            existing("p-y1", "node-y", "foo"), existing("p-y2", "node-y", "foo"), existing("p-y3", "node-y", "foo")]
POLICY_NODES = [n("node-a", foo=""), n("node-b", foo=""), n("node-x", foo=""), n("node-y")]
POLICY_PODS = [existing("p-b1", "node-a", "foo"), existing("p-b2", "node-b", "foo"), existing("p-y1", "node-y", "foo")]
TAINT_NODES = [n("node-a", foo=""), n("node-b", foo=""), n("node-x", foo=""), n("node-y", taints=TAINTS)]
MIN_NODES = [n("node-a"), n("node-b"), n("node-c")]
MIN_PODS = [existing("p-a1", "node-a", "foo"), existing("p-a2", "node-a", "foo"), existing("p-b1", "node-b", "foo"),
            existing("p-b2", "node-b", "foo"), existing("p-c1", "node-c", "foo")]
ZONE_21 = [existing("p-b1", "node-a", "foo"), existing("p-b2", "node-b", "foo"), existing("p-y1", "node-y", "foo")]

# (name, pod, nodes, existing pods, {node: expected code}) -- upstream TestSingleConstraint
SINGLE = [
    ("no existing pods", pod("foo", constraints=[spread(1, "zone")]), FOUR, [],
     dict(zip(["node-a", "node-b", "node-x", "node-y"], [S, S, S, S]))),
    ("no existing pods, incoming pod doesn't match itself", pod("foo", constraints=[spread(1, "zone", selector=BAR)]),
     FOUR, [], {"node-a": S, "node-b": S, "node-x": S, "node-y": S}),
    ("existing pods in a different namespace do not count", pod("foo", constraints=[spread(1, "zone")]), FOUR,
     [existing("p-a1", "node-a", "foo", namespace="ns1"), existing("p-b1", "node-a", "foo", namespace="ns2"),
      existing("p-x1", "node-x", "foo"), existing("p-y1", "node-y", "foo")],
     {"node-a": S, "node-b": S, "node-x": U, "node-y": U}),
    ("existing pods do not match null selector", pod("foo", constraints=[spread(1, "zone", selector=None)]), FOUR,
     [existing("p-x1", "node-x", "foo"), existing("p-y1", "node-y", "foo")],
     {"node-a": S, "node-b": S, "node-x": S, "node-y": S}),
    ("pods spread across zones as 3/3, all nodes fit", pod("foo", constraints=[spread(1, "zone")]), FOUR, A2_B1_Y3,
     {"node-a": S, "node-b": S, "node-x": S, "node-y": S}),
    ("pods spread across zones as 1/2 due to absence of label 'zone' on node-b", pod("foo", constraints=[spread(1, "zone")]),
     [zn("node-a", "zone1"), zn("node-b", "zone1", zone_key="zon"), zn("node-x", "zone2"), zn("node-y", "zone2")],
     [existing("p-a1", "node-a", "foo"), existing("p-b1", "node-b", "foo"), existing("p-x1", "node-x", "foo"),
      existing("p-y1", "node-y", "foo")],
     {"node-a": S, "node-b": UU, "node-x": U, "node-y": U}),
    ("pod cannot be scheduled as all nodes don't have label 'rack'", pod("foo", constraints=[spread(1, "rack")]),
     [zn("node-a", "zone1"), zn("node-x", "zone2")], [], {"node-a": UU, "node-x": UU}),
    ("pods spread across nodes as 2/1/0/3, only node-x fits", pod("foo", constraints=[spread(1, "node")]), FOUR, A2_B1_Y3,
     {"node-a": U, "node-b": U, "node-x": S, "node-y": U}),
    ("pods spread across nodes as 2/1/0/3, maxSkew is 2, node-b and node-x fit", pod("foo", constraints=[spread(2, "node")]),
     FOUR, A2_B1_Y3, {"node-a": U, "node-b": S, "node-x": S, "node-y": U}),
    ("pods spread across nodes as 2/1/0/3, but pod doesn't match itself", pod("bar", constraints=[spread(1, "node")]),
     FOUR, A2_B1_Y3, {"node-a": U, "node-b": S, "node-x": S, "node-y": U}),
    ("incoming pod has nodeAffinity, pods spread as 2/~1~/~0~/3, hence node-a fits",
     pod("foo", constraints=[spread(1, "node")], affinity_in=("node", ["node-a", "node-y"])), FOUR, A2_B1_Y3,
     {"node-a": S, "node-b": S, "node-x": S, "node-y": U}),
    ("terminating Pods should be excluded", pod("foo", constraints=[spread(1, "node")]), [n("node-a"), n("node-b")],
     [existing("p-a", "node-a", "foo", terminating=True), existing("p-b", "node-b", "foo")],
     {"node-a": S, "node-b": U}),
    ("incoming pod has nodeAffinity, pods spread as 0/~2~/0/1, hence node-a fits",
     pod("foo", constraints=[spread(1, "zone")], affinity_not_in=("node", ["node-b"])), FOUR,
     [existing("p-b1", "node-b", "foo"), existing("p-b2", "node-b", "foo"), existing("p-y1", "node-y", "foo")],
     {"node-a": S, "node-b": S, "node-x": U, "node-y": U}),
    ("pods spread across nodes as 2/2/1, maxSkew is 2, and the number of domains < minDomains, then the third node fits",
     pod("foo", constraints=[spread(2, "node", min_domains=4)]), MIN_NODES, MIN_PODS,
     {"node-a": U, "node-b": U, "node-c": S}),
    ("pods spread across nodes as 2/2/1, maxSkew is 2, and the number of domains > minDomains, then the all nodes fit",
     pod("foo", constraints=[spread(2, "node", min_domains=2)]), MIN_NODES, MIN_PODS,
     {"node-a": S, "node-b": S, "node-c": S}),
    ("pods spread across zone as 2/1, maxSkew is 2 and the number of domains < minDomains, then the third and fourth nodes fit",
     pod("foo", constraints=[spread(2, "zone", min_domains=3)]), FOUR, ZONE_21,
     {"node-a": U, "node-b": U, "node-x": S, "node-y": S}),
    ("pods spread across zone as 2/1, maxSkew is 2 and the number of domains > minDomains, then the all nodes fit",
     pod("foo", constraints=[spread(2, "zone", min_domains=1)]), FOUR, ZONE_21,
     {"node-a": S, "node-b": S, "node-x": S, "node-y": S}),
    ("NodeAffinityPolicy honored with labelSelectors",
     pod("foo", constraints=[spread(1, "node")], node_selector={"foo": ""}), POLICY_NODES, POLICY_PODS,
     {"node-a": U, "node-b": U, "node-x": S, "node-y": S}),
    ("NodeAffinityPolicy ignored with labelSelectors",
     pod("foo", constraints=[spread(1, "node", affinity_policy="Ignore")], node_selector={"foo": ""}),
     POLICY_NODES, POLICY_PODS, {"node-a": U, "node-b": U, "node-x": S, "node-y": U}),
    ("NodeAffinityPolicy honored with nodeAffinity",
     pod("foo", constraints=[spread(1, "node")], affinity_in=("foo", [""])), POLICY_NODES, POLICY_PODS,
     {"node-a": U, "node-b": U, "node-x": S, "node-y": S}),
    ("NodeAffinityPolicy ignored with nodeAffinity",
     pod("foo", constraints=[spread(1, "node", affinity_policy="Ignore")], affinity_in=("foo", [""])),
     POLICY_NODES, POLICY_PODS, {"node-a": U, "node-b": U, "node-x": S, "node-y": U}),
    ("NodeTaintsPolicy honored", pod("foo", constraints=[spread(1, "node", taints_policy="Honor")]),
     TAINT_NODES, POLICY_PODS, {"node-a": U, "node-b": U, "node-x": S, "node-y": S}),
    ("NodeTaintsPolicy ignored", pod("foo", constraints=[spread(1, "node")]),
     TAINT_NODES, POLICY_PODS, {"node-a": U, "node-b": U, "node-x": S, "node-y": U}),
]

A2_B1_Y4 = A2_B1_Y3 + [existing("p-y4", "node-y", "foo")]
ZONE_NODE = [spread(1, "zone"), spread(1, "node")]
ZONE_FOO_NODE_BAR = [spread(1, "zone"), spread(1, "node", selector=BAR)]
INCL_NODES = [zn("node-a", "zone1", foo=""), zn("node-b", "zone1", foo=""), zn("node-x", "zone2", foo=""),
              zn("node-y", "zone2")]
INCL_PODS = [existing("p-a1", "node-a", "foo"), existing("p-b1", "node-b", "foo"), existing("p-y1", "node-y", "foo")]

# upstream TestMultipleConstraints
MULTIPLE = [
    ("two Constraints on zone and node, spreads = [3/3, 2/1/0/3]", pod("foo", constraints=ZONE_NODE), FOUR, A2_B1_Y3,
     {"node-a": U, "node-b": U, "node-x": S, "node-y": U}),
    ("two Constraints on zone and node, spreads = [3/4, 2/1/0/4]", pod("foo", constraints=ZONE_NODE), FOUR, A2_B1_Y4,
     {"node-a": U, "node-b": U, "node-x": U, "node-y": U}),
    ("Constraints hold different labelSelectors, spreads = [1/0, 1/0/0/1]", pod("foo", "bar", constraints=ZONE_FOO_NODE_BAR),
     FOUR, [existing("p-a1", "node-a", "foo"), existing("p-y1", "node-y", "bar")],
     {"node-a": U, "node-b": U, "node-x": S, "node-y": U}),
    ("Constraints hold different labelSelectors, spreads = [1/0, 0/0/1/1]", pod("foo", "bar", constraints=ZONE_FOO_NODE_BAR),
     FOUR, [existing("p-a1", "node-a", "foo"), existing("p-x1", "node-x", "bar"), existing("p-y1", "node-y", "bar")],
     {"node-a": U, "node-b": U, "node-x": U, "node-y": U}),
    ("Constraints hold different labelSelectors, spreads = [2/3, 1/0/0/1]", pod("foo", "bar", constraints=ZONE_FOO_NODE_BAR),
     FOUR, [existing("p-a1", "node-a", "foo"), existing("p-a2", "node-a", "foo", "bar"), existing("p-y1", "node-y", "foo"),
            existing("p-y2", "node-y", "foo", "bar"), existing("p-y3", "node-y", "foo")],
     {"node-a": U, "node-b": S, "node-x": U, "node-y": U}),
    ("Constraints hold different labelSelectors but pod doesn't match itself on 'zone' constraint",
     pod("bar", constraints=ZONE_FOO_NODE_BAR), FOUR,
     [existing("p-a1", "node-a", "foo"), existing("p-x1", "node-x", "bar"), existing("p-y1", "node-y", "bar")],
     {"node-a": S, "node-b": S, "node-x": U, "node-y": U}),
    ("two Constraints on zone and node, absence of label 'node' on node-x, spreads = [1/1, 1/0/0/1]",
     pod("foo", constraints=ZONE_NODE),
     [zn("node-a", "zone1"), zn("node-b", "zone1"), make_node("node-x", {"zone": "zone2"}), zn("node-y", "zone2")],
     [existing("p-a1", "node-a", "foo"), existing("p-y3", "node-y", "foo")],
     {"node-a": U, "node-b": S, "node-x": UU, "node-y": U}),
    ("two node inclusion Constraints, zone: honor/ignore, node: ignore/ignore",
     pod("foo", constraints=[spread(1, "zone"), spread(1, "node", affinity_policy="Ignore")], node_selector={"foo": ""}),
     INCL_NODES, INCL_PODS, {"node-a": U, "node-b": U, "node-x": S, "node-y": U}),
    ("two node inclusion Constraints, zone: honor/honor, node: honor/ignore",
     pod("foo", constraints=[spread(1, "zone", taints_policy="Honor"), spread(1, "node")]),
     [zn("node-a", "zone1", foo=""), zn("node-b", "zone1", foo=""), zn("node-x", "zone2", foo=""),
      zn("node-y", "zone2", taints=TAINTS)], INCL_PODS, {"node-a": U, "node-b": U, "node-x": S, "node-y": U}),
    ("two node inclusion Constraints, zone: honor/ignore, node: honor/ignore",
     pod("foo", constraints=ZONE_NODE, node_selector={"foo": ""}),
     [zn("node-a", "zone1", foo=""), zn("node-b", "zone1"), zn("node-x", "zone2", foo=""),
      zn("node-y", "zone2", taints=TAINTS, foo="")], INCL_PODS, {"node-a": U, "node-b": S, "node-x": S, "node-y": U}),
    ("two node inclusion Constraints, zone: honor/honor, node: ignore/ignore",
     pod("foo", constraints=[spread(1, "zone", taints_policy="Honor"), spread(1, "node", affinity_policy="Ignore")],
         node_selector={"foo": ""}),
     [zn("node-a", "zone1", foo=""), zn("node-b", "zone1"), zn("node-x", "zone2", foo=""),
      zn("node-y", "zone2", taints=TAINTS, foo="")], INCL_PODS, {"node-a": U, "node-b": U, "node-x": S, "node-y": U}),
]

REASONS = {S: (True, []), U: (False, [ERR_CONSTRAINTS_NOT_MATCH]), UU: (False, [ERR_NODE_LABEL_NOT_MATCH])}


def verdicts(the_pod, nodes, pods, with_meta: bool) -> dict[str, tuple[bool, list[str]]]:
    cluster = make_cluster(nodes, pods)
    predicate = new_pod_topology_spread_predicate(make_args(cluster))
    meta = PredicateMetadataFactory(cluster, topology_spread=True).get_metadata(the_pod, cluster.node_infos) if with_meta else None
    return {node.name: predicate(the_pod, meta, cluster.node_infos[node.name]) for node in nodes}


@pytest.mark.parametrize("name,the_pod,nodes,pods,want", SINGLE + MULTIPLE, ids=[r[0] for r in SINGLE + MULTIPLE])
@pytest.mark.parametrize("with_meta", [True, False], ids=["meta", "no-meta"])
def test_upstream_rows(name, the_pod, nodes, pods, want, with_meta):
    assert verdicts(the_pod, nodes, pods, with_meta) == {k: REASONS[v] for k, v in want.items()}


@pytest.mark.parametrize("name,the_pod,nodes,pods,want", SINGLE + MULTIPLE, ids=[r[0] for r in SINGLE + MULTIPLE])
def test_vectorised_form_agrees(name, the_pod, nodes, pods, want):
    cluster = make_cluster(nodes, pods)
    cols = NodeColumns(cluster)
    mask = filter_form(True)(the_pod, None, cols)
    assert dict(zip(cols.names, mask.tolist())) == {k: v == S for k, v in want.items()}


def test_the_1_9_rules_pass_every_node():
    the_pod, nodes, pods = SINGLE[7][1:4]  # 2/1/0/3, only node-x fits under the cluster rules
    cluster = make_cluster(nodes, pods)
    args = make_args(cluster)
    args.feature_gates = FeatureGates(rules=Rules.V1_9)
    predicate = new_pod_topology_spread_predicate(args)
    meta = PredicateMetadataFactory(cluster, topology_spread=False).get_metadata(the_pod, cluster.node_infos)
    assert meta.topology_spread_state() is None
    assert all(predicate(the_pod, meta, info) == (True, []) for info in cluster.node_infos.values())
    assert filter_form(False)(the_pod, None, NodeColumns(cluster)).all()


def test_schedule_anyway_constraints_are_not_filtered():
    the_pod = pod("foo", constraints=[spread(1, "node", when="ScheduleAnyway"), spread(1, "rack", when="ScheduleAnyway")])
    assert all(v == (True, []) for v in verdicts(the_pod, FOUR, A2_B1_Y3, True).values())


def test_add_and_remove_pod_update_the_counts_and_the_global_minimum():
    """upstream TestPreFilterStateAddPod / RemovePod shapes: the metadata copy follows added and removed
    pods; the original is untouched."""
    the_pod = pod("foo", constraints=ZONE_NODE)
    nodes = [zn("node-a", "zone1"), zn("node-b", "zone1"), zn("node-x", "zone2")]
    pods = [existing("p-a1", "node-a", "foo"), existing("p-a2", "node-a", "foo"), existing("p-b1", "node-b", "foo"),
            existing("p-x1", "node-x", "foo"), existing("p-x2", "node-x", "foo")]
    cluster = make_cluster(nodes, pods)
    meta = PredicateMetadataFactory(cluster, topology_spread=True).get_metadata(the_pod, cluster.node_infos)
    copy = meta.shallow_copy()
    copy.remove_pod(pods[3], cluster.node_infos["node-x"])
    state = copy.topology_spread_state()
    assert state.counts == [{"zone1": 3, "zone2": 1}, {"node-a": 2, "node-b": 1, "node-x": 1}]
    assert (state.paths[0].values[0], state.min_match(0)) == ("zone2", 1)
    assert state.min_match(1) == 1
    assert meta.topology_spread_state().counts == [{"zone1": 3, "zone2": 2}, {"node-a": 2, "node-b": 1, "node-x": 2}]
    other_ns = existing("q", "node-b", "foo", namespace="other")
    copy.add_pod(other_ns, cluster.node_infos["node-b"])
    copy.add_pod(existing("p-b2", "node-b", "foo"), cluster.node_infos["node-b"])
    assert copy.topology_spread_state().counts[1] == {"node-a": 2, "node-b": 2, "node-x": 1}


def test_a_selector_that_cannot_be_built_is_an_error_as_upstream():
    bad = {"matchExpressions": [{"key": "foo", "operator": "In", "values": []}]}
    the_pod = pod("foo", constraints=[spread(1, "zone", selector=bad)])
    cluster = make_cluster(FOUR, [])
    predicate = new_pod_topology_spread_predicate(make_args(cluster))
    meta = PredicateMetadataFactory(cluster, topology_spread=True).get_metadata(the_pod, cluster.node_infos)
    with pytest.raises(PredicateError, match="obtaining pod's hard topology spread constraints"):
        predicate(the_pod, meta, cluster.node_infos["node-a"])
    assert filter_form(True)(the_pod, None, NodeColumns(cluster)) is None


def test_match_label_keys_narrow_the_selector_to_the_pods_own_values():
    the_pod = Pod({"metadata": {"name": "p", "namespace": "default", "labels": {"foo": "", "rev": "2"}},
                   "spec": {"containers": [{"name": "c"}],
                            "topologySpreadConstraints": [spread(1, "node", match_label_keys=["rev"])]}})
    old = [Pod({"metadata": {"name": f"o{i}", "namespace": "default", "uid": f"o{i}", "labels": {"foo": "", "rev": "1"}},
                "spec": {"nodeName": "node-a", "containers": [{"name": "c"}]}}) for i in range(3)]
    got = verdicts(the_pod, [n("node-a"), n("node-b")], old, True)
    assert got == {"node-a": (True, []), "node-b": (True, [])}  # revision 1 pods do not count
    assert np.array_equal(filter_form(True)(the_pod, None, NodeColumns(make_cluster([n("node-a"), n("node-b")], old))),
                          [True, True])
