"""Ports of upstream 1.9 ``core/generic_scheduler_test.go`` (all rows of the tables it runs)."""

from __future__ import annotations

import numpy as np
import pytest

from policy_scheduler.algorithm import HostPriority
from policy_scheduler.cache.cluster import ClusterState
from policy_scheduler.core.algorithms import evaluation_order
from policy_scheduler.core.generic_scheduler import (
    FitError,
    GenericScheduler,
    aggregate_message_counts,
    fit_error_message,
)
from policy_scheduler.errors import PredicateError, SchedulingError
from policy_scheduler.factory import create_from_keys
from policy_scheduler.model.node import Node
from policy_scheduler.model.pod import Pod
from tests.conformance.harness import conformance_registry


def _pod(name: str, node_name: str = "") -> Pod:
    return Pod({"metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"}, "spec": {"nodeName": node_name}})


def _scheduler(nodes, predicates, priorities, pods=()) -> GenericScheduler:
    cluster = ClusterState()
    for name in nodes:
        cluster.add_node(Node({"metadata": {"name": name}}))
    for pod in pods:
        cluster.add_pod(pod)
    return create_from_keys(predicates, priorities, cluster=cluster, registry=conformance_registry())


@pytest.mark.parametrize(
    "scores, possible",
    [
        ([("machine1.1", 1), ("machine2.1", 2)], {"machine2.1"}),
        ([("machine1.1", 1), ("machine1.2", 2), ("machine1.3", 2), ("machine2.1", 2)], {"machine1.2", "machine1.3", "machine2.1"}),
        ([("machine1.1", 3), ("machine1.2", 3), ("machine2.1", 2), ("machine3.1", 1), ("machine1.3", 3)], {"machine1.1", "machine1.2", "machine1.3"}),
    ],
)
def test_select_host(scores, possible):
    """TestSelectHost: only top-scored hosts are ever chosen."""
    scheduler = GenericScheduler(ClusterState(), {}, [])
    for _ in range(10):
        assert scheduler.select_host([HostPriority(h, s) for h, s in scores]) in possible


def test_select_host_empty_list_is_an_error():
    """TestSelectHost row 4: an empty list errors."""
    with pytest.raises(SchedulingError, match="empty priorityList"):
        GenericScheduler(ClusterState(), {}, []).select_host([])


def test_select_host_round_robin_order():
    """generic_scheduler.md §5: tied hosts sort by name descending and rotate with the counter."""
    scheduler = GenericScheduler(ClusterState(), {}, [])
    scores = [HostPriority("machine1.2", 2), HostPriority("machine1.3", 2), HostPriority("machine2.1", 2), HostPriority("a", 1)]
    picks = [scheduler.select_host(scores) for _ in range(4)]
    assert picks == ["machine2.1", "machine1.3", "machine1.2", "machine2.1"]


@pytest.mark.parametrize(
    "name, predicates, priorities, nodes, pod, pods, hosts, error",
    [
        ("test 1", ["FakeFalsePredicate"], ["EqualPriority"], ["machine1", "machine2"], "2", (), None,
         "0/2 nodes are available: 2 FakePredicateError."),
        ("test 2", ["FakeTruePredicate"], ["EqualPriority"], ["machine1", "machine2"], "ignore", (), {"machine1", "machine2"}, None),
        ("test 3", ["FakeMatchesPodNamePredicate"], ["EqualPriority"], ["machine1", "machine2"], "machine2", (), {"machine2"}, None),
        ("test 4", ["FakeTruePredicate"], ["FakeNumericPriority"], ["3", "2", "1"], "ignore", (), {"3"}, None),
        ("test 5", ["FakeMatchesPodNamePredicate"], ["FakeNumericPriority"], ["3", "2", "1"], "2", (), {"2"}, None),
        ("test 7", ["FakeTruePredicate", "FakeFalsePredicate"], ["FakeNumericPriority"], ["3", "2", "1"], "2", (), None,
         "0/3 nodes are available: 3 FakePredicateError."),
        ("test 8", ["FakeHasNoPodsPredicate", "FakeMatchesPodNamePredicate"], ["FakeNumericPriority"], ["1", "2"], "2",
         (("2", "2"),), None, "0/2 nodes are available: 2 FakePredicateError."),
    ],
)
def test_generic_scheduler(name, predicates, priorities, nodes, pod, pods, hosts, error):
    """TestGenericScheduler (upstream rows; weights 1)."""
    scheduler = _scheduler(nodes, predicates, priorities, [_pod(p, n) for p, n in pods])
    if error is None:
        assert scheduler.schedule(_pod(pod)) in hosts
    else:
        with pytest.raises(FitError) as exc:
            scheduler.schedule(_pod(pod))
        assert str(exc.value) == error
        assert exc.value.num_all_nodes == len(nodes)


