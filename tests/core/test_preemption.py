"""Preemption: upstream 1.9 ``core/generic_scheduler_test.go`` rows of ``TestSelectNodesForPreemption``,
``TestPickOneNodeForPreemption``, ``TestNodesWherePreemptionMightHelp`` and ``TestPreempt`` (each test
named after its upstream row, with upstream's expectations), then the parts 1.9 tests elsewhere or not
at all: the two-pass fit check with nominated pods, PodDisruptionBudgets, eligibility and the
nominations to clear."""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pytest

from policy_scheduler.cache.cluster import ClusterState
from policy_scheduler.core.extender import ExtenderFailure
from policy_scheduler.core.generic_scheduler import FitError, GenericScheduler
from policy_scheduler.core.nominated import NominatedPods, add_nominated_pods, nominated_node_of
from policy_scheduler.core.preemption import (
    CHOSEN,
    DOES_NOT_FIT,
    NOT_HELPFUL,
    Victims,
    nodes_where_preemption_might_help,
    pick_one_node_for_preemption,
    preempt,
    select_nodes_for_preemption,
)
from policy_scheduler.errors import SchedulingError
from policy_scheduler.factory import create_from_keys
from policy_scheduler.model.disruption import PodDisruptionBudget
from policy_scheduler.model.node import Node
from policy_scheduler.model.pod import Pod
from policy_scheduler.model.resources import DEFAULT_MEMORY_REQUEST, DEFAULT_MILLI_CPU_REQUEST
from policy_scheduler.predicates.reasons import (
    ERR_DISK_CONFLICT,
    ERR_NODE_LABEL_PRESENCE_VIOLATED,
    ERR_NODE_OUT_OF_DISK,
    ERR_NODE_SELECTOR_NOT_MATCH,
    ERR_NODE_UNSCHEDULABLE,
    ERR_POD_AFFINITY_NOT_MATCH,
    ERR_POD_NOT_MATCH_HOST_NAME,
    ERR_TAINTS_TOLERATIONS_NOT_MATCH,
)
from policy_scheduler.predicates.volume_binder import ERR_REASON_PV_NOT_EXIST
from tests.conformance.harness import conformance_registry

NEG, LOW, MID, HIGH, VERY_HIGH = -100, 0, 100, 1000, 10000
SMALL, MEDIUM, LARGE, VERY_LARGE = 1, 2, 3, 5  # multiples of the default cpu / memory request

# upstream's predicate doubles -> the names they are registered under here
FALSE, TRUE, MATCHES, RESOURCES = "FakeFalsePredicate", "FakeTruePredicate", "FakeMatchesPodNamePredicate", "PodFitsResources"


def containers(size: int | None) -> list[dict[str, Any]]:
    if size is None:
        return [{"name": "c"}]
    requests = {"cpu": f"{DEFAULT_MILLI_CPU_REQUEST * size}m", "memory": str(DEFAULT_MEMORY_REQUEST * size)}
    return [{"name": "c", "resources": {"requests": requests}}]


def pod(name: str, priority: int | None, size: int | None = None, node: str = "", *, uid: bool = True,
        labels: dict[str, str] | None = None, affinity: dict | None = None, annotations: dict | None = None,
        namespace: str = "") -> Pod:
    meta: dict[str, Any] = {"name": name, "namespace": namespace, "labels": labels or {}, "annotations": annotations or {}}
    if uid:
        meta["uid"] = name
    spec: dict[str, Any] = {"containers": containers(size), "nodeName": node}
    if priority is not None:
        spec["priority"] = priority
    if affinity:
        spec["affinity"] = affinity
    return Pod({"metadata": meta, "spec": spec, "status": {"phase": "Running"} if node else {}})


def node(name: str, labels: dict[str, str] | None = None) -> Node:
    """upstream ``makeNode(name, DefaultMilliCpuRequest*5, DefaultMemoryRequest*5)``."""
    resources = {"cpu": f"{DEFAULT_MILLI_CPU_REQUEST * 5}m", "memory": str(DEFAULT_MEMORY_REQUEST * 5), "pods": "100"}
    return Node({"metadata": {"name": name, "labels": labels or {}},
                 "status": {"capacity": resources, "allocatable": resources}})


