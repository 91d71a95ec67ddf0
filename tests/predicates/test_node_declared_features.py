"""NodeDeclaredFeatures (``predicates/node_declared_features.py``): upstream 1.36.3's
``nodedeclaredfeatures_test.go`` rows (TestFilter, TestPreFilter, TestEnqueueExtensionsNodeUpdate), then the
predicate in the engine: applied under the cluster's rules to every pod that requires a feature whatever the
Policy names, 1.9's histogram, ``explain``, preemption ("would not help"), the vectorised form against the
reference, the daemon's heartbeat filter, and a malformed ``status.declaredFeatures`` on the command line.
``tests/kube/test_daemon_node_declared_features.py`` holds the same decisions beside upstream's 1.36
kube-scheduler."""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from policy_scheduler.algorithm_source import AlgorithmSource, from_provider
from policy_scheduler.api.loader import load_policy
from policy_scheduler.cache.node_info import NodeInfo
from policy_scheduler.cache.scheduler_cache import SchedulerCache
from policy_scheduler.cli import main
from policy_scheduler.errors import PredicateError
from policy_scheduler.features import FeatureGates, Rules
from policy_scheduler.model.node import Node
from policy_scheduler.model.node_features import (
    RESTART_ALL_CONTAINERS,
    USER_NAMESPACES_HOST_NETWORK,
    Feature,
    Version,
    infer_for_pod_scheduling,
)
from policy_scheduler.model.pod import Pod
from policy_scheduler.offline.priority import explain_with_priority
from policy_scheduler.offline.simulate import explain_pod, simulate
from policy_scheduler.offline.snapshot import Snapshot, load_objects
from policy_scheduler.predicates.node_declared_features import (
    ERR_REASON_UNSATISFIED_REQUIREMENTS,
    NAME,
    NodeDeclaredFeaturesChecker,
)

FEATURE_A, FEATURE_B, FEATURE_C = "FeatureA", "FeatureB", "FeatureC"


def node_obj(name: str, declared: list[str] | None = None, cpu: str = "4") -> dict[str, Any]:
    status: dict[str, Any] = {"allocatable": {"cpu": cpu, "memory": "8Gi", "pods": "110"},
                              "conditions": [{"type": "Ready", "status": "True"}]}
    if declared is not None:
        status["declaredFeatures"] = declared
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
            "status": status}


def info(name: str = "node-1", declared: list[str] | None = None) -> NodeInfo:
    i = NodeInfo()
    i.set_node(Node(node_obj(name, declared)))
    return i


def plain_pod(name: str = "test-pod") -> Pod:
    return Pod({"metadata": {"name": name, "namespace": "default"},
                "spec": {"containers": [{"name": "c", "image": "pause"}]}})


# -- nodedeclaredfeatures_test.go TestFilter (the pod's requirements as PreFilter left them) ---------------
@pytest.mark.parametrize("node_features, reqs, fits", [
    ([FEATURE_A, FEATURE_B], {FEATURE_A}, True),  # node matches requirements
    ([FEATURE_B], {FEATURE_A}, False),  # node does not match requirements
    ([FEATURE_A, FEATURE_B, FEATURE_C], {FEATURE_A, FEATURE_C}, True),  # pod requires a subset
    (None, {FEATURE_A}, False),  # node has no declared features
    ([FEATURE_A], {FEATURE_A, FEATURE_B}, False),  # some but not all
    ([FEATURE_A], set(), True),  # no requirements: PreFilter skips the plugin
])
def test_filter(node_features, reqs, fits):
    checker = NodeDeclaredFeaturesChecker(lambda pod: frozenset(reqs))
    expected = (True, []) if fits else (False, [ERR_REASON_UNSATISFIED_REQUIREMENTS])
    assert checker(plain_pod(), None, info(declared=node_features)) == expected


def test_filter_without_a_node():
    """Upstream's NodeInfo without a node has a zero-size feature set: IsSubset errs. A pod without
    requirements never asks."""
    bare = NodeInfo()
    with pytest.raises(PredicateError, match="node not found"):
        NodeDeclaredFeaturesChecker(lambda pod: frozenset({FEATURE_A}))(plain_pod(), None, bare)
    assert NodeDeclaredFeaturesChecker(lambda pod: frozenset())(plain_pod(), None, bare) == (True, [])


def mock(name: str, infer: bool, max_version: str = "") -> Feature:
    """``createMockFeature``."""
    return Feature(name, lambda spec: infer, Version.parse(max_version) if max_version else None)


# -- nodedeclaredfeatures_test.go TestPreFilter: which pods the plugin applies to (Skip: it does not) -------
@pytest.mark.parametrize("features, version, reqs", [
    ([mock("TestFeature1", True), mock("TestFeature2", False)], "1.35.0", {"TestFeature1"}),
    ([mock("TestFeature1", True, "1.38.0"), mock("TestFeature2", True, "1.38.0")], "1.35.0",
     {"TestFeature1", "TestFeature2"}),
    ([mock("TestFeature1", False), mock("TestFeature2", False)], "1.35.0", set()),  # Skip
    ([mock("TestFeature1", True, "1.33.0"), mock("TestFeature2", False)], "1.34.0", set()),  # past MaxVersion: Skip
])
def test_pre_filter(features, version, reqs):
    def infer(pod: Pod) -> frozenset[str]:
        return infer_for_pod_scheduling(pod.raw["spec"], Version.parse(version), features)

    checker = NodeDeclaredFeaturesChecker(infer)
    assert checker.applies(plain_pod()) is bool(reqs)
    assert checker.requirements(plain_pod()) == reqs