def test_generic_scheduler_weighted_legacy_functions():
    """TestGenericScheduler "test 6": numeric (weight 1) + reverse numeric (weight 2) picks node 1."""
    reg = conformance_registry()
    reg.priorities["FakeReverseNumericPriority"].weight = 2
    cluster = ClusterState()
    for name in ("3", "2", "1"):
        cluster.add_node(Node({"metadata": {"name": name}}))
    scheduler = create_from_keys(["FakeTruePredicate"], ["FakeNumericPriority", "FakeReverseNumericPriority"],
                                 cluster=cluster, registry=reg)
    assert scheduler.schedule(_pod("2")) == "1"


def test_find_fit_all_error():
    """TestFindFitAllError: every node fails with exactly one FakePredicateError."""
    scheduler = _scheduler(["3", "2", "1"], ["FakeTruePredicate", "FakeFalsePredicate"], [])
    filtered, failed = scheduler.find_nodes_that_fit(Pod({}), scheduler.cluster.node_list())
    assert filtered == []
    assert failed == {"1": ["FakePredicateError"], "2": ["FakePredicateError"], "3": ["FakePredicateError"]}


def test_find_fit_some_error():
    """TestFindFitSomeError: node 1 (matching the pod's name, already holding it) fits; 2 and 3 fail."""
    pod = _pod("1")
    scheduler = _scheduler(["3", "2", "1"], ["FakeTruePredicate", "FakeMatchesPodNamePredicate"], [],
                           pods=[pod.with_node_name("1")])
    filtered, failed = scheduler.find_nodes_that_fit(pod, scheduler.cluster.node_list())
    assert [n.name for n in filtered] == ["1"]
    assert failed == {"2": ["FakePredicateError"], "3": ["FakePredicateError"]}


def test_human_readable_fit_error():
    """TestHumanReadableFitError, with the exact 1.9 rendering (histogram sorted as strings)."""
    message = fit_error_message(3, {"1": ["NodeUnderMemoryPressure"], "2": ["NodeUnderDiskPressure"], "3": ["NodeUnderDiskPressure"]})
    assert message == "0/3 nodes are available: 1 NodeUnderMemoryPressure, 2 NodeUnderDiskPressure."
    assert fit_error_message(12, {str(i): ["NodeNotReady"] for i in range(10)} | {"a": ["Insufficient cpu"], "b": ["Insufficient cpu"]}) == (
        "0/12 nodes are available: 10 NodeNotReady, 2 Insufficient cpu."
    )
    assert fit_error_message(4, {}) == "0/4 nodes are available: ."


def test_no_nodes():
    scheduler = _scheduler([], ["FakeTruePredicate"], [])
    with pytest.raises(SchedulingError, match="^no nodes available to schedule pods$"):
        scheduler.schedule(_pod("p"))


def test_predicate_errors_aggregate_not_fit_error():
    """A predicate error on nodes aborts the attempt with the aggregated messages, not a FitError."""

    def broken(pod, meta, info):
        raise PredicateError("node not found")

    reg = conformance_registry()
    reg.register_fit_predicate("Broken", broken)
    cluster = ClusterState()
    for name in ("a", "b"):
        cluster.add_node(Node({"metadata": {"name": name}}))
    scheduler = create_from_keys(["Broken"], [], cluster=cluster, registry=reg)
    with pytest.raises(SchedulingError) as exc:
        scheduler.schedule(_pod("p"))
    assert not isinstance(exc.value, FitError)
    assert str(exc.value) == "node not found (repeated 2 times)"
    assert aggregate_message_counts({"b": 1, "a": 2}) == "[a (repeated 2 times), b]"


def test_single_feasible_node_skips_priorities_and_counter():
    scheduler = _scheduler(["machine1", "machine2"], ["FakeMatchesPodNamePredicate"], ["EqualPriority"])
    assert scheduler.schedule(_pod("machine1")) == "machine1"
    assert scheduler.last_node_index == 0


def test_no_priorities_round_robin():
    """No priorities and no extenders: every feasible node scores 1 and the counter rotates."""
    scheduler = _scheduler(["a", "b", "c"], ["FakeTruePredicate"], [])
    assert [scheduler.schedule(_pod(f"p{i}")) for i in range(4)] == ["c", "b", "a", "c"]