def scheduler_for(nodes: list[Node], pods: list[Pod], predicates: list[str], extenders=(),
                  vectorized: bool = True) -> GenericScheduler:
    cluster = ClusterState()
    for n in nodes:
        cluster.add_node(n)
    for p in pods:
        cluster.add_pod(p)
    return create_from_keys(predicates, ["EqualPriority"], cluster=cluster, registry=conformance_registry(),
                            extenders=list(extenders), vectorized=vectorized)


def check_victims(expected: dict[str, set[str]], got: dict[str, Victims]) -> None:
    """upstream ``checkPreemptionVictims``: the same nodes, the same victims, sorted by priority."""
    assert {n: {p.name for p in v.pods} for n, v in got.items()} == expected
    for victims in got.values():
        priorities = [p.priority for p in victims.pods]
        assert priorities == sorted(priorities, reverse=True)


ANTI_AFFINITY_TO_PREEMPTOR = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{
    "labelSelector": {"matchExpressions": [{"key": "pod", "operator": "In", "values": ["preemptor", "value2"]}]},
    "topologyKey": "hostname"}]}}

SELECT_NODES_ROWS = [
    ("a pod that does not fit on any machine", [FALSE], ["machine1", "machine2"],
     pod("new", HIGH), [pod("a", MID, node="machine1"), pod("b", MID, node="machine2")], {}),
    ("a pod that fits with no preemption", [TRUE], ["machine1", "machine2"],
     pod("new", HIGH), [pod("a", MID, node="machine1"), pod("b", MID, node="machine2")],
     {"machine1": set(), "machine2": set()}),
    ("a pod that fits on one machine with no preemption", [MATCHES], ["machine1", "machine2"],
     pod("machine1", HIGH), [pod("a", MID, node="machine1"), pod("b", MID, node="machine2")], {"machine1": set()}),
    ("a pod that fits on both machines when lower priority pods are preempted", [RESOURCES], ["machine1", "machine2"],
     pod("machine1", HIGH, LARGE), [pod("a", MID, LARGE, "machine1"), pod("b", MID, LARGE, "machine2")],
     {"machine1": {"a"}, "machine2": {"b"}}),
    ("a pod that would fit on the machines, but other pods running are higher priority", [RESOURCES],
     ["machine1", "machine2"], pod("machine1", LOW, LARGE),
     [pod("a", MID, LARGE, "machine1"), pod("b", MID, LARGE, "machine2")], {}),
    ("medium priority pod is preempted, but lower priority one stays as it is small", [RESOURCES],
     ["machine1", "machine2"], pod("machine1", HIGH, LARGE),
     [pod("a", LOW, SMALL, "machine1"), pod("b", MID, LARGE, "machine1"), pod("c", MID, LARGE, "machine2")],
     {"machine1": {"b"}, "machine2": {"c"}}),
    ("mixed priority pods are preempted", [RESOURCES], ["machine1", "machine2"], pod("machine1", HIGH, LARGE),
     [pod("a", MID, SMALL, "machine1"), pod("b", LOW, SMALL, "machine1"), pod("c", MID, MEDIUM, "machine1"),
      pod("d", HIGH, SMALL, "machine1"), pod("e", HIGH, LARGE, "machine2")],
     {"machine1": {"b", "c"}}),
    ("pod with anti-affinity is preempted", [RESOURCES, "MatchInterPodAffinity"], ["machine1", "machine2"],
     pod("machine1", HIGH, SMALL, uid=False, labels={"pod": "preemptor"}),
     [pod("a", LOW, SMALL, "machine1", uid=False, labels={"service": "securityscan"}, affinity=ANTI_AFFINITY_TO_PREEMPTOR),
      pod("b", MID, SMALL, "machine1"), pod("d", HIGH, SMALL, "machine1"), pod("e", HIGH, LARGE, "machine2")],
     {"machine1": {"a"}, "machine2": set()}),
]


@pytest.mark.parametrize("name, predicates, nodes, preemptor, pods, expected", SELECT_NODES_ROWS,
                         ids=[r[0] for r in SELECT_NODES_ROWS])
