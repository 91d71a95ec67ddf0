"""InterPodAffinityPriority with ``namespaceSelector`` (the cluster's rules): upstream 1.26's scoring rows with a
NamespaceSelector (interpodaffinity/scoring_test.go ``TestPreferredAffinity`` and
``TestPreferredAffinityWithHardPodAffinitySymmetricWeight``, namespaces ``subteam{1,2}.team{1,2}`` labelled
``team``). Which pods count is upstream's; the scores are 1.9's normalisation (0..10 between
``min(0, min count)`` and ``max(0, max count)``, where 1.26 uses 0..100 between the minimum and the maximum),
so rows where a node has a smaller non-zero count read differently from upstream's. Each row is also scored by
the vectorised form."""

from __future__ import annotations

import numpy as np
import pytest

from policy_scheduler.fastpath.columns import NodeColumns
from policy_scheduler.fastpath.priorities import inter_pod_affinity as vectorised
from policy_scheduler.features import Rules
from policy_scheduler.model.pod import Pod
from policy_scheduler.priorities import new_inter_pod_affinity_priority

from .conftest import factory_args, label_requirement, make_cluster, make_node, make_pod

NAMESPACES = {"subteam1.team1": {"team": "team1"}, "subteam2.team1": {"team": "team1"},
              "subteam1.team2": {"team": "team2"}, "subteam2.team2": {"team": "team2"}}
RG_CHINA, RG_INDIA, AZ_AZ1 = {"region": "China"}, {"region": "India"}, {"az": "az1"}
S1, S2 = {"security": "S1"}, {"security": "S2"}
TEAM1 = {"matchExpressions": [label_requirement("team", "In", ["team1"])]}


def _term(security: str, namespaces=None, namespace_selector=None, key="security") -> dict:
    t = {"labelSelector": {"matchExpressions": [label_requirement(key, "In", [security])]}, "topologyKey": "region"}
    if namespaces is not None:
        t["namespaces"] = namespaces
    if namespace_selector is not None:
        t["namespaceSelector"] = namespace_selector
    return t


def _preferred(kind: str, weight: int, term: dict) -> dict:
    return {kind: {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": weight, "podAffinityTerm": term}]}}


AFFINITY_NS_SELECTOR = _preferred("podAffinity", 5, _term("S1", ["subteam2.team2"], TEAM1))
ANTI_AFFINITY_NS_SELECTOR = _preferred("podAntiAffinity", 5, _term("S1", ["subteam2.team2"], TEAM1))
STAY_WITH_S2_IN_REGION = _preferred("podAffinity", 6, _term("S2"))
HARD_POD_AFFINITY = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
    _term("S1", ["", "subteam2.team2"], TEAM1, key="service")]}}


def nodes(*labels):
    return [make_node(f"node{i}", labels=lab) for i, lab in enumerate(labels, 1)]


def score(pod: Pod, pods, node_list, hard_weight: int = 1, namespaces=NAMESPACES) -> list[int]:
    cluster = make_cluster(node_list, pods)
    for name, labels in namespaces.items():
        cluster.put_namespace(name, labels)
    args = factory_args(cluster, hard_weight)
    want = [r.score for r in new_inter_pod_affinity_priority(args)(pod, cluster.node_infos, node_list)]
    cols = NodeColumns(cluster)
    got = vectorised(args)(pod, None, cols, np.array([cols.index[n.name] for n in node_list]))
    assert got is not None and np.broadcast_to(got, (len(node_list),)).tolist() == want  # an int: every node's
    return want


# (name, incoming pod, existing pods, nodes, 1.9's scores, upstream's scores)
def four_pods(third_namespace: str) -> list:
    """Upstream's existing pods of the namespaceSelector rows: two in subteam1.team1 and one in
    ``third_namespace`` on node1, one in subteam2.team1 on node2, all labelled S1."""
    return [make_pod(node_name="node1", namespace="subteam1.team1", labels=S1),
            make_pod(node_name="node1", namespace="subteam1.team1", labels=S1),
            make_pod(node_name="node1", namespace=third_namespace, labels=S1),
            make_pod(node_name="node2", namespace="subteam2.team1", labels=S1)]