# -- TestEnqueueExtensionsNodeUpdate: a change of the declared features is no heartbeat ---------------------
@pytest.mark.parametrize("old, new, requeue", [
    (None, [FEATURE_A], True),  # node add with a feature
    ([], [FEATURE_A], True),  # features added (the old node had none)
    (None, None, False),
    ([FEATURE_A], [FEATURE_A], False),  # features unchanged
    ([FEATURE_A, FEATURE_B], [FEATURE_A], True),  # one removed
])
def test_node_update_with_other_declared_features_is_not_a_heartbeat(old, new, requeue):
    cache = SchedulerCache()
    before = node_obj("node-1", old)
    cache.add_node(before, Node(before))
    after = node_obj("node-1", new)
    after["status"]["conditions"][0]["lastHeartbeatTime"] = "2026-01-01T00:00:00Z"  # heartbeat churn
    assert cache.node_changed(after) is requeue


# -- the engine ------------------------------------------------------------------------------------------
def pod_obj(name: str, *, restart_all: bool = False, host_network_userns: bool = False, priority: int | None = None,
            node_name: str = "", cpu: str = "100m") -> dict[str, Any]:
    container: dict[str, Any] = {"name": "c", "image": "pause", "resources": {"requests": {"cpu": cpu}}}
    if restart_all:
        container["restartPolicy"] = "Never"
        container["restartPolicyRules"] = [{"action": "RestartAllContainers",
                                            "exitCodes": {"operator": "In", "values": [42]}}]
    spec: dict[str, Any] = {"containers": [container]}
    if host_network_userns:
        spec.update(hostNetwork=True, hostUsers=False)
    if priority is not None:
        spec["priority"] = priority
    if node_name:
        spec["nodeName"] = node_name
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"},
            "spec": spec, "status": {"phase": "Running" if node_name else "Pending"}}


def snapshot(objects: list[dict[str, Any]], rules: Rules = Rules.CLUSTER) -> Snapshot:
    return load_objects(objects, "test").under(rules)


def build(rules: Rules = Rules.CLUSTER, source: AlgorithmSource | None = None, vectorized: bool = True, **gates: bool):
    source = source or from_provider("DefaultProvider")
    return lambda cluster: source.build(cluster, feature_gates=FeatureGates(gates, rules), vectorized=vectorized)


def outcomes(objects: list[dict[str, Any]], rules: Rules = Rules.CLUSTER, **kw: Any) -> dict[str, str]:
    result = simulate(snapshot(objects, rules), build(rules, **kw))
    return {p.pod.name: p.node or f"error: {p.error}" for p in result.placements}


# Alphabetically first, so that a scheduler that ignores the features would pick it on a tie.
WITHOUT, WITH = node_obj("a-plain"), node_obj("b-declares", [RESTART_ALL_CONTAINERS, USER_NAMESPACES_HOST_NETWORK])


@pytest.mark.parametrize("vectorized", [True, False])
@pytest.mark.parametrize("kind", ["restart_all", "host_network_userns"])
def test_a_pod_requiring_a_feature_goes_to_the_node_declaring_it(kind, vectorized):
    pods = [pod_obj(f"p{i}", **{kind: True}) for i in range(3)]
    assert outcomes([WITHOUT, WITH, *pods], vectorized=vectorized) == {f"p{i}": "b-declares" for i in range(3)}
    # a pod requiring nothing may go anywhere (the least requested node: the empty one)
    got = outcomes([WITHOUT, WITH, pod_obj("busy", node_name="b-declares", cpu="2"), pod_obj("free")],
                   vectorized=vectorized)
    assert got == {"free": "a-plain"}


@pytest.mark.parametrize("vectorized", [True, False])
def test_no_node_declares_it_1_9s_histogram(vectorized):
    got = outcomes([WITHOUT, node_obj("c-other", ["ExtendWebSocketsToKubelet"]), WITH,
                    pod_obj("p", restart_all=True, cpu="5")], vectorized=vectorized)
    # 1.9 runs every predicate on every node: all three lack the cpu, two the feature (sorted as 1.9 sorts)
    assert got == {"p": f"error: 0/3 nodes are available: 2 {ERR_REASON_UNSATISFIED_REQUIREMENTS}, 3 Insufficient cpu."}
    got = outcomes([WITHOUT, pod_obj("p", restart_all=True)], vectorized=vectorized)
    assert got == {"p": f"error: 0/1 nodes are available: 1 {ERR_REASON_UNSATISFIED_REQUIREMENTS}."}