def test_select_nodes_for_preemption(name, predicates, nodes, preemptor, pods, expected):
    """TestSelectNodesForPreemption (nodes labelled hostname=<name>)."""
    node_objs = [node(n, {"hostname": n}) for n in nodes]
    scheduler = scheduler_for(node_objs, pods, predicates)
    check_victims(expected, select_nodes_for_preemption(scheduler, preemptor, node_objs, pdbs=()))


PICK_ONE_ROWS = [
    ("No node needs preemption", ["machine1"], pod("machine1", HIGH, LARGE),
     [pod("m1.1", MID, SMALL, "machine1")], {"machine1"}),
    ("a pod that fits on both machines when lower priority pods are preempted", ["machine1", "machine2"],
     pod("machine1", HIGH, LARGE), [pod("m1.1", MID, LARGE, "machine1"), pod("m2.1", MID, LARGE, "machine2")],
     {"machine1", "machine2"}),
    ("a pod that fits on a machine with no preemption", ["machine1", "machine2", "machine3"],
     pod("machine1", HIGH, LARGE), [pod("m1.1", MID, LARGE, "machine1"), pod("m2.1", MID, LARGE, "machine2")],
     {"machine3"}),
    ("machine with min highest priority pod is picked", ["machine1", "machine2", "machine3"],
     pod("machine1", HIGH, VERY_LARGE),
     [pod("m1.1", MID, MEDIUM, "machine1"), pod("m1.2", MID, LARGE, "machine1"),
      pod("m2.1", MID, MEDIUM, "machine2"), pod("m2.2", LOW, MEDIUM, "machine2"),
      pod("m3.1", LOW, MEDIUM, "machine3"), pod("m3.2", LOW, MEDIUM, "machine3")],
     {"machine3"}),
    ("when highest priorities are the same, minimum sum of priorities is picked", ["machine1", "machine2", "machine3"],
     pod("machine1", HIGH, VERY_LARGE),
     [pod("m1.1", MID, MEDIUM, "machine1"), pod("m1.2", MID, LARGE, "machine1"),
      pod("m2.1", MID, LARGE, "machine2"), pod("m2.2", LOW, MEDIUM, "machine2"),
      pod("m3.1", MID, MEDIUM, "machine3"), pod("m3.2", MID, MEDIUM, "machine3")],
     {"machine2"}),
    ("when highest priority and sum are the same, minimum number of pods is picked",
     ["machine1", "machine2", "machine3"], pod("machine1", HIGH, VERY_LARGE),
     [pod("m1.1", MID, SMALL, "machine1"), pod("m1.2", NEG, SMALL, "machine1"), pod("m1.3", MID, SMALL, "machine1"),
      pod("m1.4", NEG, SMALL, "machine1"),
      pod("m2.1", MID, LARGE, "machine2"), pod("m2.2", NEG, MEDIUM, "machine2"),
      pod("m3.1", MID, MEDIUM, "machine3"), pod("m3.2", NEG, SMALL, "machine3"), pod("m3.3", LOW, SMALL, "machine3")],
     {"machine2"}),
    ("sum of adjusted priorities is considered", ["machine1", "machine2", "machine3"], pod("machine1", HIGH, VERY_LARGE),
     [pod("m1.1", MID, SMALL, "machine1"), pod("m1.2", NEG, SMALL, "machine1"), pod("m1.3", NEG, SMALL, "machine1"),
      pod("m2.1", MID, LARGE, "machine2"), pod("m2.2", NEG, MEDIUM, "machine2"),
      pod("m3.1", MID, MEDIUM, "machine3"), pod("m3.2", NEG, SMALL, "machine3"), pod("m3.3", LOW, SMALL, "machine3")],
     {"machine2"}),
    ("non-overlapping lowest high priority, sum priorities, and number of pods",
     ["machine1", "machine2", "machine3", "machine4"], pod("pod1", VERY_HIGH, VERY_LARGE),
     [pod("m1.1", MID, SMALL, "machine1"), pod("m1.2", LOW, SMALL, "machine1"), pod("m1.3", LOW, SMALL, "machine1"),
      pod("m2.1", HIGH, LARGE, "machine2"),
      pod("m3.1", MID, MEDIUM, "machine3"), pod("m3.2", LOW, SMALL, "machine3"), pod("m3.3", LOW, SMALL, "machine3"),
      pod("m3.4", LOW, MEDIUM, "machine3"),
      pod("m4.1", MID, MEDIUM, "machine4"), pod("m4.2", MID, SMALL, "machine4"), pod("m4.3", MID, SMALL, "machine4"),
      pod("m4.4", NEG, SMALL, "machine4")],
     {"machine1"}),
]


