"""Runs the upstream-derived conformance cases (format: README.md beside this file) through the engine.

Every case builds a cluster and a scheduler from the case's Policy exactly as a user's policy file is
built (registry → create_from_policy), then checks the filter verdicts, reasons, scores, hosts or
decoded policy the upstream test asserted.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from policy_scheduler.algorithm import HostPriority
from policy_scheduler.api import load_policy
from policy_scheduler.cache.cluster import ClusterState
from policy_scheduler.core.generic_scheduler import FitError, GenericScheduler
from policy_scheduler.errors import PredicateError
from policy_scheduler.factory import create_from_policy
from policy_scheduler.features import FeatureGates
from policy_scheduler.model.node import Node
from policy_scheduler.model.pod import Pod
from policy_scheduler.model.volumes import PersistentVolume, PersistentVolumeClaim, StorageClass
from policy_scheduler.model.workloads import LabelSelectedController, ReplicationController, Service
from policy_scheduler.registry import REGISTRY, Registry

CASES_DIR = Path(__file__).parent / "cases"


def load_cases() -> list[dict[str, Any]]:
    cases = []
    for path in sorted(CASES_DIR.glob("*/*.json")):
        cases.extend(json.loads(path.read_text()))
    return cases


# -- test doubles of generic_scheduler_test.go ---------------------------------------------------
def _fake_true(pod, meta, info):
    return True, []


def _fake_false(pod, meta, info):
    return False, ["FakePredicateError"]


def _fake_matches_pod_name(pod, meta, info):
    if info is None or info.node is None:
        raise PredicateError("node not found")
    if pod.name == info.node.name:
        return True, []
    return False, ["FakePredicateError"]


def _fake_has_no_pods(pod, meta, info):
    if not info.pods:
        return True, []
    return False, ["FakePredicateError"]


def _numeric(pod, node_infos, nodes):
    return [HostPriority(n.name, int(n.name)) for n in nodes]


def _reverse_numeric(pod, node_infos, nodes):
    scores = [int(n.name) for n in nodes]
    hi, lo = max(scores), min(scores)
    return [HostPriority(n.name, hi + lo - s) for n, s in zip(nodes, scores)]


def conformance_registry() -> Registry:
    reg = REGISTRY.copy()
    reg.register_fit_predicate("FakeTruePredicate", _fake_true)
    reg.register_fit_predicate("FakeFalsePredicate", _fake_false)
    reg.register_fit_predicate("FakeMatchesPodNamePredicate", _fake_matches_pod_name)
    reg.register_fit_predicate("FakeHasNoPodsPredicate", _fake_has_no_pods)
    reg.register_priority_function("FakeNumericPriority", _numeric, 1)
    reg.register_priority_function("FakeReverseNumericPriority", _reverse_numeric, 1)
    return reg


# -- building --------------------------------------------------------------------------------------
def build_cluster(spec: dict[str, Any]) -> tuple[ClusterState, list[Node]]:
    cluster = ClusterState()
    nodes = [Node(n) for n in spec.get("nodes") or ()]
    for node in nodes:
        cluster.add_node(node)
    for i, raw in enumerate(spec.get("pods") or ()):
        # Upstream left many existing pods unnamed or identical: give each a unique identity.
        raw = json.loads(json.dumps(raw))
        meta = raw.setdefault("metadata", {})
        meta.setdefault("name", f"existing-{i}")
        meta["uid"] = meta.get("uid") or f"conformance-uid-{i}"
        cluster.add_pod(Pod(raw))
    for raw in spec.get("services") or ():
        cluster.add_service(Service.from_dict(raw))
    for raw in spec.get("replicationControllers") or ():
        cluster.add_replication_controller(ReplicationController.from_dict(raw))
    for raw in spec.get("replicaSets") or ():
        cluster.add_replica_set(LabelSelectedController.from_dict("ReplicaSet", raw))
    for raw in spec.get("statefulSets") or ():
        cluster.add_stateful_set(LabelSelectedController.from_dict("StatefulSet", raw))
    for raw in spec.get("persistentVolumes") or ():
        cluster.add_persistent_volume(PersistentVolume.from_dict(raw))
    for raw in spec.get("persistentVolumeClaims") or ():
        cluster.add_persistent_volume_claim(PersistentVolumeClaim.from_dict(raw))
    for raw in spec.get("storageClasses") or ():
        cluster.add_storage_class(StorageClass.from_dict(raw))
    return cluster, nodes


def build_scheduler(case: dict[str, Any], cluster: ClusterState) -> GenericScheduler:
    policy = load_policy(json.dumps(case["policy"]), source=case["id"])
    return create_from_policy(
        policy,
        cluster=cluster,
        registry=conformance_registry(),
        feature_gates=FeatureGates(case.get("featureGates")),
    )


# -- checking --------------------------------------------------------------------------------------
def run_case(case: dict[str, Any]) -> None:
    kind = case["kind"]
    if kind == "policy":
        check_policy_case(case)
        return
    cluster, nodes = build_cluster(case["cluster"])
    scheduler = build_scheduler(case, cluster)
    pod = Pod(case["pod"])
    if kind == "predicate":
        check_predicate_case(case, scheduler, cluster, pod)
    elif kind == "priority":
        check_priority_case(case, scheduler, nodes, pod)
    elif kind == "schedule":
        check_schedule_case(case, scheduler, nodes, pod)
    else:
        raise AssertionError(f"unknown case kind {kind}")


def _evaluate(scheduler: GenericScheduler, names: list[str], pod: Pod, meta: Any, info) -> tuple[list, bool]:
    """Run the listed predicates on one node; return (reasons, errored).

    Upstream's predicate tables that do not assert errors ignore the error a predicate returns next to
    its reasons (TestInterPodAffinity); the reasons it returned are what they check.
    """
    reasons: list = []
    for name in names:
        try:
            fit, rs = scheduler.predicates[name](pod, meta, info)
        except PredicateError as e:
            if e.reasons:
                reasons.extend(e.reasons)
                continue
            return reasons, True
        if not fit:
            reasons.extend(rs)
    return reasons, False


def check_predicate_case(case: dict, scheduler: GenericScheduler, cluster: ClusterState, pod: Pod) -> None:
    expect = case["expect"]
    names = [p["name"] for p in case["policy"]["predicates"]]
    full_meta = scheduler.predicate_metadata_producer(pod, cluster.node_infos)
    # Upstream's predicates work with and without precomputed metadata; both must agree.
    for meta in (full_meta, None):
        for node_name, want_fit in expect["fit"].items():
            info = cluster.node_infos.get(node_name)
            reasons, errored = _evaluate(scheduler, names, pod, meta, info)
            if "errors" in expect:
                assert errored == expect["errors"][node_name], f"{node_name}: error expected={expect['errors'][node_name]}"
                if errored:
                    continue
            else:
                assert not errored, f"{node_name}: unexpected predicate error"
            got_fit = not reasons
            assert got_fit == want_fit, f"{node_name}: fit={got_fit} want {want_fit}; reasons {reasons} (meta={meta is not None})"
            if not want_fit and node_name in expect.get("reasons", {}):
                want = expect["reasons"][node_name]
                got = [str(r) for r in reasons]
                if len(names) == 1:
                    assert got == want, f"{node_name}: reasons {got} want {want}"
                else:
                    assert Counter(got) == Counter(want), f"{node_name}: reasons {got} want {want}"
            for detail in expect.get("reasonDetails", {}).get(node_name, ()):
                match = [r for r in reasons if str(r) == detail["reason"]]
                assert match, f"{node_name}: no reason {detail['reason']}"
                r = match[0]
                assert (r.resource_name, r.requested, r.used, r.capacity) == (
                    detail["resource"], detail["requested"], detail["used"], detail["capacity"]
                ), f"{node_name}: {r.error()} want {detail}"


def check_priority_case(case: dict, scheduler: GenericScheduler, nodes: list[Node], pod: Pod) -> None:
    expect = case["expect"]
    totals = {hp.host: hp.score for hp in scheduler.prioritize_nodes(pod, nodes)}
    if "scores" in expect:
        assert totals == expect["scores"]
    if "totalScores" in expect:
        assert totals == expect["totalScores"]
    for node_name, not_value in expect.get("totalScoresNot", {}).items():
        assert totals[node_name] != not_value, f"{node_name}: total {totals[node_name]} must differ from {not_value}"


def check_schedule_case(case: dict, scheduler: GenericScheduler, nodes: list[Node], pod: Pod) -> None:
    expect = case["expect"]
    if "hosts" in expect:
        assert scheduler.schedule(pod) in expect["hosts"]
        return
    if "error" in expect:
        try:
            host = scheduler.schedule(pod)
        except FitError as e:
            assert str(e) == expect["error"]
            assert e.num_all_nodes == expect["numAllNodes"]
            assert {k: Counter(v) for k, v in e.failed_predicates.items()} == {
                k: Counter(v) for k, v in expect["failedPredicates"].items()
            }
            return
        raise AssertionError(f"scheduled onto {host}, want FitError {expect['error']}")
    filtered, failed = scheduler.find_nodes_that_fit(pod, scheduler.cluster.node_list())
    fit_names = {n.name for n in filtered}
    for node_name, want in expect["fit"].items():
        assert (node_name in fit_names) == want, node_name
    assert {k: Counter(str(r) for r in v) for k, v in failed.items()} == {
        k: Counter(v) for k, v in expect["failedPredicates"].items()
    }


def check_policy_case(case: dict) -> None:
    expect = case["expect"]
    if case.get("policyText") is None:
        provider = REGISTRY.get_algorithm_provider(case["algorithmProvider"])
        if "predicates" in expect:
            assert provider.fit_predicate_keys == set(expect["predicates"])
        if "priorityNames" in expect:
            assert provider.priority_function_keys == set(expect["priorityNames"])
        return
    policy = load_policy(case["policyText"], source=case["id"])
    assert [p.name for p in policy.predicates or ()] == expect["predicates"]
    assert {p.name: p.weight for p in policy.priorities or ()} == expect["priorities"]
    want = expect["expectedPolicy"]
    assert [p.to_dict() for p in policy.predicates or ()] == want["predicates"]
    assert [p.to_dict() for p in policy.priorities or ()] == want["priorities"]
    # A scheduler can be built from it.
    create_from_policy(policy, cluster=ClusterState())