def test_under_the_1_9_rules_nothing_changes():
    got = outcomes([WITHOUT, WITH, pod_obj("p", restart_all=True)], Rules.V1_9)
    assert got["p"] in ("a-plain", "b-declares")
    assert outcomes([WITHOUT, pod_obj("p", restart_all=True)], Rules.V1_9) == {"p": "a-plain"}


POLICY = {"kind": "Policy", "apiVersion": "v1", "predicates": [{"name": "PodFitsResources"}],
          "priorities": [{"name": "LeastRequestedPriority", "weight": 1}]}


@pytest.mark.parametrize("named", [False, True])
def test_a_policy_need_not_name_it_and_may(named):
    policy = dict(POLICY, predicates=[*POLICY["predicates"], *([{"name": NAME}] if named else [])])
    source = AlgorithmSource("policy", policy=load_policy(json.dumps(policy)))
    s = build(source=source)(snapshot([WITHOUT, WITH]).cluster_state())
    assert (NAME in s.predicates) is named
    assert any(x.predicate and x.predicate[0] == NAME for x in s.pod_scoped) is not named
    pods = [WITHOUT, WITH, pod_obj("p", restart_all=True)]
    assert simulate(snapshot(pods), build(source=source)).placements[0].node == "b-declares"
    # under the 1.9 rules a Policy naming it gets a predicate that requires nothing of anyone
    assert simulate(snapshot([WITHOUT, pod_obj("p", restart_all=True)], Rules.V1_9),
                    build(Rules.V1_9, source=source)).placements[0].node == "a-plain"


def test_explain_names_the_predicate_and_its_reason():
    snap = snapshot([WITHOUT, WITH, pod_obj("p", restart_all=True)])
    explanation = explain_pod(snap, next(p for p in snap.pods if p.name == "p"), build())
    verdicts = {n: e.predicates[NAME] for n, e in explanation.nodes.items()}
    assert (verdicts["a-plain"].fit, verdicts["a-plain"].reasons) == (False, [ERR_REASON_UNSATISFIED_REQUIREMENTS])
    assert (verdicts["b-declares"].fit, verdicts["b-declares"].reasons) == (True, [])
    assert explanation.host == "b-declares"
    plain = snapshot([WITHOUT, WITH, pod_obj("q")])
    explanation = explain_pod(plain, next(p for p in plain.pods if p.name == "q"), build())
    assert all(NAME not in e.predicates for e in explanation.nodes.values())  # not applied to this pod


@pytest.mark.parametrize("vectorized", [True, False])
def test_preemption_would_not_help_on_a_node_without_the_feature(vectorized):
    """UnschedulableAndUnresolvable upstream: nodesWherePreemptionMightHelp leaves the node out, so the
    low-priority pod filling it is never a victim. The node that declares the feature is preempted on."""
    low = [pod_obj("low-a", node_name="a-plain", cpu="4", priority=0)]
    objects = [WITHOUT, *low, pod_obj("urgent", restart_all=True, cpu="4", priority=1000)]
    snap = snapshot(objects)
    explanation = explain_with_priority(snap, next(p for p in snap.pods if p.name == "urgent"),
                                        build(vectorized=vectorized, PodPriority=True))
    assert explanation.preemption is not None and explanation.preemption.node is None
    assert explanation.preemption.message == "preemption would not help on any node"
    outcome = explanation.preemption.nodes["a-plain"]
    assert (outcome.outcome, outcome.reasons) == ("preemption would not help", [ERR_REASON_UNSATISFIED_REQUIREMENTS])
    with_declaring = [*objects, WITH, pod_obj("low-b", node_name="b-declares", cpu="4", priority=0)]
    result = simulate(snapshot(with_declaring), build(vectorized=vectorized, PodPriority=True), pod_priority=True)
    (preemption,) = result.pod_priority.preemptions
    assert (preemption.node, [v.pod.name for v in preemption.victims]) == ("b-declares", ["low-b"])


# -- bad input on the command line -----------------------------------------------------------------------
@pytest.mark.parametrize("declared, message", [
    (["MyFeature", "AnotherFeature"],
     'status.declaredFeatures[1]: Invalid value: "AnotherFeature": list must be sorted alphabetically'),
    (["RestartAllContainersOnContainerExits", "RestartAllContainersOnContainerExits"],
     'status.declaredFeatures[1]: Duplicate value: "RestartAllContainersOnContainerExits"'),
    (["restart-all"], 'status.declaredFeatures[0]: Invalid value: "restart-all": invalid feature name '
                      '"restart-all": must start with an UpperCamelCase segment'),
])
@pytest.mark.parametrize("validate", [True, False])
def test_cli_malformed_declared_features_is_one_line_exit_2(tmp_path, declared, message, validate):
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump_all([node_obj("n", declared), pod_obj("p", restart_all=True)]))
    result = CliRunner().invoke(main, ["simulate", "--cluster", str(path), *([] if validate else ["--no-validate"])])
    assert result.exit_code == 2, result.output
    assert result.output.startswith(f"error: {path}: document 0: Node n: {message}")
    assert result.output.count("\n") == 1 and "Traceback" not in result.output