@pytest.mark.parametrize("name, nodes, preemptor, pods, expected", PICK_ONE_ROWS, ids=[r[0] for r in PICK_ONE_ROWS])
def test_pick_one_node_for_preemption(name, nodes, preemptor, pods, expected):
    """TestPickOneNodeForPreemption (PodFitsResources; "any of the items is valid")."""
    node_objs = [node(n) for n in nodes]
    scheduler = scheduler_for(node_objs, pods, [RESOURCES])
    candidates = select_nodes_for_preemption(scheduler, preemptor, node_objs, pdbs=())
    picked, _ = pick_one_node_for_preemption(candidates)
    assert picked in expected


POD_AFFINITY = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{
    "labelSelector": {"matchExpressions": [{"key": "service", "operator": "In", "values": ["securityscan", "value2"]}]},
    "topologyKey": "hostname"}]}}
POD_AFFINITY_AND_ANTI_AFFINITY = {**POD_AFFINITY, "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{
    "labelSelector": {"matchExpressions": [{"key": "service", "operator": "NotIn", "values": ["blah", "foo"]}]},
    "topologyKey": "region"}]}}

@pytest.mark.parametrize("vectorized", [True, False], ids=["arithmetic", "reference"])
def test_required_affinity_to_a_victim_rules_the_node_out(vectorized):
    """The preemptor's required affinity names the only matching pod, a lower-priority one on machine1 that
    must go to make room: with it removed the affinity fails, so no node can take the preemptor (the
    arithmetic must leave such a preemptor to the reference, whose first check removes every such pod)."""
    nodes = [node("machine1", {"hostname": "machine1"}), node("machine2", {"hostname": "machine2"})]
    pods = [pod("a", LOW, LARGE, "machine1", labels={"service": "securityscan"}), pod("b", LOW, LARGE, "machine2")]
    scheduler = scheduler_for(nodes, pods, [RESOURCES, "MatchInterPodAffinity"], vectorized=vectorized)
    preemptor = pod("p", HIGH, LARGE, affinity=POD_AFFINITY)
    with pytest.raises(FitError) as error:
        scheduler.schedule(preemptor)
    result = preempt(scheduler, preemptor, error.value)
    assert result.node is None and not select_nodes_for_preemption(scheduler, preemptor, nodes, pdbs=())
    assert [n.outcome for n in result.nodes.values()] == [DOES_NOT_FIT, DOES_NOT_FIT]


MIGHT_HELP_ROWS = [
    ("No node should be attempted",
     {"machine1": [ERR_NODE_SELECTOR_NOT_MATCH], "machine2": [ERR_POD_NOT_MATCH_HOST_NAME],
      "machine3": [ERR_TAINTS_TOLERATIONS_NOT_MATCH], "machine4": [ERR_NODE_LABEL_PRESENCE_VIOLATED]},
     None, set()),
    ("pod affinity should be tried",
     {"machine1": [ERR_POD_AFFINITY_NOT_MATCH], "machine2": [ERR_POD_NOT_MATCH_HOST_NAME],
      "machine3": [ERR_NODE_UNSCHEDULABLE]},
     POD_AFFINITY, {"machine1", "machine4"}),
    ("pod with both pod affinity and anti-affinity should be tried",
     {"machine1": [ERR_POD_AFFINITY_NOT_MATCH], "machine2": [ERR_POD_NOT_MATCH_HOST_NAME]},
     POD_AFFINITY_AND_ANTI_AFFINITY, {"machine1", "machine3", "machine4"}),
    ("Mix of failed predicates works fine",
     {"machine1": [ERR_NODE_SELECTOR_NOT_MATCH, ERR_NODE_OUT_OF_DISK, "Insufficient memory"],
      "machine2": [ERR_POD_NOT_MATCH_HOST_NAME, ERR_DISK_CONFLICT],
      "machine3": ["Insufficient memory"], "machine4": []},
     None, {"machine3", "machine4"}),
]


