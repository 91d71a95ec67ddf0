"""PodTopologySpread in the generic scheduler: applied to constrained pods without a Policy naming it
(filter for DoNotSchedule, score at weight 2 for ScheduleAnyway), the Policy's own entries and weight
when it names them, nothing of it under ``Rules.V1_9``, and pods without constraints on the old path."""

from __future__ import annotations

import json

import pytest

from policy_scheduler.api import load_policy
from policy_scheduler.api.validation import unknown_names
from policy_scheduler.cache.cluster import ClusterState
from policy_scheduler.core.generic_scheduler import FitError
from policy_scheduler.factory import create_from_policy, create_from_provider
from policy_scheduler.features import FeatureGates, Rules
from policy_scheduler.model.node import Node
from policy_scheduler.model.pod import Pod
from policy_scheduler.registry import REGISTRY

ZONE = "topology.kubernetes.io/zone"


def node(name: str, zone: str, cpu: str) -> Node:
    return Node({"metadata": {"name": name, "labels": {ZONE: zone, "kubernetes.io/hostname": name}},
                 "status": {"allocatable": {"cpu": cpu, "memory": "64Gi", "pods": "110"},
                            "conditions": [{"type": "Ready", "status": "True"}]}})


def app_pod(i: int, when: str | None = "DoNotSchedule", key: str = ZONE, max_skew: int = 1) -> Pod:
    spec: dict = {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}]}
    if when is not None:
        spec["topologySpreadConstraints"] = [{"maxSkew": max_skew, "topologyKey": key, "whenUnsatisfiable": when,
                                              "labelSelector": {"matchLabels": {"app": "web"}}}]
    return Pod({"metadata": {"name": f"web-{i}", "namespace": "default", "uid": f"web-{i}", "labels": {"app": "web"}},
                "spec": spec})


def cluster() -> ClusterState:
    """zone-a: two large nodes (room for everything, and LeastRequested prefers them); zone-b: one small."""
    c = ClusterState()
    for n in (node("a-1", "zone-a", "64"), node("a-2", "zone-a", "64"), node("b-1", "zone-b", "8")):
        c.add_node(n)
    return c


def place(scheduler, pods) -> list[str]:
    hosts = []
    for p in pods:
        host = scheduler.schedule(p)
        scheduler.cluster.assume(p, host)
        hosts.append(host)
    return hosts


def zones(hosts: list[str]) -> dict[str, int]:
    out: dict[str, int] = {}
    for h in hosts:
        out[h[0]] = out.get(h[0], 0) + 1
    return out


@pytest.mark.parametrize("vectorized", [True, False])
def test_do_not_schedule_applies_without_a_policy_mention(vectorized):
    s = create_from_provider("DefaultProvider", cluster=cluster(), vectorized=vectorized)
    assert zones(place(s, [app_pod(i) for i in range(4)])) == {"a": 2, "b": 2}


@pytest.mark.parametrize("vectorized", [True, False])
def test_the_1_9_rules_switch_it_off(vectorized):
    gates = FeatureGates(rules=Rules.V1_9)
    s = create_from_provider("DefaultProvider", cluster=cluster(), feature_gates=gates, vectorized=vectorized)
    assert s.pod_scoped == []
    hosts = place(s, [app_pod(i) for i in range(4)])
    assert zones(hosts) == {"a": 4}
    plain = create_from_provider("DefaultProvider", cluster=cluster(), feature_gates=gates, vectorized=vectorized)
    assert place(plain, [app_pod(i, when=None) for i in range(4)]) == hosts  # exactly 1.9's decisions