def test_evaluation_order():
    names = ["TestLabels", "CheckNodeCondition", "GeneralPredicates", "MatchInterPodAffinity", "PodFitsPorts", "Alpha"]
    assert evaluation_order(names) == [
        "CheckNodeCondition", "GeneralPredicates", "MatchInterPodAffinity", "Alpha", "PodFitsPorts", "TestLabels"
    ]


def test_explain_records_every_predicate_and_priority():
    scheduler = _scheduler(["3", "2", "1"], ["FakeTruePredicate", "FakeMatchesPodNamePredicate"], ["FakeNumericPriority"])
    explanation = scheduler.explain(_pod("2"))
    assert explanation.host == "2"
    assert explanation.error is None
    assert explanation.nodes["1"].fit is False
    assert explanation.nodes["1"].predicates["FakeMatchesPodNamePredicate"].reasons == ["FakePredicateError"]
    assert explanation.nodes["1"].predicates["FakeTruePredicate"].fit is True
    assert explanation.nodes["2"].priorities == {"FakeNumericPriority": (2, 1)}
    assert explanation.nodes["2"].total == 2
    assert explanation.nodes["3"].priorities == {}


class FakeExtender:
    """An in-process extender (the HTTP client is the daemon's); behaviour as core/extender.go."""

    def __init__(self, name, reject=(), scores=None, weight=1, fail_filter=False, fail_prioritize=False):
        self.name = name
        self.reject = set(reject)
        self.scores = scores or {}
        self.weight = weight
        self.fail_filter = fail_filter
        self.fail_prioritize = fail_prioritize

    def filter(self, pod, nodes, node_infos):
        if self.fail_filter:
            raise SchedulingError(f"Failed filter with extender at URL {self.name}, code 500")
        return [n for n in nodes if n.name not in self.reject], {n: f"{self.name} rejects {n}" for n in self.reject}

    def prioritize(self, pod, nodes):
        if self.fail_prioritize:
            raise SchedulingError("timeout")
        return [HostPriority(n.name, self.scores.get(n.name, 0)) for n in nodes], self.weight

    def is_binder(self):
        return False


def _extended(extenders, priorities=("EqualPriority",)):
    cluster = ClusterState()
    for name in ("machine1", "machine2", "machine3"):
        cluster.add_node(Node({"metadata": {"name": name}}))
    return create_from_keys(["FakeTruePredicate"], list(priorities), extenders, cluster=cluster, registry=conformance_registry())


def test_extender_filter_and_prioritize():
    """Extender filters run in order; their messages become reasons; scores add weight × score."""
    first = FakeExtender("e1", reject={"machine1"}, scores={"machine2": 1, "machine3": 5}, weight=1)
    second = FakeExtender("e2", reject={"machine3"}, scores={"machine2": 3}, weight=2)
    scheduler = _extended([first, second])
    explanation = scheduler.explain(_pod("p"))
    assert explanation.host == "machine2"  # machine3 was filtered out by e2
    assert explanation.nodes["machine2"].total == 1 + 1 * 1 + 3 * 2
    machine1 = explanation.nodes["machine1"]
    assert machine1.fit is False
    assert (machine1.extenders["e1"].fit, machine1.extenders["e1"].reasons) == (False, ["e1 rejects machine1"])
    machine2 = explanation.nodes["machine2"].extenders
    assert (machine2["e1"].score, machine2["e1"].weight, machine2["e2"].score, machine2["e2"].weight) == (1, 1, 3, 2)
    assert [(c.extender, c.verb, c.outcome) for c in explanation.extenders] == [
        ("e1", "filter", "called"), ("e2", "filter", "called"), ("e1", "prioritize", "called"),
        ("e2", "prioritize", "called"),
    ]


@pytest.mark.parametrize("vectorized", [False, True], ids=["reference", "vectorized"])
def test_extenders_on_both_paths(vectorized):
    """The vectorised path calls extenders once per verb and decides as the reference path does."""
    calls = []

    class Counting(FakeExtender):
        def filter(self, pod, nodes, node_infos):
            calls.append("filter")
            return super().filter(pod, nodes, node_infos)

        def prioritize(self, pod, nodes):
            calls.append("prioritize")
            return super().prioritize(pod, nodes)

    ext = Counting("e1", reject={"machine1"}, scores={"machine2": 1, "machine3": 5}, weight=3)
    cluster = ClusterState()
    for name in ("machine1", "machine2", "machine3"):
        cluster.add_node(Node({"metadata": {"name": name}, "status": {"allocatable": {
            "cpu": "4", "memory": "8Gi", "pods": "110"}}}))
    scheduler = create_from_keys(["PodFitsResources"], ["LeastRequestedPriority"], [ext], cluster=cluster,
                                 vectorized=vectorized)
    assert (scheduler.fast_path is not None) == vectorized
    assert scheduler.schedule(_pod("p")) == "machine3"
    assert calls == ["filter", "prioritize"]
    ext.reject = {"machine1", "machine2", "machine3"}
    with pytest.raises(FitError) as exc:
        scheduler.schedule(_pod("q"))
    assert str(exc.value) == "0/3 nodes are available: 1 e1 rejects machine1, 1 e1 rejects machine2, 1 e1 rejects machine3."