@pytest.mark.parametrize("name, failed, affinity, expected", MIGHT_HELP_ROWS, ids=[r[0] for r in MIGHT_HELP_ROWS])
def test_nodes_where_preemption_might_help(name, failed, affinity, expected):
    """TestNodesWherePreemptionMightHelp (four nodes machine1..4; the pod's affinity does not matter)."""
    nodes = [node(f"machine{i}") for i in range(1, 5)]
    assert {n.name for n in nodes_where_preemption_might_help(nodes, failed)} == expected


class FakeExtender:
    """upstream's ``FakeExtender`` with fit predicates over node names; rejected nodes are reported failed."""

    def __init__(self, name: str, accepts) -> None:
        self.name = name
        self.accepts = accepts

    def filter(self, pod, nodes, node_infos):
        kept = [n for n in nodes if self.accepts(n.name)]
        return kept, {n.name: "FakeExtender failed" for n in nodes if not self.accepts(n.name)}

    def prioritize(self, pod, nodes):
        raise SchedulingError("not used")

    def is_binder(self):
        return False


PREEMPT_FAILED = {"machine1": ["Insufficient memory"], "machine2": [ERR_DISK_CONFLICT], "machine3": ["Insufficient memory"]}

PREEMPT_ROWS = [
    ("basic preemption logic",
     [pod("m1.1", LOW, SMALL, "machine1"), pod("m1.2", LOW, SMALL, "machine1"), pod("m2.1", HIGH, LARGE, "machine2"),
      pod("m3.1", MID, MEDIUM, "machine3")],
     [], "machine1", {"m1.1", "m1.2"}),
    ("One node doesn't need any preemption",
     [pod("m1.1", LOW, SMALL, "machine1"), pod("m1.2", LOW, SMALL, "machine1"), pod("m2.1", HIGH, LARGE, "machine2")],
     [], "machine3", set()),
    ("Scheduler extenders allow only machine1, otherwise machine3 would have been chosen",
     [pod("m1.1", MID, SMALL, "machine1"), pod("m1.2", LOW, SMALL, "machine1"), pod("m2.1", MID, LARGE, "machine2")],
     [FakeExtender("true", lambda n: True), FakeExtender("machine1", lambda n: n == "machine1")],
     "machine1", {"m1.1", "m1.2"}),
    ("Scheduler extenders do not allow any preemption",
     [pod("m1.1", MID, SMALL, "machine1"), pod("m1.2", LOW, SMALL, "machine1"), pod("m2.1", MID, LARGE, "machine2")],
     [FakeExtender("false", lambda n: False)], None, set()),
]


@pytest.mark.parametrize("name, pods, extenders, expected_node, expected_victims", PREEMPT_ROWS,
                         ids=[r[0] for r in PREEMPT_ROWS])
def test_preempt(name, pods, extenders, expected_node, expected_victims):
    """TestPreempt: the node and victims, then a second call while the victims terminate preempts nothing."""
    nodes = [node(f"machine{i}") for i in range(1, 4)]
    scheduler = scheduler_for(nodes, pods, [RESOURCES], extenders)
    preemptor = pod("pod1", HIGH, VERY_LARGE)
    result = preempt(scheduler, preemptor, FitError(preemptor, 3, PREEMPT_FAILED))
    assert result.node == expected_node
    assert {v.name for v in result.victims} == expected_victims
    for victim in result.victims:
        victim.deletion_timestamp = "2018-01-01T00:00:00Z"  # the cached pod is marked for deletion
    if result.node is not None:
        preemptor = pod("pod1", HIGH, VERY_LARGE, annotations={"NominatedNodeName": result.node})
    again = preempt(scheduler, preemptor, FitError(preemptor, 3, PREEMPT_FAILED))
    assert not (again.node is not None and again.victims)