PREFERRED = [
    ("Affinity symmetry with namespace selector",
     make_pod(namespace="subteam1.team1", labels=S1),
     [make_pod(node_name="node1", labels=S1, affinity=AFFINITY_NS_SELECTOR),
      make_pod(node_name="node2", labels=S2, affinity=STAY_WITH_S2_IN_REGION)],
     nodes(RG_CHINA, RG_INDIA, AZ_AZ1), [10, 0, 0], [100, 0, 0]),
    ("AntiAffinity symmetry with namespace selector",
     make_pod(namespace="subteam1.team1", labels=S1),
     [make_pod(node_name="node1", labels=S1, affinity=ANTI_AFFINITY_NS_SELECTOR),
      make_pod(node_name="node2", labels=S2, affinity=STAY_WITH_S2_IN_REGION)],
     nodes(RG_CHINA, RG_INDIA, AZ_AZ1), [0, 10, 10], [0, 100, 100]),
    *((f"{kind} with pods matching {what}",
       make_pod(namespace="subteam1.team1", labels=S1, affinity=affinity), four_pods(third),
       nodes(RG_CHINA, RG_INDIA), expected, upstream)
      for kind, affinity, what, third, expected, upstream in (
          ("Affinity", AFFINITY_NS_SELECTOR, "NamespaceSelector", "subteam1.team2", [10, 5], [100, 0]),
          ("Affinity", AFFINITY_NS_SELECTOR, "both NamespaceSelector and Namespaces fields", "subteam2.team2",
           [10, 3], [100, 0]),
          ("Anti-affinity", ANTI_AFFINITY_NS_SELECTOR, "NamespaceSelector", "subteam1.team2", [0, 5], [0, 100]),
          ("Anti-affinity", ANTI_AFFINITY_NS_SELECTOR, "both NamespaceSelector and Namespaces fields",
           "subteam2.team2", [0, 6], [0, 100]))),
]


@pytest.mark.parametrize("name,pod,pods,node_list,expected,upstream", PREFERRED, ids=[r[0] for r in PREFERRED])
def test_preferred_affinity_rows(name, pod, pods, node_list, expected, upstream):
    assert score(pod, pods, node_list) == expected
    # The same order as upstream's: the nodes upstream puts first and last are first and last here too.
    assert np.argsort(expected, kind="stable").tolist() == np.argsort(upstream, kind="stable").tolist()


HARD = [  # (name, incoming pod's namespace, hard weight, scores): upstream's 0-weight and no-match rows Skip
    ("with default weight", "", 1, [10, 10, 0]),
    ("with zero weight", "", 0, [0, 0, 0]),
    ("with no matching namespace", "subteam1.team2", 1, [0, 0, 0]),
    ("with matching NamespaceSelector", "subteam1.team1", 1, [10, 10, 0]),
    ("with matching Namespaces", "subteam2.team2", 1, [10, 10, 0]),
]


@pytest.mark.parametrize("name,namespace,weight,expected", HARD, ids=[r[0] for r in HARD])
def test_hard_pod_affinity_symmetric_weight_rows(name, namespace, weight, expected):
    pods = [make_pod(node_name="node1", affinity=HARD_POD_AFFINITY), make_pod(node_name="node2", affinity=HARD_POD_AFFINITY)]
    incoming = make_pod(namespace=namespace, labels={"service": "S1"})
    assert score(incoming, pods, nodes(RG_CHINA, RG_INDIA, AZ_AZ1), weight) == expected


def test_a_relabelled_namespace_changes_the_next_score():
    incoming = make_pod(namespace="web", labels=S2, affinity=_preferred("podAffinity", 5, _term(
        "S1", namespace_selector={"matchLabels": {"tier": "db"}})))
    pods = [make_pod(node_name="node1", namespace="db-a", labels=S1), make_pod(node_name="node2", namespace="db-b", labels=S1)]
    node_list = nodes(RG_CHINA, RG_INDIA)
    assert score(incoming, pods, node_list, namespaces={"db-a": {"tier": "db"}, "db-b": {}}) == [10, 0]
    assert score(incoming, pods, node_list, namespaces={"db-a": {}, "db-b": {"tier": "db"}}) == [0, 10]
    assert score(incoming, pods, node_list, namespaces={}) == [0, 0]


def test_an_empty_selector_counts_every_namespace():
    incoming = make_pod(namespace="web", labels=S2, affinity=_preferred("podAffinity", 5, _term("S1", namespace_selector={})))
    pods = [make_pod(node_name="node1", namespace="anything", labels=S1)]
    assert score(incoming, pods, nodes(RG_CHINA, RG_INDIA), namespaces={}) == [10, 0]


def test_rules_1_9_ignore_the_selector():
    name, pod, pods, node_list, _, _ = PREFERRED[2]
    old = Pod(pod.raw, Rules.V1_9)  # the term's namespaces: subteam2.team2 only, as 1.9 read it
    assert score(old, [Pod(p.raw, Rules.V1_9) for p in pods], node_list) == [0, 0]
    name, pod, pods, node_list, _, _ = PREFERRED[0]
    assert score(Pod(pod.raw, Rules.V1_9), [Pod(p.raw, Rules.V1_9) for p in pods], node_list) == [0, 0, 0]