def test_fit_error_names_the_spread_reason():
    s = create_from_provider("DefaultProvider", cluster=cluster())
    place(s, [app_pod(i) for i in range(2)])
    s.cluster.assume(app_pod(8, when=None), "b-1")  # zone-a 1, zone-b 2
    s.cluster.assume(app_pod(9, when=None), "b-1")  # zone-b 3
    pinned = app_pod(5)
    pinned.raw["spec"]["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [{"key": ZONE, "operator": "In", "values": ["zone-b"]}]}]}}}
    pinned.raw["spec"]["topologySpreadConstraints"][0]["nodeAffinityPolicy"] = "Ignore"
    with pytest.raises(FitError) as exc:
        s.schedule(Pod(pinned.raw))
    assert str(exc.value) == ("0/3 nodes are available: 1 node(s) didn't match pod topology spread constraints, "
                              "2 MatchNodeSelector.")


def test_schedule_anyway_scores_at_weight_2_without_a_policy_mention():
    s = create_from_provider("DefaultProvider", cluster=cluster())
    place(s, [app_pod(i, when=None) for i in range(2)])  # both land in zone-a (LeastRequested)
    explanation = s.explain(app_pod(7, when="ScheduleAnyway"))
    assert {name: e.priorities["PodTopologySpread"] for name, e in explanation.nodes.items()} == {
        "a-1": (0, 2), "a-2": (0, 2), "b-1": (10, 2)}
    assert explanation.host == "b-1"
    assert "PodTopologySpread" not in explanation.nodes["a-1"].predicates  # no DoNotSchedule constraint


def test_pods_without_constraints_keep_the_algorithm_as_it_is():
    s = create_from_provider("DefaultProvider", cluster=cluster())
    plain = app_pod(1, when=None)
    assert s.algorithms_for(plain) is s.algorithms_for(app_pod(2, when=None))
    assert [c.name for c in s.algorithms_for(plain).prioritizers] == [c.name for c in s.prioritizers]
    explanation = s.explain(plain)
    assert all("PodTopologySpread" not in e.priorities and "PodTopologySpread" not in e.predicates
               for e in explanation.nodes.values())


POLICY = {"kind": "Policy", "apiVersion": "v1",
          "predicates": [{"name": "GeneralPredicates"}, {"name": "PodTopologySpread"}],
          "priorities": [{"name": "LeastRequestedPriority", "weight": 1}, {"name": "PodTopologySpread", "weight": 7}]}


def test_a_policy_names_and_weights_it():
    policy = load_policy(json.dumps(POLICY))
    assert unknown_names(policy, set(REGISTRY.fit_predicates), set(REGISTRY.priorities)) == []
    s = create_from_policy(policy, cluster=cluster())
    # both named: nothing added per pod but the volume rules (ReadWriteOncePod, NodeVolumeLimits),
    # NodeDeclaredFeatures and DynamicResources (its filter, and its score for claims with a prioritized list)
    assert [x.predicate[0] for x in s.pod_scoped if x.predicate] == [
        "ReadWriteOncePod", "NodeVolumeLimits", "NodeDeclaredFeatures", "DynamicResources"]
    assert [x.priority.name for x in s.pod_scoped if x.priority is not None] == ["DynamicResources"]
    assert "PodTopologySpread" in s.predicates
    assert [(c.name, c.weight) for c in s.prioritizers] == [("LeastRequestedPriority", 1), ("PodTopologySpread", 7)]
    explanation = s.explain(app_pod(7, when="ScheduleAnyway"))
    assert explanation.nodes["b-1"].priorities["PodTopologySpread"] == (10, 7)
    assert zones(place(s, [app_pod(i) for i in range(4)])) == {"a": 2, "b": 2}


def test_a_policy_naming_only_the_priority_still_gets_the_filter():
    policy = load_policy(json.dumps({**POLICY, "predicates": [{"name": "GeneralPredicates"}]}))
    s = create_from_policy(policy, cluster=cluster())
    assert [(x.predicate[0] if x.predicate else None, x.priority and x.priority.name) for x in s.pod_scoped] == [
        ("PodTopologySpread", None), ("ReadWriteOncePod", None), ("NodeVolumeLimits", None),
        ("NodeDeclaredFeatures", None), ("DynamicResources", None), (None, "DynamicResources")]
    assert zones(place(s, [app_pod(i) for i in range(4)])) == {"a": 2, "b": 2}


def test_a_policy_naming_it_under_the_1_9_rules_changes_nothing():
    gates = FeatureGates(rules=Rules.V1_9)
    s = create_from_policy(load_policy(json.dumps(POLICY)), cluster=cluster(), feature_gates=gates)
    explanation = s.explain(app_pod(7, when="ScheduleAnyway"))
    assert {e.priorities["PodTopologySpread"] for e in explanation.nodes.values()} == {(0, 7)}
    assert zones(place(s, [app_pod(i) for i in range(4)])) == {"a": 4}