# -- beyond upstream's tables -----------------------------------------------------------------------
def test_preempt_without_nodes_is_an_error():
    scheduler = scheduler_for([], [], [RESOURCES])
    with pytest.raises(SchedulingError, match="no nodes available to schedule pods"):
        preempt(scheduler, pod("p", HIGH), FitError(pod("p", HIGH), 0, {}))


def test_preemption_that_cannot_help_clears_the_preemptors_own_nomination():
    nodes = [node("machine1"), node("machine2")]
    scheduler = scheduler_for(nodes, [], [RESOURCES])
    preemptor = pod("p", HIGH, SMALL)
    result = preempt(scheduler, preemptor, FitError(preemptor, 2, {
        "machine1": [ERR_NODE_UNSCHEDULABLE], "machine2": [ERR_TAINTS_TOLERATIONS_NOT_MATCH, "Insufficient cpu"]}))
    assert result.node is None and result.nominated_pods_to_clear == [preemptor]
    assert {n: o.outcome for n, o in result.nodes.items()} == {"machine1": NOT_HELPFUL, "machine2": NOT_HELPFUL}
    assert result.nodes["machine2"].reasons == [ERR_TAINTS_TOLERATIONS_NOT_MATCH]


def test_an_extender_message_is_never_an_unresolvable_reason():
    """Upstream compares reason identities: an extender's failedNodes text never matches a predicate's."""
    nodes = [node("machine1")]
    assert nodes_where_preemption_might_help(nodes, {"machine1": [ExtenderFailure(ERR_NODE_UNSCHEDULABLE)]}) == nodes
    assert nodes_where_preemption_might_help(nodes, {"machine1": [ERR_NODE_UNSCHEDULABLE]}) == []


def test_rejected_nodes_say_why():
    nodes = [node("machine1"), node("machine2"), node("machine3")]
    pods = [pod("big", HIGH, VERY_LARGE, "machine1"), pod("low", LOW, LARGE, "machine2"), pod("mid", MID, LARGE, "machine3")]
    scheduler = scheduler_for(nodes, pods, [RESOURCES])
    preemptor = pod("p", MID + 1, LARGE)
    result = preempt(scheduler, preemptor, FitError(preemptor, 3, {n.name: ["Insufficient cpu"] for n in nodes}))
    assert result.node == "machine2"
    assert result.nodes["machine1"].outcome == DOES_NOT_FIT
    assert result.nodes["machine1"].reasons == ["Insufficient cpu", "Insufficient memory"]
    assert result.nodes["machine2"].outcome == CHOSEN
    assert re.search(r"a higher-priority first victim \(100 > 0\)", result.nodes["machine3"].detail)


def pdb(name: str, match: dict[str, str], allowed: int, api_version: str = "policy/v1beta1", namespace: str = "") -> PodDisruptionBudget:
    key = "podDisruptionsAllowed" if api_version == "policy/v1beta1" else "disruptionsAllowed"
    return PodDisruptionBudget.from_dict({
        "apiVersion": api_version, "kind": "PodDisruptionBudget",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"selector": {"matchLabels": match}, "minAvailable": 1},
        "status": {key: allowed}})


def test_pdb_protected_pods_are_reprieved_first_and_counted():
    """selectVictimsOnNode: budget-protected pods are re-added first; a node violating fewer budgets wins."""
    nodes = [node("machine1"), node("machine2")]
    pods = [pod("db-0", LOW, LARGE, "machine1", labels={"app": "db"}), pod("web-0", LOW, SMALL, "machine1", labels={"app": "web"}),
            pod("web-1", MID, LARGE, "machine2", labels={"app": "web"})]
    scheduler = scheduler_for(nodes, pods, [RESOURCES])
    preemptor = pod("p", HIGH, LARGE)
    budgets = [pdb("db", {"app": "db"}, 0), pdb("web", {"app": "web"}, 1, "policy/v1")]
    candidates = select_nodes_for_preemption(scheduler, preemptor, nodes, budgets)
    assert [p.name for p in candidates["machine1"].pods] == ["db-0"]
    assert candidates["machine1"].num_pdb_violations == 1
    assert candidates["machine1"].pdbs["db-0"].name == "db"
    assert candidates["machine2"].num_pdb_violations == 0
    result = preempt(scheduler, preemptor, FitError(preemptor, 2, {}), pdbs=budgets)
    assert result.node == "machine2" and [v.name for v in result.victims] == ["web-1"]