def test_ignorable_and_uninterested_extenders_are_skipped(caplog):
    class Flaky(FakeExtender):
        def is_ignorable(self):
            return True

    class Picky(FakeExtender):
        def is_interested(self, pod):
            return pod.name == "gpu"

    scheduler = _extended([Flaky("flaky", fail_filter=True), Picky("picky", reject={"machine1", "machine2"})])
    assert scheduler.schedule(_pod("p")) in {"machine1", "machine2", "machine3"}
    assert "Skipping extender flaky as it returned error Failed filter with extender at URL flaky, code 500 " \
        "and has ignorable flag set" in caplog.text
    assert scheduler.schedule(_pod("gpu")) == "machine3"


def test_extenders_rejecting_everything_give_a_fit_error():
    scheduler = _extended([FakeExtender("e1", reject={"machine1", "machine2", "machine3"})])
    with pytest.raises(FitError) as exc:
        scheduler.schedule(_pod("p"))
    assert str(exc.value) == (
        "0/3 nodes are available: 1 e1 rejects machine1, 1 e1 rejects machine2, 1 e1 rejects machine3."
    )


def test_extender_errors():
    """A filter error aborts the attempt; a prioritize error is ignored (its scores dropped)."""
    with pytest.raises(SchedulingError, match="Failed filter with extender at URL e1, code 500"):
        _extended([FakeExtender("e1", fail_filter=True)]).schedule(_pod("p"))
    scheduler = _extended([FakeExtender("bad", fail_prioritize=True), FakeExtender("good", scores={"machine1": 4})])
    assert scheduler.schedule(_pod("p")) == "machine1"


def test_extender_only_prioritizer_disables_equal_priority_fallback():
    """With an extender and no priority configs there is no EqualPriority fallback (upstream §4.1)."""
    scheduler = _extended([FakeExtender("e1", scores={"machine3": 2})], priorities=())
    assert scheduler.prioritize_nodes(_pod("p"), scheduler.cluster.node_list()) == [
        HostPriority("machine1", 0), HostPriority("machine2", 0), HostPriority("machine3", 2)
    ]


def _zero_request_spec(scale: int | None, node_name: str = "") -> dict:
    """TestZeroRequest's pods: no requests, or ``scale`` x the 100m / 200Mi defaults."""
    container: dict = {"name": "c"}
    if scale is not None:
        container["resources"] = {"requests": {"cpu": f"{100 * scale}m", "memory": str(209715200 * scale)}}
    return {"nodeName": node_name, "containers": [container]}


@pytest.mark.parametrize(
    "pod_scale, equals_25",
    [(None, True), (1, True), (3, False)],
    ids=["zero-request pod", "nonzero-request pod", "larger pod"],
)
@pytest.mark.parametrize("vectorized", [False, True], ids=["reference", "vectorized"])
def test_zero_request(pod_scale, equals_25, vectorized):
    """TestZeroRequest (all 3 rows): a zero-request pod scores like one requesting the defaults."""
    cluster = ClusterState()
    for name in ("machine1", "machine2"):
        cluster.add_node(Node({"metadata": {"name": name}, "status": {"allocatable": {
            "cpu": "1000m", "memory": str(209715200 * 10), "pods": "100"}}}))
    existing = [(3, "machine1"), (None, "machine1"), (3, "machine2"), (1, "machine2")]
    for i, (scale, node) in enumerate(existing):
        cluster.add_pod(Pod({"metadata": {"name": f"p{i}", "namespace": "default", "uid": f"u{i}"},
                             "spec": _zero_request_spec(scale, node)}))
    scheduler = create_from_keys([], ["LeastRequestedPriority", "BalancedResourceAllocation", "SelectorSpreadPriority"],
                                 cluster=cluster, vectorized=vectorized)
    pod = Pod({"metadata": {"name": "new", "namespace": "default"}, "spec": _zero_request_spec(pod_scale)})
    nodes = cluster.node_list()
    if vectorized:
        totals = list(scheduler.fast_path.prioritize(scheduler, pod, np.arange(len(nodes))))
    else:
        totals = [hp.score for hp in scheduler.prioritize_nodes(pod, nodes)]
    assert all((t == 25) == equals_25 for t in totals), totals