def test_pdb_selection_rules():
    labelled = pod("x", LOW, labels={"app": "db"}, namespace="ns")
    assert pdb("a", {"app": "db"}, 0, namespace="ns").selects(labelled)
    assert not pdb("a", {"app": "db"}, 0, namespace="other").selects(labelled)
    assert not pdb("a", {}, 0, namespace="ns").selects(labelled)  # an empty selector matches nothing here
    assert not pdb("a", {"app": "db"}, 0, namespace="ns").selects(pod("y", LOW, namespace="ns"))  # no labels
    no_status = PodDisruptionBudget.from_dict({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                                               "metadata": {"name": "n", "namespace": "ns"},
                                               "spec": {"selector": {"matchLabels": {"app": "db"}}}})
    assert no_status.disruptions_allowed == 0


def test_nominated_pods_are_counted_in_the_first_pass():
    """podFitsOnNode with nominated pods: a pod may not take room kept for an equal or higher priority
    nominated pod, may take room kept for a lower one, and the vectorised path agrees."""
    nodes = [node("machine1")]
    for vectorized in (True, False):
        cluster = ClusterState()
        cluster.add_node(nodes[0])
        scheduler = create_from_keys([RESOURCES], ["EqualPriority"], cluster=cluster, registry=conformance_registry(),
                                     vectorized=vectorized)
        nominated = NominatedPods()
        scheduler.nominated_pods = nominated
        nominated.nominate(pod("waiting", MID, LARGE), "machine1")
        with pytest.raises(FitError):
            scheduler.schedule(pod("same", MID, LARGE))
        assert scheduler.schedule(pod("higher", HIGH, LARGE)) == "machine1"
        nominated.remove(pod("waiting", MID, LARGE))
        assert scheduler.schedule(pod("same", MID, LARGE)) == "machine1"


def test_a_pod_ignores_its_own_nomination():
    cluster = ClusterState()
    cluster.add_node(node("machine1"))
    scheduler = create_from_keys([RESOURCES], ["EqualPriority"], cluster=cluster, registry=conformance_registry())
    scheduler.nominated_pods = nominated = NominatedPods()
    preemptor = pod("p", MID, LARGE)
    nominated.nominate(preemptor, "machine1")
    assert scheduler.schedule(preemptor) == "machine1"


def test_second_pass_runs_without_the_nominated_pods():
    """A predicate that only the nominated pods satisfy still fails: both passes must succeed."""
    cluster = ClusterState()
    cluster.add_node(node("machine1"))
    scheduler = create_from_keys(["FakeHasNoPodsPredicate"], ["EqualPriority"], cluster=cluster,
                                 registry=conformance_registry())
    scheduler.nominated_pods = nominated = NominatedPods()
    nominated.nominate(pod("waiting", HIGH, SMALL), "machine1")
    with pytest.raises(FitError):
        scheduler.schedule(pod("p", LOW, SMALL))  # pass 1 fails: the nominated pod is on the node
    meta = scheduler.predicate_metadata_producer(pod("p", LOW), cluster.node_infos)
    added = add_nominated_pods(pod("p", LOW), meta, cluster.node_infos["machine1"], nominated)
    assert added is not None and [p.name for p in added[2]] == ["waiting"]
    assert len(cluster.node_infos["machine1"].pods) == 0  # the cache is untouched


def test_explain_shows_the_nominated_pods_of_the_first_pass():
    cluster = ClusterState()
    cluster.add_node(node("machine1"))
    scheduler = create_from_keys([RESOURCES], ["EqualPriority"], cluster=cluster, registry=conformance_registry())
    scheduler.nominated_pods = nominated = NominatedPods()
    nominated.nominate(pod("waiting", HIGH, LARGE, namespace="ns"), "machine1")
    explanation = scheduler.explain(pod("p", LOW, LARGE))
    assert explanation.nodes["machine1"].nominated_pods == ["ns/waiting"]
    assert explanation.nodes["machine1"].predicates[RESOURCES].reasons == ["Insufficient cpu", "Insufficient memory"]
    assert explanation.fit_error is not None


def test_lower_priority_nominations_on_the_chosen_node_are_cleared():
    nodes = [node("machine1")]
    scheduler = scheduler_for(nodes, [pod("victim", LOW, VERY_LARGE, "machine1")], [RESOURCES])
    scheduler.nominated_pods = nominated = NominatedPods()
    lower, higher = pod("lower", LOW + 1, SMALL), pod("higher", VERY_HIGH, SMALL)
    nominated.nominate(lower, "machine1")
    nominated.nominate(higher, "machine1")
    preemptor = pod("p", HIGH, LARGE)
    result = preempt(scheduler, preemptor, FitError(preemptor, 1, {}))
    assert result.node == "machine1" and [v.name for v in result.victims] == ["victim"]
    assert result.nominated_pods_to_clear == [lower]


def test_nomination_index_and_pod_fields():
    index = NominatedPods()
    a, b = pod("a", 0), pod("b", 0)
    assert index.nominate(a, "n1") and not index.nominate(a, "n1")
    assert index.nominate(b, "n1") and index.nominate(a, "n2")
    assert [p.name for p in index.nominated_pods_for_node("n1")] == ["b"]
    assert index.node_for(a) == "n2" and len(index) == 2
    assert index.remove(a) and not index.remove(a) and index.nominated_pods_for_node("n2") == []
    assert nominated_node_of(pod("x", 0, annotations={"NominatedNodeName": "n9"})) == "n9"
    assert nominated_node_of(Pod({"metadata": {"name": "y"}, "status": {"nominatedNodeName": "n8"}})) == "n8"


def test_vectorised_and_reference_paths_agree_with_nominated_pods():
    """Random clusters, random nominations: the vectorised filter gives the reference's hosts."""
    rng = np.random.default_rng(7)
    for trial in range(20):
        nodes = [node(f"n{i}") for i in range(6)]
        pods = [pod(f"e{trial}-{i}", int(rng.integers(-1, 3)) * 100, int(rng.integers(1, 4)), f"n{int(rng.integers(0, 6))}")
                for i in range(8)]
        waiting = [(pod(f"w{i}", int(rng.integers(-1, 3)) * 100, int(rng.integers(1, 4))), f"n{int(rng.integers(0, 6))}")
                   for i in range(4)]
        incoming = [pod(f"in{i}", int(rng.integers(-1, 3)) * 100, int(rng.integers(1, 4))) for i in range(5)]
        outcomes = []
        for vectorized in (True, False):
            cluster = ClusterState()
            for n in nodes:
                cluster.add_node(n)
            for p in pods:
                cluster.add_pod(p)
            scheduler = create_from_keys([RESOURCES, "PodFitsHostPorts"], ["LeastRequestedPriority"], cluster=cluster,
                                         registry=conformance_registry(), vectorized=vectorized)
            scheduler.nominated_pods = nominated = NominatedPods()
            for p, n in waiting:
                nominated.nominate(p, n)
            outcome = []
            for p in incoming:
                try:
                    outcome.append(scheduler.schedule(p))
                    cluster.assume(p, outcome[-1])
                except FitError as e:
                    outcome.append(str(e))
            outcomes.append(outcome)
        assert outcomes[0] == outcomes[1]


def test_a_claim_bound_to_a_missing_pv_is_an_unresolvable_reason():
    """Under the cluster's rules, 1.26's VolumeBinding: a pod whose claim is bound to a PV that does not exist
    fits nowhere whatever is evicted (UnschedulableAndUnresolvable), so preemption skips such nodes."""
    nodes = [node("machine1"), node("machine2")]
    helped = nodes_where_preemption_might_help(nodes, {"machine1": [ERR_REASON_PV_NOT_EXIST],
                                                       "machine2": ["Insufficient cpu"]})
    assert [n.name for n in helped] == ["machine2"]
